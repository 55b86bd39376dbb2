// Package apicontract checks HTTP responses against the OpenAPI document of
// the public API (gateway/openapi.yaml), matching paths case-insensitively
// as the gateway does.
package apicontract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// ProblemContentType is the media type of every error body.
const ProblemContentType = "application/problem+json"

// Contract is the OpenAPI document of the public API, prepared for
// validating responses to requests whose paths may be written in any case.
type Contract struct {
	doc    *openapi3.T
	router routers.Router
	opts   *openapi3filter.Options
}

// Load loads and validates the OpenAPI document at path.
func Load(path string) (*Contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("%s is not a valid OpenAPI document: %w", path, err)
	}
	// The gateway matches paths case-insensitively, so lookups go through a
	// copy whose literal path segments are lower-cased (parameters such as
	// {id} keep their names) and are made with the request path lower-cased.
	// The servers are dropped so that any test host and port match.
	lookup := *doc
	lookup.Servers = nil
	lookup.Paths = openapi3.NewPaths()
	for p, item := range doc.Paths.Map() {
		key := lowerLiteralSegments(p)
		if lookup.Paths.Value(key) != nil {
			return nil, fmt.Errorf("%s: paths %s and another differ only in case", path, p)
		}
		lookup.Paths.Set(key, item)
	}
	router, err := gorillamux.NewRouter(&lookup)
	if err != nil {
		return nil, err
	}
	return &Contract{
		doc:    doc,
		router: router,
		opts: &openapi3filter.Options{
			IncludeResponseStatus: true, // an undocumented status is an error
			MultiError:            true,
			AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
			SchemaValidationOptions: []openapi3.SchemaValidationOption{
				openapi3.WithStringFormatValidator("email", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForEmail)),
			},
		},
	}, nil
}

func lowerLiteralSegments(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, "{") {
			segs[i] = strings.ToLower(s)
		}
	}
	return strings.Join(segs, "/")
}

// ValidateResponse checks a response against the operation documented for
// the request's method and path: the status must be documented, the
// headers and the body must match; a status documented without content
// must come without a body. A request to an undocumented route is an error.
func (c *Contract) ValidateResponse(req *http.Request, status int, header http.Header, body []byte) error {
	lookupReq := req.Clone(context.Background())
	lookupReq.URL.Path = strings.ToLower(req.URL.Path)
	lookupReq.URL.RawPath = ""
	route, params, err := c.router.FindRoute(lookupReq)
	if err != nil {
		return fmt.Errorf("%s %s is not documented in openapi.yaml: %w", req.Method, req.URL.Path, err)
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    lookupReq,
			PathParams: params,
			Route:      route,
			Options:    c.opts,
		},
		Status:  status,
		Header:  header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: c.opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		return fmt.Errorf("%s %s -> %d does not match openapi.yaml: %w", req.Method, req.URL.Path, status, err)
	}
	if ref := route.Operation.Responses.Status(status); ref != nil && ref.Value != nil &&
		len(ref.Value.Content) == 0 && len(body) > 0 && req.Method != http.MethodHead {
		return fmt.Errorf("%s %s -> %d is documented without a body but has %d bytes: %q",
			req.Method, req.URL.Path, status, len(body), truncate(body))
	}
	if status >= 400 {
		// Errors are problems whatever else the operation documents.
		if err := c.ValidateProblem(status, header, body); err != nil {
			return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
		}
	}
	return nil
}

// ValidateProblem checks that a response is an application/problem+json
// body matching the Problem schema, with the HTTP status in its status
// field. It is for responses to requests that the document cannot describe
// (any path or method over plain HTTP).
func (c *Contract) ValidateProblem(status int, header http.Header, body []byte) error {
	mt, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil || mt != ProblemContentType {
		return fmt.Errorf("status %d with Content-Type %q, want %s: %q", status, header.Get("Content-Type"), ProblemContentType, truncate(body))
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("problem body is not JSON: %w: %q", err, truncate(body))
	}
	schema := c.doc.Components.Schemas["Problem"]
	if schema == nil || schema.Value == nil {
		return errors.New("openapi.yaml has no Problem schema")
	}
	if err := schema.Value.VisitJSON(v, openapi3.MultiErrors(), openapi3.VisitAsResponse()); err != nil {
		return fmt.Errorf("problem body does not match the Problem schema: %w: %q", err, truncate(body))
	}
	if got, _ := v.(map[string]any)["status"].(float64); int(got) != status {
		return fmt.Errorf("problem status field %v differs from HTTP status %d", got, status)
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 500 {
		return string(b[:500]) + "..."
	}
	return string(b)
}

// Operations lists the documented operations as "METHOD /path/{param}" whose
// path starts, ignoring case, with one of prefixes (all when none given), so
// a service test can compare them with the routes it really serves.
func (c *Contract) Operations(prefixes ...string) map[string]bool {
	out := map[string]bool{}
	for p, item := range c.doc.Paths.Map() {
		if !hasPrefixFold(p, prefixes) {
			continue
		}
		for m := range item.Operations() {
			out[m+" "+p] = true
		}
	}
	return out
}

func hasPrefixFold(p string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, pre := range prefixes {
		if len(p) >= len(pre) && strings.EqualFold(p[:len(pre)], pre) && (len(p) == len(pre) || p[len(pre)] == '/') {
			return true
		}
	}
	return false
}

// CompareRoutes reports the served routes ("METHOD /path/{param}") that the
// document lacks and the documented operations under prefixes that are not
// served; both empty means the service and its contract agree.
func (c *Contract) CompareRoutes(served map[string]bool, prefixes ...string) (undocumented, unserved []string) {
	documented := c.Operations(prefixes...)
	for r := range served {
		if !documented[r] {
			undocumented = append(undocumented, r)
		}
	}
	for r := range documented {
		if !served[r] {
			unserved = append(unserved, r)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unserved)
	return undocumented, unserved
}
