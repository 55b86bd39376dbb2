package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"

	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/topics/internal/httpapi"
)

// contract is openapi-fragment.yaml completed with the shared gateway parts
// it refers to; every response of the HTTP test is checked against it, so
// the fragment the gateway merges cannot drift from the service.
type contract struct {
	doc    *openapi3.T
	router routers.Router
	opts   *openapi3filter.Options
}

var (
	contractOnce sync.Once
	contractDoc  *contract
	contractErr  error
)

func loadContract(t *testing.T) *contract {
	t.Helper()
	contractOnce.Do(func() { contractDoc, contractErr = buildContract() })
	if contractErr != nil {
		t.Fatal(contractErr)
	}
	return contractDoc
}

func readYAML(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func buildContract() (*contract, error) {
	frag, err := readYAML("../../openapi-fragment.yaml")
	if err != nil {
		return nil, err
	}
	shared, err := readYAML("testdata/shared-components.yaml")
	if err != nil {
		return nil, err
	}
	comps := map[string]any{}
	for _, src := range []map[string]any{shared, frag} {
		c, _ := src["components"].(map[string]any)
		for section, entries := range c {
			dst, _ := comps[section].(map[string]any)
			if dst == nil {
				dst = map[string]any{}
				comps[section] = dst
			}
			for name, v := range entries.(map[string]any) {
				if _, dup := dst[name]; dup {
					return nil, fmt.Errorf("components.%s.%s is defined twice", section, name)
				}
				dst[name] = v
			}
		}
	}
	full := map[string]any{
		"openapi":    "3.0.3",
		"info":       map[string]any{"title": "topics fragment", "version": "test"},
		"tags":       frag["tags"],
		"paths":      frag["paths"],
		"components": comps,
	}
	data, err := json.Marshal(full)
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load fragment: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the fragment is not valid OpenAPI: %w", err)
	}
	// Paths are matched ignoring case, as the service and gateway do.
	lookup := *doc
	lookup.Paths = openapi3.NewPaths()
	for p, item := range doc.Paths.Map() {
		lookup.Paths.Set(lowerLiteral(p), item)
	}
	router, err := gorillamux.NewRouter(&lookup)
	if err != nil {
		return nil, err
	}
	return &contract{doc: doc, router: router, opts: &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	}}, nil
}

func lowerLiteral(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, "{") {
			segs[i] = strings.ToLower(s)
		}
	}
	return strings.Join(segs, "/")
}

// validate checks one response against the documented operation: status
// documented, body and headers matching, no body where none is documented.
func (c *contract) validate(req *http.Request, status int, header http.Header, body []byte) error {
	lr := req.Clone(context.Background())
	lr.URL.Path = strings.ToLower(req.URL.Path)
	lr.URL.RawPath = ""
	route, params, err := c.router.FindRoute(lr)
	if err != nil {
		return fmt.Errorf("%s %s is not in the fragment: %w", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: lr, PathParams: params, Route: route, Options: c.opts},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                c.opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s -> %d does not match the fragment: %w", req.Method, req.URL.Path, status, err)
	}
	if ref := route.Operation.Responses.Status(status); ref != nil && ref.Value != nil && len(ref.Value.Content) == 0 && len(body) > 0 {
		return fmt.Errorf("%s %s -> %d is documented without a body but has %q", req.Method, req.URL.Path, status, body)
	}
	return nil
}

func TestContractCoversEveryRoute(t *testing.T) {
	c := loadContract(t)
	documented := map[string]bool{}
	for p, item := range c.doc.Paths.Map() {
		for m := range item.Operations() {
			documented[m+" "+p] = true
		}
	}
	srv, err := httpserver.New(httpserver.Options{Service: "topics", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	httpapi.New(nil, srv).Routes(srv.Engine, func(*gin.Context) {})
	served := map[string]bool{}
	for _, r := range srv.Engine.Routes() {
		switch r.Path {
		case "/healthz", "/readyz", "/metrics":
			continue
		}
		key := r.Method + " " + strings.ReplaceAll(r.Path, ":id", "{id}")
		served[key] = true
		if !documented[key] {
			t.Errorf("route %s is served but not in the fragment", key)
		}
	}
	for r := range documented {
		if !served[r] {
			t.Errorf("route %s is in the fragment but not served", r)
		}
	}
	if len(served) != 32 {
		t.Errorf("%d routes served", len(served))
	}
}
