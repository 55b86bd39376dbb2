package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/deploy/grafana"
	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/contracts"
)

// exposition is one scrape of a service's /metrics: every sample name
// (histograms as their _bucket, _sum and _count) and every family name,
// with the sample lines for label checks.
type exposition struct {
	names map[string]bool
	lines []string
}

func scrapeService(ctx context.Context, service string) (exposition, error) {
	e := exposition{names: map[string]bool{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, stk.ServiceURLs[service]+"/metrics", nil)
	if err != nil {
		return e, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return e, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return e, err
	}
	if resp.StatusCode != http.StatusOK {
		return e, fmt.Errorf("%s /metrics: %s", service, resp.Status)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			e.names[f[2]] = true
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		e.names[name] = true
		e.lines = append(e.lines, line)
	}
	return e, sc.Err()
}

// has reports whether a sample of name carries every label given
// (`consumer="..."`).
func (e exposition) has(name string, labels ...string) bool {
	for _, l := range e.lines {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		ok := true
		for _, want := range labels {
			ok = ok && strings.Contains(l, want)
		}
		if ok {
			return true
		}
	}
	return false
}

// Every metric the example Grafana dashboard queries is exposed by at least
// one running service; every service exposes the request metrics; each
// service that consumes JetStream exports its consumers' state and each
// service with an outbox its backlog.
func TestMetricsBehindTheDashboard(t *testing.T) {
	for _, s := range stack.Services {
		if _, ok := stk.ServiceURLs[s.Name]; !ok {
			t.Fatalf("service %s is not running in the suite's stack (running: %v)", s.Name, stk.Services)
		}
	}
	d, err := grafana.Load()
	if err != nil {
		t.Fatal(err)
	}
	used, err := d.MetricNames()
	if err != nil {
		t.Fatal(err)
	}
	// A request through the gateway to each routed service, so that its
	// route metrics have a series for an API route, not only the probes.
	c := client(t)
	tok := c.Login(demo.Email, demo.Password)
	for _, path := range []string{"/api/Customers/me", "/api/Topics", "/api/Tickets", "/api/Channels",
		"/api/Translations/detect-language-ai?country=ES&state=Catalonia&city=Barcelona"} {
		if resp := c.Do(http.MethodGet, path, tok, nil); resp.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.Status, resp.Body)
		}
	}

	// The reference page and the console are not part of the API's
	// contract: a plain GET.
	for svc, path := range map[string]string{"docs": "/docs", "console": "/"} {
		if _, ok := stk.ServiceURLs[svc]; !ok {
			continue
		}
		resp, err := stk.HTTPClient().Get(stk.HTTPSURL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}

	// Per service, what it must expose (beyond the dashboard's needs).
	names := contracts.Names{Prefix: stk.NATSPrefix}
	consumers := map[string][]string{
		"tickets":   {"jetstream_consumer_pending_messages", "jetstream_consumer_deliveries_total"},
		"assistant": {"jetstream_consumer_pending_messages", "jetstream_consumer_deliveries_total"},
		// Its consumers are declared with the jetstream API and watched.
		"importreply": {"jetstream_consumer_pending_messages", "jetstream_consumer_ack_pending_messages"},
	}
	mailImport := `stream="` + names.Stream(contracts.StreamMailImport) + `"`
	outboxes := []string{"auth", "topics", "mailingest", "tickets"}

	var missing []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		missing = missing[:0]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		exposed := map[string]bool{}
		for _, s := range stack.Services {
			e, err := scrapeService(ctx, s.Name)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			for n := range e.names {
				exposed[n] = true
			}
			for _, n := range []string{"http_requests_total", "http_request_duration_seconds_bucket", "go_goroutines", "process_resident_memory_bytes"} {
				if !e.has(n) {
					missing = append(missing, s.Name+": "+n)
				}
			}
			if s.Routed() && !slices.ContainsFunc(s.Prefixes, func(p string) bool { return e.has("http_requests_total", `route="`+p) }) {
				missing = append(missing, s.Name+": http_requests_total of a route under "+strings.Join(s.Prefixes, ", "))
			}
			for _, n := range consumers[s.Name] {
				if !e.has(n, `stream="`+names.Stream("")) {
					missing = append(missing, s.Name+": "+n+" of the stack's streams")
				}
			}
			if s.Name == "importreply" && !e.has("jetstream_consumer_pending_messages", mailImport) {
				missing = append(missing, "importreply: the state of its "+mailImport+" consumer")
			}
			if slices.Contains(outboxes, s.Name) && !e.has("outbox_pending_events") {
				missing = append(missing, s.Name+": outbox_pending_events")
			}
		}
		cancel()
		for _, n := range used {
			if !grafana.Covered(n, exposed) {
				missing = append(missing, "dashboard: "+n+" is exposed by no service")
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("missing from the services' /metrics:\n  %s", strings.Join(missing, "\n  "))
		}
		time.Sleep(time.Second)
	}
}
