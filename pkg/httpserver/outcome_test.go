package httpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
)

func TestPrefersHTML(t *testing.T) {
	cases := []struct {
		name, accept string
		want         bool
	}{
		{"chromium navigation", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7", true},
		{"firefox navigation", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true},
		{"no header", "", false},
		{"curl", "*/*", false},
		{"json", "application/json", false},
		{"problem json only", "application/problem+json", false},
		{"json first", "application/json, text/html;q=0.9", false},
		{"tie", "text/html, application/json", false},
		{"html refused", "text/html;q=0, */*", false},
		{"html through text/*", "text/*, application/json;q=0.5", true},
		{"specific beats wildcard", "text/html;q=0.1, */*", false},
		{"case and spaces", " TEXT/HTML ; Q=1 , */* ; q=0.2", true},
		{"bad q counts as 0", "text/html;q=x, */*;q=0.1", false},
		{"q above 1 counts as 0", "text/html;q=2", false},
		{"garbage", "html, ,;;,/", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := PrefersHTML(tc.accept); got != tc.want {
				t.Errorf("PrefersHTML(%q) = %v, want %v", tc.accept, got, tc.want)
			}
		})
	}
}

// Outcome classifies as Fail answers (outage rule, spent budget) and logs
// only server errors, without writing anything.
func TestOutcome(t *testing.T) {
	outageErr := errors.New("connection refused")
	var logs bytes.Buffer
	s, err := New(Options{Service: "test", Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Outage: func(err error) *apperr.Error {
			if errors.Is(err, outageErr) {
				return apperr.Wrap(apperr.Unavailable, err, "down")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	var got apperr.Code
	var fail error
	s.Engine.GET("/x", func(c *gin.Context) {
		if fail == context.DeadlineExceeded {
			ctx, cancel := context.WithCancel(c.Request.Context())
			cancel()
			c.Request = c.Request.WithContext(ctx)
		}
		got = s.Outcome(c, fail)
	})
	cases := []struct {
		name   string
		err    error
		want   apperr.Code
		logged bool
	}{
		{"invalid", apperr.Field("state", "is unknown", "unknown state"), apperr.Invalid, false},
		{"conflict", apperr.E(apperr.Conflict, "taken"), apperr.Conflict, false},
		{"outage", fmt.Errorf("store: %w", outageErr), apperr.Unavailable, true},
		{"plain error", errors.New("secret"), apperr.Internal, true},
		{"spent budget", context.DeadlineExceeded, apperr.Unavailable, true},
		{"unknown code", &apperr.Error{Code: "weird"}, apperr.Internal, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			fail = tc.err
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
			if got != tc.want {
				t.Errorf("code %q, want %q", got, tc.want)
			}
			if rec.Body.Len() != 0 {
				t.Errorf("wrote %q", rec.Body.String())
			}
			if logged := strings.Contains(logs.String(), "request failed"); logged != tc.logged {
				t.Errorf("logged %v, want %v: %s", logged, tc.logged, logs.String())
			}
		})
	}
}
