package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/deploy/loadgen"
)

// The static answer has exactly the asked size and is JSON, whatever the size.
func TestStaticAnswerSizes(t *testing.T) {
	if got := staticAnswer(len(staticBody)); string(got) != string(staticBody) {
		t.Errorf("the baseline's own size: %s", got)
	}
	// detect-language answers "fr" (4 bytes), translate-cached a short string.
	for _, n := range []int{1, 2, 4, len(staticPad) - 1, len(staticPad), 11, 100, 4096, 9_873, 100_000} {
		b := staticAnswer(n)
		if len(b) != n || !json.Valid(b) {
			t.Errorf("staticAnswer(%d) = %.20q: %d bytes, valid JSON %v", n, b, len(b), json.Valid(b))
		}
	}
	for _, n := range []int{-1, 0} {
		if b := staticAnswer(n); len(b) != 0 {
			t.Errorf("staticAnswer(%d) = %q, want an empty body", n, b)
		}
	}
}

// The static route answers the asked size with its length declared (as a
// handler that knows its answer does), the baseline body without a size.
func TestStaticHandler(t *testing.T) {
	srv := httptest.NewServer(staticHandler())
	defer srv.Close()
	for q, want := range map[string]int{"": len(staticBody), "?bytes=12345": 12345, "?bytes=12345&x=1": 12345, "?bytes=10": 10, "?bytes=4": 4, "?bytes=0": 0} {
		resp, err := srv.Client().Get(srv.URL + staticPath + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) != want || resp.ContentLength != int64(want) ||
			resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%q: %d, %d bytes, Content-Length %d, %s; want %d bytes", q, resp.StatusCode, len(body), resp.ContentLength,
				resp.Header.Get("Content-Type"), want)
		}
	}
	start := time.Now()
	resp, err := srv.Client().Get(srv.URL + staticPath + "?bytes=100&delayus=50000")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusOK || len(body) != 100 || took < 50*time.Millisecond {
		t.Errorf("delayed answer: %d, %d bytes after %s", resp.StatusCode, len(body), took)
	}
	for _, q := range []string{"?bytes=x", "?bytes=-1", "?bytes=" + strconv.Itoa(17<<20), "?delayus=-1", "?delayus=20000000", "?delayus=x"} {
		resp, err := srv.Client().Get(srv.URL + staticPath + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: %d, want 400", q, resp.StatusCode)
		}
	}
}

// The paced run copies the case's successful req/s and mean answer size.
func TestPacingOf(t *testing.T) {
	p, ok := pacingOf(loadgen.Result{Requests: 3, RPS: 849.4, BodyBytes: 3*9800 + 2})
	if !ok || p.Rate != 849.4 || p.Bytes != 9801 || p.path() != "/bench/static?bytes=9801" {
		t.Errorf("pacing %+v %v, path %s", p, ok, p.path())
	}
	if _, ok := pacingOf(loadgen.Result{Errors: 10}); ok {
		t.Error("a case without a successful request has nothing to copy")
	}
}

func TestGatewayLine(t *testing.T) {
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	p := pacing{Rate: 849.6, Bytes: 9800}
	for _, tc := range []struct {
		row  gatewayRow
		want []string
	}{
		{gatewayRow{Pacing: p, Workers: 32, API: us(409), StaticClosed: us(211), StaticPaced: us(350), StaticInFlight: us(330)},
			[]string{"traefik 409µs", "static closed loop 211µs (1.94x)", "static at 850 req/s, 9800-byte answers 350µs (1.17x)",
				"1.3x at equal rate and size holds", "with 32 in flight 330µs (1.24x)"}},
		{gatewayRow{Pacing: p, API: us(409), StaticClosed: us(211), StaticPaced: us(300)}, []string{"(1.36x)", "missed"}},
		{gatewayRow{Pacing: p, API: us(390), StaticClosed: us(300), StaticPaced: us(300)}, []string{"(1.30x): 1.3x at equal rate and size holds"}},
		{gatewayRow{Pacing: p, API: us(409)}, []string{"traefik 409µs; static at the same rate and size: not measured"}},
	} {
		got := gatewayLine(tc.row)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("gatewayLine(%+v) = %q, want %q in it", tc.row, got, w)
			}
		}
	}
}

// The in-flight run holds each answer back for 75% of the case's mean
// latency (workers/rate), and says so in its path.
func TestPacingInFlight(t *testing.T) {
	p := pacing{Rate: 800, Bytes: 7000}.inFlight(32)
	if p.Delay != 30*time.Millisecond || p.path() != "/bench/static?bytes=7000&delayus=30000" {
		t.Errorf("32 workers at 800 req/s: delay %s, path %s", p.Delay, p.path())
	}
	if p := (pacing{}).inFlight(32); p.Delay != 0 {
		t.Errorf("no rate: delay %s", p.Delay)
	}
}

// The paced run sends the case's rate and fails answers of another size.
func TestRunPacedStatic(t *testing.T) {
	srv := httptest.NewServer(staticHandler())
	defer srv.Close()
	res, err := runPacedStatic(t.Context(), srv.Client(), srv.URL, pacing{Rate: 200, Bytes: 5000}, 8, 100*time.Millisecond, 400*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Completed < 90 || res.Completed > 101 || res.Requests < 70 || res.Requests > 81 {
		t.Errorf("200 req/s for 100 ms + 400 ms: %+v", res)
	}
	wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{}")) }))
	defer wrong.Close()
	res, err = runPacedStatic(t.Context(), wrong.Client(), wrong.URL, pacing{Rate: 100, Bytes: 5000}, 4, 0, 100*time.Millisecond)
	if err != nil || res.Errors == 0 || res.Requests != 0 || !strings.Contains(res.FirstError, "2-byte answer") {
		t.Errorf("answers of 2 bytes for 5000 counted ok: %+v %v", res, err)
	}
}

func TestPrintGateway(t *testing.T) {
	var b strings.Builder
	rows := []gatewayRow{
		{Case: "customers-me", Pacing: pacing{Rate: 2500, Bytes: 180}, API: 260 * time.Microsecond, StaticClosed: 211 * time.Microsecond,
			StaticPaced: 240 * time.Microsecond, StaticInFlight: 200 * time.Microsecond},
		{Case: "tickets-list", Pacing: pacing{Rate: 850, Bytes: 9800}, API: 409 * time.Microsecond, StaticClosed: 211 * time.Microsecond, StaticPaced: 300 * time.Microsecond},
	}
	if err := printGateway(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{"customers-me  2500  180  260  211  1.23  240  1.08  yes  200  1.30", "tickets-list   850  9800  409  211  1.94  300  1.36  no  -  -"} {
		if !strings.Contains(strings.Join(strings.Fields(out), "  "), strings.Join(strings.Fields(w), "  ")) {
			t.Errorf("table:\n%s\nwant a row %q", out, w)
		}
	}
	b.Reset()
	if err := printGateway(&b, nil); err != nil || b.Len() != 0 {
		t.Errorf("no API case: %q", b.String())
	}
}
