package main

import (
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/topics/internal/httpapi"
)

// The service's responses are checked against the one public contract,
// gateway/openapi.yaml, so the document cannot drift from the service.
var (
	contractOnce sync.Once
	contractDoc  *apicontract.Contract
	contractErr  error
)

func loadContract(t *testing.T) *apicontract.Contract {
	t.Helper()
	contractOnce.Do(func() { contractDoc, contractErr = apicontract.Load("../../../../gateway/openapi.yaml") })
	if contractErr != nil {
		t.Fatal(contractErr)
	}
	return contractDoc
}

// servedPrefixes are the paths this service owns at the gateway.
var servedPrefixes = []string{"/api/Topics", "/api/TopicActions", "/api/TopicDocuments", "/api/PageTopicMappings", "/api/Actions", "/api/Documents"}

func TestContractCoversEveryRoute(t *testing.T) {
	documented := loadContract(t).Operations(servedPrefixes...)
	srv, err := httpserver.New(httpserver.Options{Service: "topics", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	httpapi.New(nil, srv).Routes(srv.Engine, func(*gin.Context) {})
	served := httpserver.RouteKeys(srv.Engine)
	for r := range served {
		if !documented[r] {
			t.Errorf("route %s is served but not in gateway/openapi.yaml", r)
		}
	}
	for r := range documented {
		if !served[r] {
			t.Errorf("route %s is in gateway/openapi.yaml but not served", r)
		}
	}
	if len(served) != 32 {
		t.Errorf("%d routes served", len(served))
	}
}
