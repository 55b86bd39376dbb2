package httpapi

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/paging"
)

// customer returns the caller's customer id (the tenant every call is
// scoped to).
func customer(c *gin.Context) (int64, error) {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return 0, err
	}
	return p.CustomerID, nil
}

// query reads query parameters by name ignoring the name's case (the spec
// writes topicId, clients write topicID), trimming the value.
type query struct {
	values url.Values
	v      apperr.Validation
}

func newQuery(c *gin.Context) *query { return &query{values: c.Request.URL.Query()} }

func (q *query) get(name string) string {
	if vs, ok := q.values[name]; ok && len(vs) > 0 {
		return strings.TrimSpace(vs[0])
	}
	for k, vs := range q.values {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return strings.TrimSpace(vs[0])
		}
	}
	return ""
}

// page parses pageNumber and pageSize; problems are reported by err.
func (q *query) page() paging.Page {
	p, err := paging.Parse(q.get)
	q.merge(err)
	return p
}

// merge records the field problems of a validation error.
func (q *query) merge(err error) {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		for k, m := range ae.Fields {
			q.v.Add(k, m)
		}
		if len(ae.Fields) == 0 {
			q.v.Add("query", ae.Message)
		}
	}
}

// id reads an optional positive integer filter.
func (q *query) id(name string) *int64 {
	raw := q.get(name)
	if raw == "" {
		return nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n <= 0 {
		q.v.Add(name, "must be a positive integer")
		return nil
	}
	return &n
}

// boolean reads an optional true/false filter (case-insensitive).
func (q *query) boolean(name string) *bool {
	raw := q.get(name)
	if raw == "" {
		return nil
	}
	var b bool
	switch strings.ToLower(raw) {
	case "true":
		b = true
	case "false":
	default:
		q.v.Add(name, "must be true or false")
		return nil
	}
	return &b
}

// text reads an optional string filter of at most max characters.
func (q *query) text(name string, max int) string {
	raw := q.get(name)
	if !utf8.ValidString(raw) || utf8.RuneCountInString(raw) > max || strings.ContainsRune(raw, 0) {
		q.v.Add(name, "must be at most "+strconv.Itoa(max)+" characters without control characters")
		return ""
	}
	return raw
}

// err is the 400 for every invalid filter at once.
func (q *query) err() error {
	if q.v.Empty() {
		return nil
	}
	e := q.v.Err().(*apperr.Error)
	e.Message = "the request has invalid query parameters"
	return e
}
