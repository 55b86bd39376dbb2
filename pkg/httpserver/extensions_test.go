package httpserver

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
)

// An error's extensions are members of the problem object; they never
// replace a standard member.
func TestProblemExtensions(t *testing.T) {
	s := newTestServer(t)
	s.Engine.GET("/api/Full", s.Handle(func(*gin.Context) error {
		return &apperr.Error{Code: apperr.TooLarge, Message: "full",
			Extensions: map[string]any{"quota": map[string]int64{"used": 10, "limit": 12, "size": 5}, "status": 200, "type": "x"}}
	}))
	rec, p := do(t, s.Handler(), http.MethodGet, "/api/Full", "", "")
	if rec.Code != http.StatusRequestEntityTooLarge || p.Status != rec.Code || p.Type != ProblemTypeBase+"too_large" || p.Detail != "full" {
		t.Fatalf("%d %+v", rec.Code, p)
	}
	var m struct {
		Quota map[string]int64 `json:"quota"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m.Quota["used"] != 10 || m.Quota["limit"] != 12 || m.Quota["size"] != 5 {
		t.Fatalf("quota %+v %v: %s", m, err, rec.Body)
	}
}
