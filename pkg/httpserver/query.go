package httpserver

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
)

// Query reads the query parameters of one request, the same way on every
// route of every service:
//
//   - names match case-insensitively (the spec writes topicId, clients write
//     topicID or pagesize);
//   - a parameter given more than once, in any spelling, is a 400: which of
//     the values was meant cannot be guessed;
//   - values are taken as written, never trimmed; an empty value is an
//     absent parameter;
//   - integers (pageNumber, pageSize, ids) have paging.ParseInt's syntax:
//     " 10", "+5" and "010" are refused;
//   - every problem names its parameter, and all of them are reported at
//     once by Err.
//
// Unknown parameter names are ignored.
type Query struct {
	values map[string][]string // by lower-case name
	v      apperr.Validation
}

// NewQuery reads the request's query string. Its syntax has been checked by
// the server's middleware (a malformed string never reaches a handler).
func NewQuery(c *gin.Context) *Query { return ParseQuery(c.Request.URL.Query()) }

// ParseQuery wraps already decoded values.
func ParseQuery(values url.Values) *Query {
	q := &Query{values: make(map[string][]string, len(values))}
	for k, vs := range values {
		lk := strings.ToLower(k)
		q.values[lk] = append(q.values[lk], vs...)
	}
	return q
}

// Get returns the value of name as written, "" when absent or empty.
func (q *Query) Get(name string) string {
	vs := q.values[strings.ToLower(name)]
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	}
	q.v.Add(name, "must be given at most once")
	return ""
}

// Page parses pageNumber and pageSize.
func (q *Query) Page() paging.Page {
	p, err := paging.Parse(q.Get)
	q.Merge(err)
	return p
}

// ID reads an optional positive integer (an id filter).
func (q *Query) ID(name string) *int64 {
	raw := q.Get(name)
	if raw == "" {
		return nil
	}
	n, ok := paging.ParseInt(raw)
	if !ok || n <= 0 {
		q.v.Add(name, "must be a positive integer")
		return nil
	}
	return &n
}

// Bool reads an optional true/false (in any case).
func (q *Query) Bool(name string) *bool {
	raw := q.Get(name)
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

// Text reads an optional string of at most max characters.
func (q *Query) Text(name string, max int) string {
	raw := q.Get(name)
	if !utf8.ValidString(raw) || utf8.RuneCountInString(raw) > max || strings.ContainsRune(raw, 0) {
		q.v.Add(name, "must be at most "+strconv.Itoa(max)+" characters without control characters")
		return ""
	}
	return raw
}

// Invalid records a problem with parameter name (a value outside its set).
func (q *Query) Invalid(name, msg string) { q.v.Add(name, msg) }

// Merge records the field problems of a validation error, such as one a
// domain parser returned for a parameter.
func (q *Query) Merge(err error) {
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

// Err is the 400 for every invalid parameter at once, nil when all are fine.
func (q *Query) Err() error {
	if q.v.Empty() {
		return nil
	}
	var ae *apperr.Error
	if errors.As(q.v.Err(), &ae) {
		ae.Message = "the request has invalid query parameters"
		return ae
	}
	return q.v.Err()
}
