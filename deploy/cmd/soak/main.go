// Command soak runs the platform under steady load for a long while (make
// soak): it builds and starts the whole stack against a fresh database,
// seeds data through the API, measures the peak rate of a mix of routes
// through the gateway over HTTPS (a short closed-loop run), then sends half
// that rate open-loop for SOAK_DURATION (default 10m). It prints the
// requests, the errors by status (target 0), the latency percentiles and
// every service's resident memory in the minute after a warm-up minute and
// in the last minute (medians of readings every second; target: less than
// 10% growth) with its peak, and exits non-zero when a target is missed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"supportplatform.dev/deploy/loadgen"
	"supportplatform.dev/deploy/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// options are the command's settings.
type options struct {
	duration    time.Duration // open-loop run
	warmup      time.Duration // before the first RSS reading
	peakC       int
	peakD       time.Duration
	rate        float64 // 0: half the measured peak
	rssLimit    float64 // percent
	seedTickets int
	verbose     bool
	logLevel    string
	natsNodes   int                 // -nats-nodes: 3 runs against a NATS cluster
	vacuum      time.Duration       // VACUUM interval when the server has autovacuum off; 0: never
	conns       int                 // connections to the gateway the requests are spread over
	env         map[string][]string // per service, from -env
}

func parseOptions(args []string, getenv func(string) string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	defDuration := 10 * time.Minute
	if v := getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return o, fmt.Errorf("SOAK_DURATION: %w", err)
		}
		defDuration = d
	}
	fs.DurationVar(&o.duration, "d", defDuration, "open-loop duration (default SOAK_DURATION or 10m)")
	fs.DurationVar(&o.warmup, "warmup", time.Minute, "load before the first RSS reading")
	fs.IntVar(&o.peakC, "peak-c", 32, "workers of the closed-loop peak measurement")
	fs.DurationVar(&o.peakD, "peak-d", 20*time.Second, "duration of the peak measurement")
	fs.Float64Var(&o.rate, "rate", 0, "requests per second of the open-loop run (0: half the measured peak)")
	fs.Float64Var(&o.rssLimit, "rss-limit", 10, "largest RSS growth of a service, percent, that passes")
	fs.IntVar(&o.seedTickets, "tickets", 200, "tickets seeded before the runs (messages go into them)")
	fs.BoolVar(&o.verbose, "v", false, "print the stack's logs")
	fs.DurationVar(&o.vacuum, "vacuum", 30*time.Second, "when the PostgreSQL server has autovacuum off, VACUUM (ANALYZE) the soak's database this often in its stead (0: never)")
	fs.StringVar(&o.logLevel, "log-level", "info", "services' LOG_LEVEL (info logs every request, as in production)")
	fs.IntVar(&o.conns, "conns", 1, "HTTP/2 connections to the gateway the requests are spread over, one after another (many users' browsers); 1: every request multiplexed over one")
	fs.IntVar(&o.natsNodes, "nats-nodes", 1, "NATS servers: 1, or 3 for a cluster (every stream with three replicas)")
	o.env = map[string][]string{}
	fs.Func("env", "service:NAME=VALUE, a variable for one service (repeatable), e.g. tickets:DEBUG_ADDR=127.0.0.1:6061", func(v string) error {
		svc, kv, ok := strings.Cut(v, ":")
		if name, _, hasEq := strings.Cut(kv, "="); !ok || svc == "" || !hasEq || name == "" {
			return fmt.Errorf("%q: want service:NAME=VALUE", v)
		}
		o.env[svc] = append(o.env[svc], kv)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.peakC < 1 || o.peakD <= 0 || o.rate < 0 || o.rssLimit <= 0 || o.seedTickets < 1 || o.conns < 1:
		return o, errors.New("-peak-c, -peak-d, -rss-limit, -tickets and -conns must be positive, -rate not negative")
	case o.duration < o.warmup+30*time.Second:
		return o, fmt.Errorf("-d %s leaves no time to measure after the %s warm-up (at least warm-up + 30s)", o.duration, o.warmup)
	}
	return o, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	o, err := parseOptions(args, getenv)
	if err != nil {
		return err
	}
	root, built, err := stack.Prepare(ctx, stdout, os.Stderr)
	if err != nil {
		return err
	}
	var all []string
	for _, s := range stack.Services {
		all = append(all, s.Name)
	}
	if missing := stack.Missing(all, built); missing != "" {
		return fmt.Errorf("the soak runs every service; not built: %s", missing)
	}
	var logw io.Writer
	if o.verbose {
		logw = os.Stderr
	}
	st, err := stack.StartLoad(ctx, stack.LoadOptions{Name: "soak", RepoRoot: root, Services: built, Log: logw, LogLevel: o.logLevel, Env: o.env,
		NATSNodes: o.natsNodes})
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "soak: stop:", err)
		}
	}()

	d := newDriver(loadgen.NewClient(spreadClient(st.HTTPClient(), o.conns, 512), st.HTTPSURL), st.Demo, mix())
	if err := d.login(ctx); err != nil {
		return err
	}
	// Tokens live AUTH_TOKEN_TTL (60m by default): a long soak logs in again.
	go d.relogin(ctx, 20*time.Minute)
	start := time.Now()
	if err := d.seed(ctx, o.seedTickets); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Fprintf(stdout, "gateway %s, %d CPUs; seeded a channel, an end user and %d tickets in %s\n",
		st.HTTPSURL, runtime.NumCPU(), len(d.seeded.TicketIDs), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "mix (weight): %s\n", d.describeMix())
	for i := range d.routes {
		if err := d.call(ctx, i); err != nil {
			return fmt.Errorf("preflight %s: %w", d.routes[i].Name, err)
		}
	}

	rate := o.rate
	if rate == 0 {
		peak, err := loadgen.Run(ctx, loadgen.Config{Concurrency: o.peakC, Duration: o.peakD, Warmup: 3 * time.Second,
			Call: func(ctx context.Context) error { return d.next(ctx) }})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "peak (closed loop, %d workers, %s): %s\n", o.peakC, o.peakD, peak)
		if total := peak.Requests + peak.Errors; total == 0 || peak.Errors*100 > total {
			return fmt.Errorf("the peak run failed %d of %d requests, first: %s", peak.Errors, total, peak.FirstError)
		}
		rate = peak.RPS / 2
	}
	d.resetStats()

	win := rssWindow(o.duration, o.warmup)
	fmt.Fprintf(stdout, "soak: %s open loop at %.0f req/s; RSS read every second, compared as the medians of %s after the %s warm-up and of the last %s\n",
		o.duration, rate, win, o.warmup, win)
	rec := &rssRecorder{}
	var wg sync.WaitGroup
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var vac *vacuumer
	if o.vacuum > 0 {
		off, err := autovacuumOff(ctx, st.DatabaseURL)
		if err != nil {
			return fmt.Errorf("autovacuum setting: %w", err)
		}
		if off {
			fmt.Fprintf(stdout, "PostgreSQL has autovacuum off: the soak runs VACUUM (ANALYZE) on its database every %s in its stead (-vacuum 0: never)\n", o.vacuum)
			vac = &vacuumer{}
			wg.Go(func() { vac.run(rctx, st.DatabaseURL, o.vacuum) })
		}
	}
	metricsBefore := scrapeAll(ctx, st.ServiceURLs)
	machineBefore := readMachine()
	t0 := time.Now()
	wg.Go(func() { rec.run(rctx, t0, time.Second, st.PIDs) })
	res, err := loadgen.RunOpen(ctx, loadgen.OpenConfig{Rate: rate, Duration: o.duration,
		Call: func(ctx context.Context) error { return d.next(ctx) },
		Progress: func(p loadgen.OpenProgress) {
			fmt.Fprintf(stdout, "  %6s  started %8d  ok %8d  errors %4d  in flight %4d  RSS %s\n",
				p.Elapsed.Round(time.Second), p.Started, p.OK, p.Errors, p.InFlight, rssLine(all, readRSS(st.PIDs())))
		}})
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	machineAfter := readMachine()
	metricsAfter := scrapeAll(ctx, st.ServiceURLs)
	// The load's last second may end before the recorder's reading of it.
	end := min(o.duration, rec.last())
	rssStart := rec.median(o.warmup, o.warmup+win)
	rssEnd := rec.median(end-win, end+time.Nanosecond)
	if vac != nil {
		fmt.Fprintln(stdout, vac)
		if vac.err != nil {
			return fmt.Errorf("vacuum: %w", vac.err)
		}
	}
	fmt.Fprintln(stdout, machineLine(machineBefore, machineAfter, res.Started))
	if err := reportTail(stdout, res, d, st.Gateway.AccessLogFile, vac.windows(), serviceRows(all, metricsBefore, metricsAfter)); err != nil {
		return err
	}
	return report(stdout, res, d, all, rssStart, rssEnd, rec.peak(), o.rssLimit)
}

// reportTail says where the open loop's slowest requests spent their time
// (tail.go): the generator's lag, per route the split of its slowest 1%,
// and per service its pool waits and GC.
func reportTail(w io.Writer, res loadgen.OpenResult, d *driver, accessLog string, vacuums []window, services []serviceRow) error {
	fmt.Fprintf(w, "\ngenerator lag (scheduled start to send): p50 %s  p99 %s  max %s\n", res.LagP50, res.LagP99, res.LagMax)
	gw, err := readAccessLog(accessLog, "soak-")
	if err != nil {
		fmt.Fprintf(w, "the gateway's access log was not read (%v): no gateway and service split\n", err)
	}
	names := make([]string, len(d.routes))
	for i, r := range d.routes {
		names[i] = r.Name
	}
	if err := printTail(w, tailRows(names, d.samples.all(), gw, vacuums)); err != nil {
		return err
	}
	return printServices(w, services)
}

// rssWindow is how long each of the two RSS readings compared lasts: a
// minute, or half of what the run leaves after the warm-up when that is
// shorter. A median over it is a process's resident memory at that time of
// the run, not that of one burst (a moment when the machine stalled the
// service and requests piled up); a leak moves it, a burst shows in the
// peak column.
func rssWindow(duration, warmup time.Duration) time.Duration {
	return min(time.Minute, (duration-warmup)/2)
}

func rssLine(services []string, rss map[string]int64) string {
	var parts []string
	for _, s := range services {
		parts = append(parts, fmt.Sprintf("%s %.0f", s, float64(rss[s])/(1<<20)))
	}
	return strings.Join(parts, " ") + " MiB"
}

func report(w io.Writer, res loadgen.OpenResult, d *driver, services []string, start, end, peak map[string]int64, limit float64) error {
	fmt.Fprintf(w, "\nrequests %d sent, %d ok, %d errors; %.0f ok req/s\n", res.Started, res.Requests, res.Errors, res.RPS)
	fmt.Fprintf(w, "latency from the scheduled start: p50 %s  p90 %s  p99 %s  max %s\n", res.P50, res.P90, res.P99, res.Max)
	if res.Errors > 0 {
		var kinds []string
		for k, n := range res.ErrorsByKind {
			kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
		}
		slices.Sort(kinds)
		fmt.Fprintf(w, "errors by kind: %s; first: %s\n", strings.Join(kinds, ", "), res.FirstError)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "route\trequests\terrors\tp50\tp99\t\n")
	for i, r := range d.routes {
		s := &d.perRoute[i]
		p50, p99 := s.percentiles()
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t\n", r.Name, s.requests.Load(), s.errors.Load(), p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if start == nil || end == nil {
		return errors.New("the RSS was not read (the run ended early)")
	}
	rows := rssRows(services, start, end, peak)
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "process\tRSS after warm-up\tRSS at the end\tgrowth\tpeak\t\n")
	for _, r := range rows {
		note := ""
		if !r.Target {
			note = " (shown only)"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%+.1f%%\t%s\t\n", r.Name, note, mib(r.Start), mib(r.End), r.Growth, mib(r.Peak))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if missed := verdict(res.Errors, rows, limit); len(missed) > 0 {
		return fmt.Errorf("targets missed:\n  %s", strings.Join(missed, "\n  "))
	}
	fmt.Fprintf(w, "targets met: 0 errors, every service's RSS grew less than %.0f%%\n", limit)
	return nil
}

// driver sends the mix's requests.
type driver struct {
	api      *loadgen.Client
	demo     *stack.Account
	routes   []route
	order    []int
	seeded   seeded
	counter  atomic.Uint64 // the next slot of order
	perRoute []routeStats
	routeN   []atomic.Uint64 // requests built per route (names stay unique)
	// samples are the open loop's successful requests, one by one
	// (tail.go).
	samples samples
}

type routeStats struct {
	requests, errors atomic.Int64
	mu               sync.Mutex
	latencies        []time.Duration // of the successful requests, from their scheduled start (open loop) or send
}

func (s *routeStats) observe(d time.Duration) {
	s.mu.Lock()
	s.latencies = append(s.latencies, d)
	s.mu.Unlock()
}

// percentiles are the p50 and p99 of the route's successful requests.
func (s *routeStats) percentiles() (p50, p99 time.Duration) {
	s.mu.Lock()
	l := slices.Clone(s.latencies)
	s.mu.Unlock()
	return percentile(l, 50), percentile(l, 99)
}

// percentile is the nearest-rank percentile (0 for no samples).
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := max((len(d)*p+99)/100, 1)
	return d[i-1]
}

func newDriver(api *loadgen.Client, demo *stack.Account, routes []route) *driver {
	return &driver{api: api, demo: demo, routes: routes, order: schedule(routes),
		perRoute: make([]routeStats, len(routes)), routeN: make([]atomic.Uint64, len(routes))}
}

func (d *driver) resetStats() {
	for i := range d.perRoute {
		d.perRoute[i].requests.Store(0)
		d.perRoute[i].errors.Store(0)
		d.perRoute[i].mu.Lock()
		d.perRoute[i].latencies = nil
		d.perRoute[i].mu.Unlock()
	}
	d.samples.reset()
}

func (d *driver) describeMix() string {
	var parts []string
	for _, r := range d.routes {
		parts = append(parts, fmt.Sprintf("%s %s (%d)", r.Method, r.Name, r.Weight))
	}
	return strings.Join(parts, ", ")
}

// next sends the next request of the schedule.
func (d *driver) next(ctx context.Context) error {
	slot := d.counter.Add(1) - 1
	return d.call(ctx, d.order[slot%uint64(len(d.order))])
}

// call sends one request of route i and checks its status. Its latency
// runs from its scheduled start in the open loop (loadgen.Scheduled), as the
// run's own percentiles do, else from its send. Each request carries the
// X-Request-Id soak-<route>-<n> (the pair's second request, "-2" after
// it), by which the report finds it in the gateway's access log.
func (d *driver) call(ctx context.Context, i int) error {
	r := d.routes[i]
	n := d.routeN[i].Add(1) - 1
	path, body := r.Build(n, &d.seeded)
	s := &d.perRoute[i]
	s.requests.Add(1)
	start := time.Now()
	scheduled := loadgen.Scheduled(ctx)
	open := !scheduled.IsZero()
	if !open {
		scheduled = start
	}
	id := "soak-" + r.Name + "-" + strconv.FormatUint(n, 10)
	answer, err := d.api.Do(loadgen.WithRequestID(ctx, id), r.Method, path, body, r.Expect)
	if err == nil && r.Then != nil {
		var method string
		var expect int
		if method, path, expect, err = r.Then(answer); err == nil {
			_, err = d.api.Do(loadgen.WithRequestID(ctx, id+"-2"), method, path, "", expect)
		}
	}
	if err != nil {
		s.errors.Add(1)
		return err
	}
	total := time.Since(scheduled)
	s.observe(total)
	if open {
		d.samples.add(sample{route: i, scheduled: scheduled, lag: start.Sub(scheduled), total: total, id: id, pair: r.Then != nil})
	}
	return nil
}

func (d *driver) login(ctx context.Context) error {
	return d.api.Login(ctx, d.demo.Email, d.demo.Password)
}

func (d *driver) relogin(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() bool {
		if err := d.login(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "soak: login again:", err)
		}
		return true
	})
}

// seed makes a web channel, an end user and n tickets through the API.
func (d *driver) seed(ctx context.Context, n int) error {
	post := func(path string, in any, out any) error {
		body, _ := json.Marshal(in)
		data, err := d.api.Do(ctx, http.MethodPost, path, string(body), http.StatusCreated)
		if err != nil {
			return err
		}
		return json.Unmarshal(data, out)
	}
	var ch struct {
		ChannelID int64 `json:"channelID"`
	}
	if err := post("/api/Channels", map[string]string{"name": "Soak web", "kind": "web"}, &ch); err != nil {
		return err
	}
	var eu struct {
		EndUserID int64 `json:"endUserID"`
	}
	if err := post("/api/EndUsers", map[string]string{"name": "Soak Customer", "email": "soak-customer@example.com"}, &eu); err != nil {
		return err
	}
	d.seeded.ChannelID, d.seeded.EndUserID = ch.ChannelID, eu.EndUserID
	for i := range n {
		var tk struct {
			TicketID int64 `json:"ticketID"`
		}
		if err := post("/api/Tickets", map[string]any{"subject": fmt.Sprintf("Seeded order %d", i),
			"channelID": ch.ChannelID, "endUserID": eu.EndUserID}, &tk); err != nil {
			return err
		}
		if tk.TicketID == 0 {
			return errors.New("POST /api/Tickets answered no ticketID")
		}
		d.seeded.TicketIDs = append(d.seeded.TicketIDs, tk.TicketID)
	}
	return nil
}

// spreadClient sends the requests over n connections of their own
// (transports cloned from c's), taken in turn, each keeping up to idle idle
// connections: an open loop has many requests in flight, and each new
// connection would cost a TLS handshake. HTTP/2 multiplexes every request
// of a transport over one connection, whose frames one goroutine reads on
// each side: n spreads them as many users' browsers would.
func spreadClient(c *http.Client, n, idle int) *http.Client {
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		return c
	}
	rr := &roundRobin{}
	for range max(n, 1) {
		t := tr.Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = idle, idle
		rr.rts = append(rr.rts, t)
	}
	cc := *c
	cc.Transport = rr
	if n <= 1 {
		cc.Transport = rr.rts[0]
	}
	return &cc
}

// roundRobin sends each request through the next of its transports.
type roundRobin struct {
	rts  []http.RoundTripper
	next atomic.Uint64
}

func (r *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	return r.rts[(r.next.Add(1)-1)%uint64(len(r.rts))].RoundTrip(req)
}
