package main

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/translation/internal/httpapi"
)

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../../../README.md", Config{})
}

func TestRunRejectsUnknownProvider(t *testing.T) {
	env := map[string]string{"TRANSLATION_PROVIDERS": "apertium,babelfish"}
	if err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard); err == nil {
		t.Fatal("unknown provider accepted")
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
