package httpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
)

// fuzzLimit is the body limit of the fuzzed server: small, so that the
// fuzzer reaches it.
const fuzzLimit = 512

// fuzzServer serves a list route that reads its query the way every list
// route does, and a create route that binds a JSON body.
func fuzzServer(tb testing.TB) http.Handler {
	tb.Helper()
	s, err := New(Options{Service: "fuzz", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxBodyBytes: fuzzLimit})
	if err != nil {
		tb.Fatal(err)
	}
	s.Engine.GET("/api/Items", s.Handle(func(c *gin.Context) error {
		q := NewQuery(c)
		p := q.Page()
		id := q.ID("topicId")
		active := q.Bool("isActive")
		name := q.Text("name", 10)
		if err := q.Err(); err != nil {
			return err
		}
		c.JSON(http.StatusOK, gin.H{"pageNumber": p.Number, "pageSize": p.Size, "topicId": id, "isActive": active, "name": name})
		return nil
	}))
	s.Engine.POST("/api/Items", s.Handle(func(c *gin.Context) error {
		var v fuzzItem
		if err := BindJSON(c, &v); err != nil {
			return err
		}
		c.JSON(http.StatusCreated, v)
		return nil
	}))
	return s.Handler()
}

type fuzzItem struct {
	Name   string             `json:"name"`
	Count  int                `json:"count"`
	Ratio  float64            `json:"ratio"`
	Tags   []string           `json:"tags"`
	Nested *struct{ On bool } `json:"nested"`
	Extra  map[string]any     `json:"extra"`
}

// wantProblemStatus checks that rec is a problem+json answer with one of the
// statuses and returns its body.
func wantProblemStatus(t *testing.T, rec *httptest.ResponseRecorder, statuses ...int) Problem {
	t.Helper()
	var p Problem
	ok := false
	for _, s := range statuses {
		ok = ok || rec.Code == s
	}
	if !ok || rec.Header().Get("Content-Type") != ProblemContentType || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Status != rec.Code {
		t.Fatalf("answer %d %q %s; want problem+json %v", rec.Code, rec.Header().Get("Content-Type"), rec.Body, statuses)
	}
	return p
}

// FuzzQuery sends any query string to a list route: it is a 200 whose
// values obey their syntax, or a 400 problem; the server and ParseQuery agree.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{"", "pageNumber=2&pageSize=5&topicId=7&isActive=true&name=Billing",
		"PAGENUMBER=3&pagesize=10&TopicID=9&isactive=FALSE&NAME=x", "pageSize=&topicId=&isActive=&name=",
		"name=%20two%20", "foo=bar", "pageSize=%2010", "pageNumber=+5", "topicId=-1", "pageSize=010",
		"topicId=9223372036854775808", "pageSize=5&pagesize=6", "name=abcdefghijk", "name=%00", "name=%ff",
		"pageSize=%zz", "a;b=c", "name=%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9", "&&&", "=x"} {
		f.Add(s)
	}
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, raw string) {
		req := httptest.NewRequest(http.MethodGet, "/api/Items", nil)
		req.URL.RawQuery = raw
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		// What the server's middleware lets through, read directly.
		vals, perr := url.ParseQuery(raw)
		clean := perr == nil
		for k, vs := range vals {
			for _, v := range append(vs, k) {
				clean = clean && utf8.ValidString(v) && !strings.ContainsRune(v, 0)
			}
		}
		var direct error
		if clean {
			q := ParseQuery(vals)
			q.Page()
			q.ID("topicId")
			q.Bool("isActive")
			q.Text("name", 10)
			direct = q.Err()
			if direct != nil && (apperr.CodeOf(direct) != apperr.Invalid || StatusFor(direct) != http.StatusBadRequest) {
				t.Fatalf("%q: query error %v is not a 400", raw, direct)
			}
		}
		if rec.Code != http.StatusOK {
			p := wantProblemStatus(t, rec, http.StatusBadRequest)
			if clean && direct == nil {
				t.Fatalf("%q refused by the server (%v) but not by ParseQuery", raw, p.Errors)
			}
			return
		}
		if !clean || direct != nil {
			t.Fatalf("%q accepted by the server; clean %v, ParseQuery %v", raw, clean, direct)
		}
		var got struct {
			PageNumber, PageSize int
			TopicID              *int64
			IsActive             *bool
			Name                 string
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.PageNumber < 1 || got.PageNumber > 1_000_000 || got.PageSize < 1 || got.PageSize > 100 ||
			(got.TopicID != nil && *got.TopicID <= 0) || utf8.RuneCountInString(got.Name) > 10 {
			t.Fatalf("%q read as %+v", raw, got)
		}
		lower := map[string][]string{}
		for k, vs := range vals {
			lower[strings.ToLower(k)] = append(lower[strings.ToLower(k)], vs...)
		}
		if vs := lower["name"]; len(vs) == 1 && vs[0] != got.Name {
			t.Fatalf("%q: name %q, want it as written %q", raw, got.Name, vs[0])
		}
		if vs := lower["topicid"]; len(vs) == 1 && vs[0] != "" && (got.TopicID == nil || strconv.FormatInt(*got.TopicID, 10) != vs[0]) {
			t.Fatalf("%q: topicId %v", raw, got.TopicID)
		}
	})
}

// FuzzDecodeJSON: exactly the bodies that are one JSON value in UTF-8,
// without U+0000 in any string or field name, decode; every refusal is a
// 400 apperr.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `[1,"x",null,true]`, `"s"`, `1`, ` {"a":[{"b":"c"}]} `, ``, ` `, `{`,
		`{"a":1} {"a":2}`, `{"a":1}]`, `{"a":"\u0000"}`, `{"\u0000":1}`, `{"a":["x","\u0000"]}`, `"\ud800"`,
		"{\"a\":\"\xff\"}", "\xef\xbb\xbf{}", `{"a":1,"a":"\u0000"}`, `[` + strings.Repeat(`"\u0000",`, 30) + `1]`, `nul`, `1e999`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v any
		err := DecodeJSON(body, &v)
		want := len(bytes.TrimSpace(body)) > 0 && utf8.Valid(body) && json.Valid(body)
		var oracle any
		if want {
			if uerr := json.Unmarshal(body, &oracle); uerr != nil {
				want = false // a valid number out of float64's range
			} else if hasNUL(oracle) {
				want = false
			}
		}
		if (err == nil) != want {
			t.Fatalf("DecodeJSON(%q) = %v; want success %v", body, err, want)
		}
		if err != nil {
			if apperr.CodeOf(err) != apperr.Invalid || StatusFor(err) != http.StatusBadRequest {
				t.Fatalf("DecodeJSON(%q): %v is not a 400", body, err)
			}
			var ae *apperr.Error
			if errors.As(err, &ae) && len(ae.Fields) > maxNULFields {
				t.Fatalf("%d field errors", len(ae.Fields))
			}
		}
	})
}

func hasNUL(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.ContainsRune(t, 0)
	case []any:
		for _, e := range t {
			if hasNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range t {
			if strings.ContainsRune(k, 0) || hasNUL(e) {
				return true
			}
		}
	}
	return false
}

// FuzzBindJSON posts any content type and body to a create route: 413 over
// the limit, else 415 for a type that is not JSON, else 201 exactly when
// DecodeJSON takes the body into the route's type, else 400.
func FuzzBindJSON(f *testing.F) {
	for _, s := range [][2]string{
		{"application/json", `{"name":"a","count":2,"ratio":0.5,"tags":["x"],"nested":{"on":true},"extra":{"k":[1]}}`},
		{"application/json; charset=utf-8", `{"NAME":"case-insensitive","unknown":1}`},
		{"application/problem+json", `{}`},
		{"text/plain", `{}`},
		{"", `{}`},
		{"application/json;", `{}`},
		{"application/json", `{"count":"2"}`},
		{"application/json", `{"count":1.5}`},
		{"application/json", `{"count":99999999999999999999}`},
		{"application/json", `{"tags":"x"}`},
		{"application/json", `{"nested":[]}`},
		{"application/json", `[]`},
		{"application/json", `{"name":"\u0000"}`},
		{"application/json", `{"extra":{"\u0000":1}}`},
		{"application/json", `{"name":"x"}` + strings.Repeat(" ", fuzzLimit)},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/api/Items", bytes.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		mt, _, merr := mime.ParseMediaType(ctype)
		isJSON := merr == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
		var v fuzzItem
		decodes := DecodeJSON(body, &v) == nil
		switch {
		case len(body) > fuzzLimit:
			wantProblemStatus(t, rec, http.StatusRequestEntityTooLarge)
		case !isJSON:
			wantProblemStatus(t, rec, http.StatusUnsupportedMediaType)
		case !decodes:
			wantProblemStatus(t, rec, http.StatusBadRequest)
		default:
			if rec.Code != http.StatusCreated {
				t.Fatalf("%q %q: %d %s", ctype, body, rec.Code, rec.Body)
			}
			var echoed fuzzItem
			if err := json.Unmarshal(rec.Body.Bytes(), &echoed); err != nil || echoed.Name != v.Name || echoed.Count != v.Count ||
				len(echoed.Tags) != len(v.Tags) {
				t.Fatalf("%q: echoed %s, decoded %+v", body, rec.Body, v)
			}
		}
	})
}
