package httpserver

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// On shutdown with a drain delay, /readyz answers 503 at once while the
// server goes on accepting and serving new requests, on new connections
// too, until the delay has passed; then the listener closes and Serve
// returns cleanly. Without a delay the listener closes at once.
func TestServeDrainsBeforeItStopsAccepting(t *testing.T) {
	const delay = 1500 * time.Millisecond
	s := newTestServer(t)
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		done <- Serve(ctx, ln, s.Handler(), log, Shutdown{Grace: 5 * time.Second, DrainDelay: delay, Draining: s.Drain})
	}()
	// Each request on a connection of its own: the door must stay open.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	status := func(path string) (int, error) {
		resp, err := client.Get(url + path)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := status("/readyz"); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz before shutdown: %d %v", code, err)
	}
	cancelled := time.Now()
	cancel()
	// Draining is called before Serve waits: poll briefly for it.
	deadline := time.Now().Add(time.Second)
	for {
		code, err := status("/readyz")
		if err != nil {
			t.Fatalf("/readyz while draining: %v", err)
		}
		if code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still answers %d after the shutdown began", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
	served := 0
	for time.Since(cancelled) < delay/2 {
		code, err := status("/api/Items/7")
		if err != nil || code != http.StatusOK {
			t.Fatalf("a request during the drain delay (%s after the shutdown began): %d %v", time.Since(cancelled), code, err)
		}
		served++
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v before the drain delay ended", err)
	default:
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the drain delay")
	}
	if took := time.Since(cancelled); took < delay {
		t.Errorf("Serve returned %s after the shutdown began, before the drain delay of %s", took, delay)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("the listener still accepts after the shutdown")
	}
	t.Logf("%d requests served during the drain", served)
}

func TestServeWithoutDrainDelayStopsAtOnce(t *testing.T) {
	s := newTestServer(t)
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	drained := false
	go func() {
		done <- Serve(ctx, ln, s.Handler(), slog.New(slog.NewTextHandler(io.Discard, nil)),
			Shutdown{Draining: func() { drained = true; s.Drain() }})
	}()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if !drained {
		t.Error("Draining was not called")
	}
	rec, _ := do(t, s.Handler(), http.MethodGet, "/readyz", "", "")
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz of a drained server: %d", rec.Code)
	}
}
