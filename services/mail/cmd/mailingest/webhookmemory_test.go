package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/servicetest"
)

// The public callback takes bodies up to MAX_BODY_BYTES from anyone. A few
// hundred bodies of ~1 MB subscription ids and client states (issue 22 §2)
// leave mailingest's heap where it was: nothing keeps the strings after
// the request (the rate limiter, the lookup cache and the park used to).
// mailingest runs in this process, on real PostgreSQL and NATS, so the
// test process's heap after a GC is the service's.
func TestWebhookHeapStaysFlat(t *testing.T) {
	svc := servicetest.Start(t, "mailingest", run, servicetest.Options{Env: map[string]string{
		"PUBLIC_BASE_URL": "https://support.example.com", "MAX_BODY_BYTES": "1048576"}})
	const half = 500 << 10 // two such strings per body stay under 1 MiB
	post := func(t *testing.T) {
		t.Helper()
		big := strings.Repeat(randid.Hex(1)[:1], half-16) + randid.Hex(8)
		body := fmt.Sprintf(`{"value":[{"subscriptionId":%q,"clientState":"c","changeType":"created"},`+
			`{"subscriptionId":%q,"clientState":%q,"changeType":"created"}]}`, big, randid.Hex(8), big)
		if len(body) > 1<<20 {
			t.Fatalf("body of %d bytes", len(body))
		}
		resp, err := http.Post(svc.URL+"/api/ProviderWebhook", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct{ Received, Queued int }
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK || got.Received != 2 || got.Queued != 0 {
			t.Fatalf("answer %d %+v, %v; want 200 with nothing queued", resp.StatusCode, got, err)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for range 10 { // warm up pools and buffers
		post(t)
	}
	before := heap()
	const bodies = 200
	for range bodies {
		post(t)
	}
	after := heap()
	growth := int64(after) - int64(before)
	t.Logf("heap %d MiB before, %d MiB after %d bodies of ~1 MiB", before>>20, after>>20, bodies)
	// Kept strings would be ~200 MiB; buffers and metrics a few MiB.
	if growth > 24<<20 {
		t.Errorf("heap grew by %d MiB over %d bodies of ~1 MiB, want flat", growth>>20, bodies)
	}
	var metrics bytes.Buffer
	resp, err := http.Get(svc.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = metrics.ReadFrom(resp.Body)
	if want := fmt.Sprintf(`mail_notifications_dropped_total{reason="malformed"} %d`, 2*(bodies+10)); !strings.Contains(metrics.String(), want) {
		t.Errorf("metrics lack %q", want)
	}
}
