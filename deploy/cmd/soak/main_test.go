package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseVmRSS(t *testing.T) {
	status := "Name:\tauth\nUmask:\t0022\nState:\tS (sleeping)\nVmPeak:\t 1300000 kB\nVmRSS:\t   24576 kB\nRssAnon:\t   10000 kB\n"
	got, err := parseVmRSS([]byte(status))
	if err != nil || got != 24576*1024 {
		t.Fatalf("parseVmRSS = %d, %v; want %d", got, err, 24576*1024)
	}
	for name, bad := range map[string]string{
		"no line":    "Name:\tkthreadd\nState:\tS\n",
		"no unit":    "VmRSS:\t24576\n",
		"other unit": "VmRSS:\t24 MB\n",
		"not number": "VmRSS:\tlots kB\n",
		"negative":   "VmRSS:\t-5 kB\n",
	} {
		if v, err := parseVmRSS([]byte(bad)); err == nil {
			t.Errorf("%s: parseVmRSS = %d, want an error", name, v)
		}
	}
}

func TestGrowthAndVerdict(t *testing.T) {
	if g := growth(100, 109); g < 8.99 || g > 9.01 {
		t.Fatalf("growth(100, 109) = %v", g)
	}
	if g := growth(200, 150); g != -25 {
		t.Fatalf("growth(200, 150) = %v", g)
	}
	if g := growth(0, 10); g != 0 {
		t.Fatalf("growth from nothing = %v", g)
	}
	start := map[string]int64{"auth": 100, "tickets": 200, "traefik": 100, "nats": 50}
	end := map[string]int64{"auth": 109, "tickets": 240, "traefik": 300, "nats": 50}
	rows := rssRows([]string{"auth", "topics", "tickets"}, start, end, nil)
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	// Services in table order (topics was not read), then the others sorted.
	if want := []string{"auth", "tickets", "nats", "traefik"}; !slices.Equal(names, want) {
		t.Fatalf("rows %v, want %v", names, want)
	}
	missed := verdict(0, rows, 10)
	if len(missed) != 1 || !strings.HasPrefix(missed[0], "tickets: RSS grew 20.0%") {
		t.Fatalf("verdict = %q; want tickets only (traefik is not a target, auth grew 9%%)", missed)
	}
	if missed := verdict(3, rssRows([]string{"auth"}, map[string]int64{"auth": 100}, map[string]int64{}, nil), 10); len(missed) != 2 ||
		!strings.Contains(missed[0], "3 requests failed") || !strings.Contains(missed[1], "not running") {
		t.Fatalf("verdict = %q", missed)
	}
	if missed := verdict(0, rssRows([]string{"auth"}, map[string]int64{"auth": 100}, map[string]int64{"auth": 105}, nil), 10); len(missed) != 0 {
		t.Fatalf("a healthy run: %q", missed)
	}
}

// The two readings compared are medians over their windows: a burst of a
// few seconds at the end of the run (requests piled up while the machine
// stalled a service) shows in the peak, not as growth; memory that stays
// grown (a leak) does.
func TestRSSRecorderMedians(t *testing.T) {
	r := &rssRecorder{}
	for s := range 180 {
		a := int64(100)
		if s >= 170 {
			a = 300 // a 10 s burst at the end
		}
		b := int64(100 + s) // grows steadily
		rss := map[string]int64{"a": a, "b": b}
		if s%2 == 0 {
			rss["c"] = 50 // seen in every other reading only
		}
		r.add(time.Duration(s)*time.Second, rss)
	}
	if got := r.last(); got != 179*time.Second {
		t.Fatalf("last = %s", got)
	}
	start := r.median(60*time.Second, 120*time.Second)
	end := r.median(120*time.Second, 180*time.Second)
	if start["a"] != 100 || end["a"] != 100 {
		t.Errorf("a burst of 10 s in 60 moved the median: %d -> %d", start["a"], end["a"])
	}
	// b over [60,120): 160..219, median (189+190)/2; over [120,180): 220..279.
	if start["b"] != 189 || end["b"] != 249 {
		t.Errorf("b medians %d, %d; want 189, 249", start["b"], end["b"])
	}
	if start["c"] != 50 {
		t.Errorf("c (every other reading) = %d", start["c"])
	}
	if p := r.peak(); p["a"] != 300 || p["b"] != 279 {
		t.Errorf("peak = %v", p)
	}
	if m := r.median(500*time.Second, 600*time.Second); m != nil {
		t.Errorf("no readings: %v", m)
	}
	if w := rssWindow(10*time.Minute, time.Minute); w != time.Minute {
		t.Errorf("window of a 10 min run: %s", w)
	}
	if w := rssWindow(90*time.Second, time.Minute); w != 15*time.Second {
		t.Errorf("window of a 90 s run after a 60 s warm-up: %s", w)
	}
}

func TestScheduleFollowsTheWeights(t *testing.T) {
	routes := mix()
	order := schedule(routes)
	total := 0
	for _, r := range routes {
		total += r.Weight
	}
	if len(order) != total {
		t.Fatalf("one cycle has %d slots, want %d", len(order), total)
	}
	count := make([]int, len(routes))
	for i, r := range order {
		count[r]++
		// Interleaved: a route of weight 3 in 18 slots never comes twice
		// in a row.
		if i > 0 && order[i-1] == r {
			t.Errorf("route %s twice in a row at %d: %v", routes[r].Name, i, order)
		}
	}
	for i, r := range routes {
		if count[i] != r.Weight {
			t.Errorf("%s: %d slots, weight %d", r.Name, count[i], r.Weight)
		}
	}
	if got := schedule([]route{{Name: "a", Weight: 2}, {Name: "off", Weight: 0}, {Name: "b", Weight: 1}}); !slices.Equal(got, []int{0, 2, 0}) {
		t.Fatalf("schedule = %v, want [0 2 0]", got)
	}
}

// Every route of the mix builds a request the API knows, with unique names
// where the API wants them.
func TestMixRequests(t *testing.T) {
	s := &seeded{ChannelID: 3, EndUserID: 4, TicketIDs: []int64{10, 11}}
	seen := map[string]bool{}
	for _, r := range mix() {
		if r.Weight <= 0 || r.Expect == 0 || r.Name == "" || r.Build == nil {
			t.Errorf("route %+v", r.Name)
		}
		p0, b0 := r.Build(0, s)
		p1, b1 := r.Build(1, s)
		if !strings.HasPrefix(p0, "/api/") {
			t.Errorf("%s: path %q", r.Name, p0)
		}
		seen[strings.SplitN(strings.TrimPrefix(p0, "/api/"), "/", 2)[0]] = true
		switch r.Name {
		case "topic-create-delete", "enduser-create", "ticket-create":
			if b0 == b1 {
				t.Errorf("%s: the same body twice: %s", r.Name, b0)
			}
		case "message-create", "message-enduser":
			if !strings.Contains(b0, `"ticketID":10`) || !strings.Contains(b1, `"ticketID":11`) {
				t.Errorf("%s: bodies %s, %s do not go round the seeded tickets", r.Name, b0, b1)
			}
		case "topics-list", "tickets-list":
			if p0 == p1 {
				t.Errorf("%s: the same page twice", r.Name)
			}
		}
	}
	for _, r := range mix() {
		if r.Name != "topic-create-delete" {
			continue
		}
		if m, p, want, err := r.Then([]byte(`{"topicID":42,"name":"x"}`)); err != nil || m != "DELETE" || p != "/api/Topics/42" || want != 204 {
			t.Errorf("the created topic's deletion: %s %s %d %v", m, p, want, err)
		}
		if _, _, _, err := r.Then([]byte(`{"name":"x"}`)); err == nil {
			t.Error("an answer without topicID is not an error")
		}
	}
	for _, svc := range []string{"Customers", "Topics", "Tickets", "TicketMessages", "EndUsers", "Channels", "Translations"} {
		if !seen[strings.SplitN(svc, "?", 2)[0]] {
			t.Errorf("the mix never calls /api/%s (calls %v)", svc, seen)
		}
	}
}

func TestParseOptions(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	o, err := parseOptions(nil, env(nil))
	if err != nil || o.duration != 10*time.Minute || o.warmup != time.Minute || o.rssLimit != 10 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	if o, err := parseOptions(nil, env(map[string]string{"SOAK_DURATION": "3m"})); err != nil || o.duration != 3*time.Minute {
		t.Fatalf("SOAK_DURATION=3m: %+v, %v", o, err)
	}
	if o, err := parseOptions([]string{"-d", "2m"}, env(map[string]string{"SOAK_DURATION": "3m"})); err != nil || o.duration != 2*time.Minute {
		t.Fatalf("-d beats SOAK_DURATION: %+v, %v", o, err)
	}
	o, err = parseOptions([]string{"-env", "tickets:DEBUG_ADDR=127.0.0.1:6061", "-env", "tickets:LOG_LEVEL=debug"}, env(nil))
	if err != nil || !slices.Equal(o.env["tickets"], []string{"DEBUG_ADDR=127.0.0.1:6061", "LOG_LEVEL=debug"}) {
		t.Fatalf("-env: %+v, %v", o.env, err)
	}
	for _, bad := range [][]string{{"-d", "60s"}, {"-rate", "-1"}, {"-peak-c", "0"}, {"extra"},
		{"-env", "DEBUG_ADDR=x"}, {"-env", "tickets:DEBUG_ADDR"}, {"-env", ":A=b"}} {
		if _, err := parseOptions(bad, env(nil)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := parseOptions(nil, env(map[string]string{"SOAK_DURATION": "ten minutes"})); err == nil {
		t.Error("a bad SOAK_DURATION is accepted")
	}
}

func TestRoutePercentiles(t *testing.T) {
	var s routeStats
	if p50, p99 := s.percentiles(); p50 != 0 || p99 != 0 {
		t.Fatalf("no samples: %s %s", p50, p99)
	}
	for i := 100; i >= 1; i-- {
		s.observe(time.Duration(i) * time.Millisecond)
	}
	if p50, p99 := s.percentiles(); p50 != 50*time.Millisecond || p99 != 99*time.Millisecond {
		t.Fatalf("p50 %s, p99 %s of 1..100 ms", p50, p99)
	}
}
