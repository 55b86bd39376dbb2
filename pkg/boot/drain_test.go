package boot

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/config"
)

// A negative DRAIN_DELAY is refused before the service listens.
func TestNegativeDrainDelayRefused(t *testing.T) {
	d, err := OpenServer(config.Common{DrainDelay: -time.Second}, "drain", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Serve(context.Background(), "127.0.0.1:0", io.Discard)
	if err == nil || !strings.Contains(err.Error(), "DRAIN_DELAY") {
		t.Fatalf("Serve with DRAIN_DELAY -1s: %v", err)
	}
}

// With a drain delay, Serve keeps answering after its context ended and
// /readyz says 503 meanwhile (the wiring of httpserver's drain).
func TestServeDrains(t *testing.T) {
	d, err := OpenServer(config.Common{DrainDelay: 800 * time.Millisecond}, "drain", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, "127.0.0.1:0", out) }()
	var addr string
	for range 200 {
		if s := out.String(); strings.Contains(s, "listening on ") {
			addr = strings.TrimSpace(strings.TrimPrefix(s, "listening on "))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if addr == "" {
		t.Fatal("not listening")
	}
	cancel()
	time.Sleep(100 * time.Millisecond)
	if code := getStatus(t, "http://"+addr+"/readyz"); code != 503 {
		t.Errorf("/readyz while draining: %d", code)
	}
	if code := getStatus(t, "http://"+addr+"/healthz"); code != 200 {
		t.Errorf("/healthz while draining: %d", code)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s while draining: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
