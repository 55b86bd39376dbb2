package httpcrud_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/httpcrud"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
)

// note is a resource of one customer's: the handlers must pass the token's
// customer to every call.
type note struct {
	ID, CustomerID int64
	Text           string
}

type noteRequest struct {
	Text *string `json:"text"`
}

func (r noteRequest) Input() string {
	if r.Text == nil {
		return ""
	}
	return *r.Text
}

type notes struct{ byID map[int64]note }

func (n *notes) get(_ context.Context, cid, id int64) (note, error) {
	if v, ok := n.byID[id]; ok && v.CustomerID == cid {
		return v, nil
	}
	return note{}, apperr.E(apperr.NotFound, "note not found")
}

func (n *notes) create(_ context.Context, cid int64, text string) (note, error) {
	if text == "" {
		return note{}, apperr.Field("text", "is required", "invalid")
	}
	v := note{ID: int64(len(n.byID) + 1), CustomerID: cid, Text: text}
	n.byID[v.ID] = v
	return v, nil
}

func (n *notes) update(ctx context.Context, cid, id int64, text string) (note, error) {
	v, err := n.get(ctx, cid, id)
	if err == nil {
		v.Text = text
		n.byID[id] = v
	}
	return v, err
}

func (n *notes) del(ctx context.Context, cid, id int64) error {
	_, err := n.get(ctx, cid, id)
	if err == nil {
		delete(n.byID, id)
	}
	return err
}

func (n *notes) list(_ context.Context, cid int64, p paging.Page) ([]note, int, error) {
	var out []note
	for id := int64(1); id <= int64(len(n.byID))+5; id++ {
		if v, ok := n.byID[id]; ok && v.CustomerID == cid {
			out = append(out, v)
		}
	}
	return out, len(out), nil
}

func toBody(v note) gin.H { return gin.H{"id": v.ID, "text": v.Text} }

func TestRecordRoutes(t *testing.T) {
	srv, err := httpserver.New(httpserver.Options{Service: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	n := &notes{byID: map[int64]note{}}
	as := func(c *gin.Context) {
		cid := int64(1)
		if c.GetHeader("X-Customer") == "2" {
			cid = 2
		}
		c.Request = c.Request.WithContext(authn.WithPrincipal(c.Request.Context(), authn.Principal{CustomerID: cid}))
	}
	e := srv.Engine
	e.GET("/notes", as, srv.Handle(func(c *gin.Context) error {
		return httpcrud.ListPage(c, httpcrud.NoFilter, httpcrud.Unfiltered(n.list), toBody)
	}))
	e.POST("/notes", as, srv.Handle(func(c *gin.Context) error {
		return httpcrud.CreateOne[noteRequest](c, "/notes", n.create, func(v note) int64 { return v.ID }, toBody)
	}))
	e.GET("/notes/:id", as, srv.Handle(func(c *gin.Context) error { return httpcrud.GetOne(c, n.get, toBody) }))
	e.PUT("/notes/:id", as, srv.Handle(func(c *gin.Context) error { return httpcrud.UpdateOne[noteRequest](c, n.update) }))
	e.DELETE("/notes/:id", as, srv.Handle(func(c *gin.Context) error { return httpcrud.DeleteOne(c, n.del) }))
	// No principal: Customer refuses.
	e.GET("/anonymous/:id", srv.Handle(func(c *gin.Context) error { return httpcrud.GetOne(c, n.get, toBody) }))

	do := func(method, path, customer, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("X-Customer", customer)
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		return w
	}
	tests := []struct {
		name, method, path, customer, body string
		status                             int
		contains, location                 string
	}{
		{"create", "POST", "/notes", "1", `{"text":"a"}`, http.StatusCreated, `"text":"a"`, "/notes/1"},
		{"invalid body", "POST", "/notes", "1", `{"text":""}`, http.StatusBadRequest, `"text"`, ""},
		{"malformed body", "POST", "/notes", "1", `{"text":`, http.StatusBadRequest, "", ""},
		{"get", "GET", "/notes/1", "1", "", http.StatusOK, `"id":1`, ""},
		{"another customer's", "GET", "/notes/1", "2", "", http.StatusNotFound, "", ""},
		{"bad id", "GET", "/notes/01", "1", "", http.StatusBadRequest, `"id"`, ""},
		{"list", "GET", "/notes?pageSize=1", "1", "", http.StatusOK, `"totalCount":1`, ""},
		{"list of another customer", "GET", "/notes", "2", "", http.StatusOK, `"totalCount":0`, ""},
		{"bad page", "GET", "/notes?pageSize=0", "1", "", http.StatusBadRequest, "pageSize", ""},
		{"update", "PUT", "/notes/1", "1", `{"text":"b"}`, http.StatusNoContent, "", ""},
		{"update another customer's", "PUT", "/notes/1", "2", `{"text":"c"}`, http.StatusNotFound, "", ""},
		{"updated", "GET", "/notes/1", "1", "", http.StatusOK, `"text":"b"`, ""},
		{"delete another customer's", "DELETE", "/notes/1", "2", "", http.StatusNotFound, "", ""},
		{"delete", "DELETE", "/notes/1", "1", "", http.StatusNoContent, "", ""},
		{"deleted", "GET", "/notes/1", "1", "", http.StatusNotFound, "", ""},
		{"no principal", "GET", "/anonymous/1", "1", "", http.StatusUnauthorized, "", ""},
	}
	for _, tt := range tests {
		w := do(tt.method, tt.path, tt.customer, tt.body)
		if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.contains) || w.Header().Get("Location") != tt.location {
			t.Errorf("%s: %d %q Location %q; want %d containing %q, Location %q", tt.name, w.Code, w.Body.String(),
				w.Header().Get("Location"), tt.status, tt.contains, tt.location)
		}
	}
}
