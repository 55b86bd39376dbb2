package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
)

// Where the tail waits. Each request of the open loop carries its own
// X-Request-Id (soak-<route>-<n>, a second request of the pair with "-2"),
// which the gateway's JSON access log keeps next to its own Duration and the
// service's OriginDuration. Joined with the soak's own figures (the
// scheduled start, when the generator sent it, when the answer was read),
// each slow request's time splits into: the generator's lag (its timer and
// goroutines on a busy machine), the client side and the connection (TLS,
// the HTTP/2 stream, the kernel: the time the gateway did not see), the
// gateway itself, and the service. The services' /metrics, read before and
// after the run, say whether the service's share was spent waiting for a
// database connection (pgxpool) or in GC pauses.

// sample is one successful request of the open loop.
type sample struct {
	route     int
	scheduled time.Time
	lag       time.Duration // scheduled start to send
	total     time.Duration // scheduled start to the answer read
	id        string        // the first request's X-Request-Id; a pair's second has "-2"
	pair      bool
}

// samples collects the open loop's requests.
type samples struct {
	mu   sync.Mutex
	list []sample
}

func (s *samples) add(x sample) {
	s.mu.Lock()
	s.list = append(s.list, x)
	s.mu.Unlock()
}

func (s *samples) reset() {
	s.mu.Lock()
	s.list = nil
	s.mu.Unlock()
}

func (s *samples) all() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// gatewayTimes are the access log's figures of a request.
type gatewayTimes struct {
	Duration time.Duration // the gateway's, from reading the request to the answer's end
	Origin   time.Duration // the service's, as the gateway waited for it
}

// readAccessLog reads the request ids and times of Traefik's JSON access
// log whose ids start with prefix.
func readAccessLog(path, prefix string) (map[string]gatewayTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseAccessLog(f, prefix)
}

func parseAccessLog(r io.Reader, prefix string) (map[string]gatewayTimes, error) {
	out := map[string]gatewayTimes{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), prefix) {
			continue
		}
		var e struct {
			Duration       int64  `json:"Duration"`
			OriginDuration int64  `json:"OriginDuration"`
			ID             string `json:"request_X-Request-Id"`
		}
		if err := json.Unmarshal(line, &e); err != nil || !strings.HasPrefix(e.ID, prefix) {
			continue
		}
		out[e.ID] = gatewayTimes{Duration: time.Duration(e.Duration), Origin: time.Duration(e.OriginDuration)}
	}
	return out, sc.Err()
}

// window is a span of time (a VACUUM's run).
type window struct{ from, to time.Time }

func during(t time.Time, ws []window) bool {
	for _, w := range ws {
		if !t.Before(w.from) && t.Before(w.to) {
			return true
		}
	}
	return false
}

// tailRow is one route's slowest requests, split.
type tailRow struct {
	Name                string
	P99                 time.Duration
	N                   int // the slowest 1%
	Matched             int // of them, found in the access log
	Total, Lag, Outside time.Duration
	Gateway, Service    time.Duration
	InVacuum            int
}

// tailRows splits, per route, the mean time of its slowest 1% of requests
// (at least one); Outside is what the gateway did not see (client,
// TLS, connection, kernel), Gateway the gateway's own share.
func tailRows(names []string, ss []sample, gw map[string]gatewayTimes, vacuums []window) []tailRow {
	byRoute := make([][]sample, len(names))
	for _, s := range ss {
		byRoute[s.route] = append(byRoute[s.route], s)
	}
	rows := make([]tailRow, 0, len(names))
	for i, list := range byRoute {
		row := tailRow{Name: names[i]}
		if len(list) == 0 {
			rows = append(rows, row)
			continue
		}
		slices.SortFunc(list, func(a, b sample) int { return cmp.Compare(a.total, b.total) })
		n := len(list)
		row.P99 = list[max((n*99+99)/100, 1)-1].total
		var total, lag, outside, gateway, service time.Duration
		for _, s := range list[n-max(n/100, 1):] {
			row.N++
			total += s.total
			lag += s.lag
			if during(s.scheduled, vacuums) {
				row.InVacuum++
			}
			g, ok := gw[s.id]
			if s.pair {
				g2, ok2 := gw[s.id+"-2"]
				ok = ok && ok2
				g.Duration += g2.Duration
				g.Origin += g2.Origin
			}
			if !ok {
				continue
			}
			row.Matched++
			outside += s.total - s.lag - g.Duration
			gateway += g.Duration - g.Origin
			service += g.Origin
		}
		k := time.Duration(row.N)
		row.Total, row.Lag = total/k, lag/k
		if m := time.Duration(row.Matched); m > 0 {
			row.Outside, row.Gateway, row.Service = outside/m, gateway/m, service/m
		}
		rows = append(rows, row)
	}
	return rows
}

func printTail(w io.Writer, rows []tailRow) error {
	fmt.Fprintln(w, "\nthe slowest 1% of each route, mean split: generator lag, outside the gateway (client, TLS, connection), gateway, service; started while VACUUM ran")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "route\tp99\tn\tmean\tlag\toutside\tgateway\tservice\tin VACUUM\t\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }
	for _, r := range rows {
		if r.N == 0 {
			continue
		}
		gwCols := "-\t-\t-"
		if r.Matched > 0 {
			gwCols = ms(r.Outside) + "\t" + ms(r.Gateway) + "\t" + ms(r.Service)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t\n", r.Name, ms(r.P99), r.N, ms(r.Total), ms(r.Lag), gwCols, r.InVacuum)
	}
	return tw.Flush()
}

// metrics are one scrape of a service's /metrics: each series' value by
// its name and labels as written ("db_pool_acquires_total",
// `http_request_duration_seconds_bucket{method="GET",route="/x",le="0.1"}`).
type metrics map[string]float64

func parseMetrics(r io.Reader) (metrics, error) {
	m := metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

func scrape(ctx context.Context, url string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: status %d", url, resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}

// scrapeAll reads every service's /metrics; a service that does not answer
// is left out.
func scrapeAll(ctx context.Context, urls map[string]string) map[string]metrics {
	out := map[string]metrics{}
	for name, u := range urls {
		if m, err := scrape(ctx, u); err == nil {
			out[name] = m
		}
	}
	return out
}

// sum adds the series of name (with any labels) whose labels contain every
// one of with (`le="0.1"`).
func (m metrics) sum(name string, with ...string) float64 {
	total := 0.0
	for k, v := range m {
		series, labels, _ := strings.Cut(k, "{")
		if series != name {
			continue
		}
		ok := true
		for _, w := range with {
			ok = ok && strings.Contains(labels, w)
		}
		if ok {
			total += v
		}
	}
	return total
}

// has reports whether a series of name is there.
func (m metrics) has(name string) bool {
	for k := range m {
		if series, _, _ := strings.Cut(k, "{"); series == name {
			return true
		}
	}
	return false
}

// serviceRow is what a service's /metrics say about the run.
type serviceRow struct {
	Name                string
	Requests, Over100ms float64 // as the service timed them
	Pool                bool
	Acquires, Waited    float64
	Wait                time.Duration // summed over the waits
	GCCycles            float64
	GCPause             time.Duration // summed
	poolMaxConns        float64
}

func serviceRows(names []string, before, after map[string]metrics) []serviceRow {
	var rows []serviceRow
	for _, n := range names {
		a, b := after[n], before[n]
		if a == nil || b == nil {
			continue
		}
		d := func(name string, with ...string) float64 { return a.sum(name, with...) - b.sum(name, with...) }
		// /healthz, /readyz and /metrics are timed too: counted out.
		var health, healthSlow float64
		for _, r := range []string{`route="/healthz"`, `route="/readyz"`, `route="/metrics"`} {
			health += d("http_request_duration_seconds_count", r)
			healthSlow += d("http_request_duration_seconds_count", r) - d("http_request_duration_seconds_bucket", r, `le="0.1"`)
		}
		all := d("http_request_duration_seconds_count")
		row := serviceRow{Name: n, Requests: all - health,
			Over100ms: all - d("http_request_duration_seconds_bucket", `le="0.1"`) - healthSlow,
			Pool:      a.has("db_pool_acquires_total"),
			Acquires:  d("db_pool_acquires_total"), Waited: d("db_pool_empty_acquires_total"),
			Wait:     time.Duration(math.Round(d("db_pool_acquire_wait_seconds_total") * 1e9)),
			GCCycles: d("go_gc_duration_seconds_count"), GCPause: time.Duration(math.Round(d("go_gc_duration_seconds_sum") * 1e9)),
			poolMaxConns: a.sum("db_pool_max_connections")}
		rows = append(rows, row)
	}
	return rows
}

func printServices(w io.Writer, rows []serviceRow) error {
	fmt.Fprintln(w, "\nservices' /metrics over the run: requests (as the service timed them), pool acquires that waited for a connection, GC")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "service\trequests\tover 100ms\tpool\tacquires\twaited\twait total\twait mean\tGC cycles\tGC pause total\t\n")
	for _, r := range rows {
		pool := "-\t-\t-\t-\t-"
		if r.Pool {
			mean := "-"
			if r.Waited > 0 {
				mean = fmt.Sprintf("%.2fms", float64(r.Wait)/1e6/r.Waited)
			}
			pool = fmt.Sprintf("%.0f\t%.0f\t%.0f\t%.0fms\t%s", r.poolMaxConns, r.Acquires, r.Waited, float64(r.Wait)/1e6, mean)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%.0f\t%.1fms\t\n", r.Name, math.Max(r.Requests, 0), math.Max(r.Over100ms, 0), pool, r.GCCycles, float64(r.GCPause)/1e6)
	}
	return tw.Flush()
}

// machine is what the report says of the machine's contention over the
// run: the PSI totals of /proc/pressure (the time some runnable task waited
// for a CPU, some task for IO) and the generator's own CPU time. On a
// shared 2-core machine these decide the tail as much as the services do.
type machine struct {
	at              time.Time
	cpuSome, ioSome time.Duration // PSI "some" totals
	selfCPU         time.Duration // this process's user + system time
	load1           string
	psiOK, rusageOK bool
}

func readMachine() machine {
	m := machine{at: time.Now()}
	var err1, err2 error
	m.cpuSome, err1 = psiSome("/proc/pressure/cpu")
	m.ioSome, err2 = psiSome("/proc/pressure/io")
	m.psiOK = err1 == nil && err2 == nil
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		m.selfCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		m.rusageOK = true
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.load1 = f[0]
		}
	}
	return m
}

// psiSome reads the "some" line's total (microseconds) of a PSI file.
func psiSome(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "some ")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, err
				}
				return time.Duration(us) * time.Microsecond, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no some total", path)
}

// machineLine describes the run between a and b for requests sent.
func machineLine(a, b machine, requests int) string {
	wall := b.at.Sub(a.at)
	if wall <= 0 {
		return ""
	}
	s := fmt.Sprintf("machine: load average %s at the start, %s at the end", a.load1, b.load1)
	if a.psiOK && b.psiOK {
		s += fmt.Sprintf("; some task waited for a CPU %.0f%% of the time, for IO %.0f%% (PSI)",
			100*float64(b.cpuSome-a.cpuSome)/float64(wall), 100*float64(b.ioSome-a.ioSome)/float64(wall))
	}
	if a.rusageOK && b.rusageOK && requests > 0 {
		s += fmt.Sprintf("; the load generator used %.0f µs of CPU per request", float64(b.selfCPU-a.selfCPU)/1e3/float64(requests))
	}
	return s
}
