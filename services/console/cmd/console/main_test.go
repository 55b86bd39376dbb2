package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/config/configtest"
)

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../README.md", Config{})
}

func TestRunRejectsBadConfig(t *testing.T) {
	env := map[string]string{"REQUEST_TIMEOUT": "soon"}
	err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "REQUEST_TIMEOUT") {
		t.Fatalf("run: %v", err)
	}
}

// run serves on port 0 with nothing but its embedded files: ready at once,
// the page answers, and it stops cleanly when its context ends.
func TestRunServesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "SHUTDOWN_GRACE": "2s"}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, pw)
		pw.Close()
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				addr <- a
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not listening after 30s")
	}
	for _, tc := range []struct {
		path, contentType string
	}{
		{"/readyz", "application/json; charset=utf-8"},
		{"/healthz", "application/json; charset=utf-8"},
		{"/", "text/html; charset=utf-8"},
		{"/tickets/7", "text/html; charset=utf-8"},
	} {
		resp, err := http.Get(base + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.contentType {
			t.Errorf("GET %s: %s %q", tc.path, resp.Status, resp.Header.Get("Content-Type"))
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}
