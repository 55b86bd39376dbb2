package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A slow request's time splits into the generator's lag, what the gateway
// did not see, the gateway's own and the service's; a pair's two requests
// are added up; a request missing from the access log counts in the mean
// and the lag but not in the split.
func TestTailRowsSplitTheSlowest(t *testing.T) {
	log := `{"Duration":2000000,"OriginDuration":1500000,"request_X-Request-Id":"soak-a-0"}
{"Duration":50000000,"OriginDuration":45000000,"request_X-Request-Id":"soak-a-99"}
not json soak-
{"Duration":9000000,"OriginDuration":9000000,"request_X-Request-Id":"other-1"}
{"Duration":10000000,"OriginDuration":8000000,"request_X-Request-Id":"soak-p-0"}
{"Duration":20000000,"OriginDuration":12000000,"request_X-Request-Id":"soak-p-0-2"}
`
	gw, err := parseAccessLog(strings.NewReader(log), "soak-")
	if err != nil {
		t.Fatal(err)
	}
	if len(gw) != 4 || gw["soak-a-99"].Origin != 45*time.Millisecond {
		t.Fatalf("access log: %v", gw)
	}
	t0 := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	var ss []sample
	for i := range 100 {
		ss = append(ss, sample{route: 0, scheduled: t0.Add(time.Duration(i) * time.Millisecond), lag: time.Millisecond,
			total: 3 * time.Millisecond, id: "soak-a-" + itoa(i)})
	}
	ss[99].total, ss[99].lag = 60*time.Millisecond, 4*time.Millisecond
	ss = append(ss, sample{route: 1, scheduled: t0, lag: 0, total: 40 * time.Millisecond, id: "soak-p-0", pair: true})
	vac := []window{{from: t0.Add(99 * time.Millisecond), to: t0.Add(time.Second)}}
	rows := tailRows([]string{"a", "p", "none"}, ss, gw, vac)
	a, p := rows[0], rows[1]
	if a.P99 != 3*time.Millisecond || a.N != 1 || a.Matched != 1 || a.Lag != 4*time.Millisecond ||
		a.Outside != 6*time.Millisecond || a.Gateway != 5*time.Millisecond || a.Service != 45*time.Millisecond || a.InVacuum != 1 {
		t.Fatalf("route a: %+v", a)
	}
	if p.N != 1 || p.Gateway != 10*time.Millisecond || p.Service != 20*time.Millisecond || p.Outside != 10*time.Millisecond || p.InVacuum != 0 {
		t.Fatalf("pair: %+v", p)
	}
	if rows[2].N != 0 {
		t.Fatalf("a route without requests: %+v", rows[2])
	}
	var out strings.Builder
	if err := printTail(&out, rows); err != nil || !strings.Contains(out.String(), "45.0ms") || strings.Contains(out.String(), "none") {
		t.Fatalf("%v\n%s", err, out.String())
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// The services' rows are the differences of two scrapes, health checks
// left out.
func TestServiceRows(t *testing.T) {
	before, err := parseMetrics(strings.NewReader(`# HELP x
db_pool_acquires_total 10
db_pool_empty_acquires_total 2
db_pool_acquire_wait_seconds_total 0.5
db_pool_max_connections 8
go_gc_duration_seconds_sum 0.01
go_gc_duration_seconds_count 3
http_request_duration_seconds_bucket{method="GET",route="/api/X",le="0.1"} 5
http_request_duration_seconds_count{method="GET",route="/api/X"} 6
http_request_duration_seconds_bucket{method="GET",route="/readyz",le="0.1"} 1
http_request_duration_seconds_count{method="GET",route="/readyz"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	after, _ := parseMetrics(strings.NewReader(`db_pool_acquires_total 110
db_pool_empty_acquires_total 12
db_pool_acquire_wait_seconds_total 1.5
db_pool_max_connections 8
go_gc_duration_seconds_sum 0.03
go_gc_duration_seconds_count 13
http_request_duration_seconds_bucket{method="GET",route="/api/X",le="0.1"} 95
http_request_duration_seconds_count{method="GET",route="/api/X"} 100
http_request_duration_seconds_bucket{method="GET",route="/readyz",le="0.1"} 3
http_request_duration_seconds_count{method="GET",route="/readyz"} 4
`))
	nopool, _ := parseMetrics(strings.NewReader("go_gc_duration_seconds_count 1\n"))
	rows := serviceRows([]string{"tickets", "translation", "gone"}, map[string]metrics{"tickets": before, "translation": nopool},
		map[string]metrics{"tickets": after, "translation": nopool})
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	r := rows[0]
	if r.Requests != 94 || r.Over100ms != 4 || !r.Pool || r.Acquires != 100 || r.Waited != 10 || r.Wait != time.Second ||
		r.GCCycles != 10 || r.GCPause != 20*time.Millisecond {
		t.Fatalf("tickets: %+v", r)
	}
	if rows[1].Pool {
		t.Fatalf("translation has no pool: %+v", rows[1])
	}
	var out strings.Builder
	if err := printServices(&out, rows); err != nil || !strings.Contains(out.String(), "100.00ms") {
		t.Fatalf("%v\n%s", err, out.String())
	}
}

func TestMachineLine(t *testing.T) {
	t0 := time.Now()
	a := machine{at: t0, load1: "1.00", psiOK: true, rusageOK: true}
	b := machine{at: t0.Add(10 * time.Second), cpuSome: 5 * time.Second, ioSome: time.Second, selfCPU: 100 * time.Millisecond,
		load1: "2.50", psiOK: true, rusageOK: true}
	got := machineLine(a, b, 1000)
	want := "machine: load average 1.00 at the start, 2.50 at the end; some task waited for a CPU 50% of the time, for IO 10% (PSI); the load generator used 100 µs of CPU per request"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if m := readMachine(); m.at.IsZero() || !m.rusageOK {
		t.Fatalf("this process's rusage: %+v", m)
	}
}

// The requests go over n HTTP/2 connections in turn.
func TestSpreadClient(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr]++
		mu.Unlock()
		if r.ProtoMajor != 2 {
			w.WriteHeader(http.StatusHTTPVersionNotSupported)
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	for _, n := range []int{1, 3} {
		clear(remotes)
		c := spreadClient(srv.Client(), n, 8)
		for range 6 {
			resp, err := c.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		if len(remotes) != n {
			t.Fatalf("%d connections: %v", n, remotes)
		}
		for addr, k := range remotes {
			if k != 6/n {
				t.Fatalf("connection %s took %d of 6 requests over %d", addr, k, n)
			}
		}
	}
}
