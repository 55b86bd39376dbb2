package grafana

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"supportplatform.dev/deploy/stack"
)

func TestMetricNames(t *testing.T) {
	cases := []struct {
		name, expr string
		want       []string
	}{
		{"plain", `go_goroutines`, []string{"go_goroutines"}},
		{"matchers and range", `rate(http_requests_total{job=~"$job",status=~"5..",route!~"/healthz|/readyz"}[$__rate_interval])`,
			[]string{"http_requests_total"}},
		{"aggregation with by before", `sum by (job, route) (rate(a_total[5m])) / sum by (job) (rate(b_total[5m]))`,
			[]string{"a_total", "b_total"}},
		{"by after", `sum(rate(a_total[1h])) by (le, job)`, []string{"a_total"}},
		{"quantile", `histogram_quantile(0.95, sum by (le) (rate(x_seconds_bucket{a="}{"}[5m])))`, []string{"x_seconds_bucket"}},
		{"binary with on and keywords", `a_total > bool 0 and on (job) group_left (route) b unless c offset 5m`,
			[]string{"a_total", "b", "c"}},
		{"variables", `max(${metric}) + $other + 1e3`, nil},
		{"no space before paren", `max by(stream)(jetstream_x)`, []string{"jetstream_x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := MetricNames(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("MetricNames(%s) = %q, want %q", c.expr, got, c.want)
			}
		})
	}
	for _, bad := range []string{`sum(rate(a[5m])`, `rate(a{job="x"[5m])`, `a{job="x}`, `sum(a))`, `a[5m`, `max(${x)`} {
		if got, err := MetricNames(bad); err == nil {
			t.Errorf("MetricNames(%s) = %q, want an error", bad, got)
		}
	}
}

func TestDashboardShape(t *testing.T) {
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Fatalf("uid %q, title %q, schemaVersion %d", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]Variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v := vars["DS_PROMETHEUS"]; v.Type != "datasource" || v.Query != "prometheus" {
		t.Fatalf("no Prometheus data source variable DS_PROMETHEUS: %+v", v)
	}
	if v := vars["job"]; v.Type != "query" {
		t.Fatalf("no job variable: %+v", v)
	}
	panels := d.AllPanels()
	if len(panels) < 15 {
		t.Fatalf("%d panels", len(panels))
	}
	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range panels {
		if other, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, other)
		}
		ids[p.ID] = p.Title
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("panel %q: data source %+v, want the DS_PROMETHEUS variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" || q.RefID == "" {
				t.Errorf("panel %q: empty query %+v", p.Title, q)
			}
			if q.Datasource == nil || q.Datasource.UID != "${DS_PROMETHEUS}" {
				t.Errorf("panel %q query %s: data source %+v", p.Title, q.RefID, q.Datasource)
			}
			if names, err := MetricNames(q.Expr); err != nil || len(names) == 0 {
				t.Errorf("panel %q query %s: metric names %q, %v", p.Title, q.RefID, names, err)
			}
		}
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Fatalf("panels %q and %q overlap at %d,%d", p.Title, other, x, y)
				}
				taken[cell{x, y}] = p.Title
			}
		}
	}
}

// The dashboard shows what the operations issue asks for.
func TestDashboardCoversThePlatform(t *testing.T) {
	used := queried(t)
	for _, want := range []string{
		"http_requests_total", "http_request_duration_seconds_bucket",
		"jetstream_consumer_pending_messages", "jetstream_consumer_ack_pending_messages",
		"jetstream_consumer_redelivered_messages", "jetstream_consumer_deliveries_total", "outbox_pending_events",
		"mail_import_rounds_total", "mail_import_round_duration_seconds_bucket", "mail_notifications_received_total",
		"mail_subscription_renewals_total", "mail_replies_total", "tickets_mail_imported_total", "assistant_work_total",
		"go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes",
	} {
		if !slices.Contains(used, want) {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// queried are the metric names the dashboard's queries use.
func queried(t *testing.T) []string {
	t.Helper()
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	used, err := d.MetricNames()
	if err != nil {
		t.Fatal(err)
	}
	return used
}

// defined are the metric names the platform's code defines (Name: "..." and
// NewDesc("...") in the files that use client_golang) and those of the Go
// and process collectors every service registers (pkg/httpserver).
func defined(t *testing.T) map[string]bool {
	t.Helper()
	root, err := stack.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	re := regexp.MustCompile(`(?:Name:\s*|NewDesc\(\s*)"([a-zA-Z_:][a-zA-Z0-9_:]*)"`)
	for _, dir := range []string{"pkg", "services"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil || !strings.Contains(string(src), "github.com/prometheus/client_golang") {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				names[m[1]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	return names
}

// Every metric the dashboard queries is defined by the platform (the e2e
// suite checks the same against the running services' /metrics).
func TestDashboardMetricsAreDefined(t *testing.T) {
	used := queried(t)
	have := defined(t)
	for _, must := range []string{"http_requests_total", "jetstream_consumer_pending_messages", "mail_import_rounds_total", "go_goroutines"} {
		if !have[must] {
			t.Fatalf("the scan of the sources missed %s: %d names found", must, len(have))
		}
	}
	for _, n := range used {
		if !Covered(n, have) {
			t.Errorf("the dashboard queries %s, which no service defines", n)
		}
	}
}
