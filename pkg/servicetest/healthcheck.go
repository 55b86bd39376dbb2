package servicetest

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// HealthcheckTest shows that `<name> healthcheck` (the container
// healthcheck, boot.Healthcheck) is dispatched by the binary's run: it
// asks HTTP_ADDR's /readyz and returns nil for 200 and an error (exit
// status 1) for 503 or nothing listening, without opening any dependency.
// env is added to HTTP_ADDR (variables run checks before the subcommand).
func HealthcheckTest(t *testing.T, name string, run Run, env map[string]string) {
	t.Helper()
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	addr := strings.TrimPrefix(srv.URL, "http://")
	check := func() error {
		vars := map[string]string{"HTTP_ADDR": addr}
		for k, v := range env {
			vars[k] = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return run(ctx, []string{name, "healthcheck"}, func(k string) string { return vars[k] }, &bytes.Buffer{})
	}

	ready.Store(true)
	if err := check(); err != nil {
		t.Errorf("%s healthcheck of a ready server: %v", name, err)
	}
	ready.Store(false)
	if err := check(); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("%s healthcheck of a server answering 503 = %v, want an error", name, err)
	}
	srv.Close()
	start := time.Now()
	if err := check(); err == nil {
		t.Errorf("%s healthcheck with nothing listening succeeded", name)
	} else if d := time.Since(start); d > 2*time.Second {
		t.Errorf("%s healthcheck with nothing listening took %v", name, d)
	}
}
