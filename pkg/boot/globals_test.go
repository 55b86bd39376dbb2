package boot

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"supportplatform.dev/pkg/redisconn"
	"supportplatform.dev/pkg/telemetry"
)

// syncBuffer is a log sink that go-redis's goroutines may write while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The process-wide settings that libraries force are boot's: gin in release
// mode, go-redis's messages through the service's logger, and otel's
// provider (here the no-op one: nothing exported) and W3C propagator.
func TestProcessGlobals(t *testing.T) {
	prevMode, prevTP, prevProp := gin.Mode(), otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() {
		gin.SetMode(prevMode)
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
		redis.SetLogger(redisconn.Logger{Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	})
	gin.SetMode(gin.DebugMode)
	tracing, err := telemetry.Setup(context.Background(), telemetry.Config{}, "globalstest")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	installGlobals(slog.New(slog.NewJSONHandler(&logs, nil)), tracing)

	if gin.Mode() != gin.ReleaseMode {
		t.Errorf("gin mode %q, want release", gin.Mode())
	}
	if telemetry.Recording() {
		t.Error("spans may be recorded although nothing is exported")
	}
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := otel.GetTextMapPropagator().Extract(context.Background(), propagation.MapCarrier{"traceparent": parent})
	if got := telemetry.TraceID(ctx); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("the global propagator does not read traceparent: trace id %q", got)
	}

	// A refused dial: go-redis reports it through the logger it was given.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	opt := &redis.Options{Addr: addr, MaxRetries: -1}
	redisconn.FailFast(opt)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err == nil {
		t.Fatal("ping of a closed port succeeded")
	}
	var found bool
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "go-redis" && strings.Contains(rec["detail"].(string), "failed to dial") {
			found = true
		}
	}
	if !found {
		t.Errorf("go-redis's dial failure is not in the service's log: %q", logs.String())
	}
}
