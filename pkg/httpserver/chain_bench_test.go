package httpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"

	"supportplatform.dev/pkg/telemetry"

	"supportplatform.dev/pkg/logging"
)

// BenchmarkChain is one authenticated-route-shaped GET through the shared
// middleware chain (trace propagation, request id, access log and metrics,
// recovery, deadline, body limit, query check) with a small JSON answer.
func BenchmarkChain(b *testing.B) {
	// As boot sets up a service that exports no spans (make bench).
	gin.SetMode(gin.ReleaseMode)
	otel.SetTextMapPropagator(telemetry.Propagator())
	otel.SetTracerProvider(noop.NewTracerProvider())
	s, err := New(Options{Service: "bench", Logger: logging.New(io.Discard, "info", "bench")})
	if err != nil {
		b.Fatal(err)
	}
	type resp struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	s.Engine.GET("/api/Customers/me", s.Handle(func(c *gin.Context) error {
		c.JSON(http.StatusOK, resp{ID: 1, Name: "x"})
		return nil
	}))
	h := s.Handler()
	for _, traceparent := range []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} {
		name := "plain" // as make bench's requests come through Traefik
		if traceparent != "" {
			name = "traceparent"
		}
		b.Run(name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/api/Customers/me", nil)
			req.Header.Set("Authorization", "Bearer abc")
			req.Header.Set("X-Forwarded-For", "203.0.113.9")
			if traceparent != "" {
				req.Header.Set("Traceparent", traceparent)
			}
			req.RemoteAddr = "127.0.0.1:1234"
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
