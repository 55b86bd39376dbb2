package boot

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// The debug listener serves goroutine dumps until its context ends.
func TestServeDebug(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr, err := serveDebug(ctx, "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + addr.String() + "/debug/pprof/goroutine?debug=1"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "TestServeDebug") {
		t.Fatalf("%d: %.300s", resp.StatusCode, body)
	}
	cancel()
	for range 50 {
		if _, err = http.Get(url); err != nil {
			return
		}
	}
	t.Fatal("the debug listener still answers after its context ended")
}
