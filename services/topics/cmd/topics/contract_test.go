// In-process test of what the end-to-end suite cannot see: that every route
// the service registers is in gateway/openapi.yaml and every documented
// topics route is served (e2e validates the responses it gets, not the
// routes it never calls).
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
	srv, err := httpserver.New(httpserver.Options{Service: "topics", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	httpapi.New(nil, srv).Routes(srv.Engine, func(*gin.Context) {})
	served := httpserver.RouteKeys(srv.Engine)
	undocumented, unserved := loadContract(t).CompareRoutes(served, servedPrefixes...)
	if len(undocumented) > 0 || len(unserved) > 0 {
		t.Fatalf("served but not in gateway/openapi.yaml: %v; documented but not served: %v", undocumented, unserved)
	}
	if len(served) != 32 {
		t.Errorf("%d routes served", len(served))
	}
}
