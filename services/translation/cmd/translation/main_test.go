package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/translation/internal/httpapi"
)

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../README.md", Config{})
}

func TestRunRejectsUnknownProvider(t *testing.T) {
	env := map[string]string{"TRANSLATION_PROVIDERS": "apertium,babelfish"}
	if err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard); err == nil {
		t.Fatal("unknown provider accepted")
	}
}

func TestRunRejectsTimeoutsOverTheRequestBudget(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		bad  string // the variable the error must name; "" = accepted
	}{
		{"defaults", nil, ""},
		{"AI attempt as long as the request", map[string]string{"AI_TIMEOUT": "60s"}, "AI_TIMEOUT"},
		{"AI attempt longer than a shorter request", map[string]string{"REQUEST_TIMEOUT": "10s"}, "AI_TIMEOUT"},
		{"both raised together", map[string]string{"REQUEST_TIMEOUT": "180s", "AI_TIMEOUT": "50s"}, ""},
		{"zero AI timeout", map[string]string{"AI_TIMEOUT": "0s"}, "AI_TIMEOUT"},
		{"LibreTranslate over budget", map[string]string{"LIBRETRANSLATE_TIMEOUT": "2m"}, "LIBRETRANSLATE_TIMEOUT"},
		{"Apertium over budget", map[string]string{"APERTIUM_TIMEOUT": "61s"}, "APERTIUM_TIMEOUT"},
		{"negative retries", map[string]string{"AI_MAX_RETRIES": "-1"}, "AI_MAX_RETRIES"},
		{"unknown server kind", map[string]string{"AI_SERVER_KIND": "tgi"}, "AI_SERVER_KIND"},
		{"unknown token parameter", map[string]string{"AI_TOKEN_PARAM": "n_predict"}, "AI_TOKEN_PARAM"},
		{"negative context", map[string]string{"AI_CONTEXT_TOKENS": "-1"}, "AI_CONTEXT_TOKENS"},
		{"ollama with its context", map[string]string{"AI_SERVER_KIND": "ollama", "AI_CONTEXT_TOKENS": "8192"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			if err := config.Load(func(k string) string { return tc.env[k] }, &cfg); err != nil {
				t.Fatal(err)
			}
			err := cfg.checkBudget()
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Fatalf("error %v does not name %s", err, tc.bad)
			}
			// run refuses to start with it.
			if err := run(context.Background(), nil, func(k string) string { return tc.env[k] }, io.Discard); err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Fatalf("run started or failed otherwise: %v", err)
			}
		})
	}
}

func TestEveryRouteIsDocumented(t *testing.T) {
	c, err := apicontract.Load("../../../../gateway/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpserver.New(httpserver.Options{Service: "translation", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	httpapi.New(nil, nil, srv).Routes(srv.Engine, func(*gin.Context) {})
	served := httpserver.RouteKeys(srv.Engine)
	undocumented, unserved := c.CompareRoutes(served, "/api/Translations")
	if len(undocumented) > 0 || len(unserved) > 0 {
		t.Fatalf("served but not in gateway/openapi.yaml: %v; documented but not served: %v", undocumented, unserved)
	}
	if len(served) != 3 {
		t.Errorf("%d routes served, want 3", len(served))
	}
}
