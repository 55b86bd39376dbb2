// Command bench measures the platform through the gateway over HTTPS (make
// bench). It builds and starts the whole stack against a fresh database,
// logs in, and drives each named case with a closed-loop load generator;
// the "static" baseline is the same Traefik, TLS and rate-limit middleware
// in front of a static Go handler, so each case's ratio to it shows what the
// service itself costs.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"supportplatform.dev/deploy/loadgen"
	"supportplatform.dev/deploy/stack"
)

// staticBody is about the size of a /api/Customers/me answer.
var staticBody = []byte(`{"customer":{"customerID":1,"name":"Bench Company","createdAt":"2026-01-01T00:00:00Z"},` +
	`"account":{"accountID":1,"email":"bench@example.com","name":"Bench Admin","role":"admin","available":false}}`)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	concurrency := fs.Int("c", 32, "concurrent workers (one request in flight each)")
	duration := fs.Duration("d", 10*time.Second, "measured duration per case")
	warmup := fs.Duration("warmup", 2*time.Second, "warm-up per case, not measured")
	uncachedC := fs.Int("uncached-c", 4, "workers of the slow cases (translate-uncached, apertium-oneshot, apertium-warm); at most -c")
	all := benchCases()
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	only := fs.String("cases", "", "comma-separated case names (default: all): "+strings.Join(names, ", ")+"; "+baselineCase+" always runs")
	verbose := fs.Bool("v", false, "print the stack's logs")
	logLevel := fs.String("log-level", "info", "services' LOG_LEVEL (info logs every request, as in production)")
	natsNodes := fs.Int("nats-nodes", 1, "NATS servers: 1, or 3 for a cluster (every stream with three replicas)")
	profileDir := fs.String("profile", "", "directory: write the CPU profile of each measured case's Traefik and services there (<case>.<process>.pprof; go tool pprof)")
	sizes := fs.String("scale-sizes", "10000,100000,1000000", "tickets-scale: the customer's ticket counts, increasing")
	fs.IntVar(&scaleRequests, "scale-requests", scaleRequests, "tickets-scale: measured requests per operation and size")
	fs.IntVar(&scaleWorkers, "scale-c", scaleWorkers, "tickets-scale: concurrent workers")
	fs.IntVar(&scaleOthers, "scale-others", scaleOthers, "tickets-scale: other customers of 10,000 tickets each")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (cases are chosen with -cases)", fs.Args())
	}
	parsed, err := parseScaleSizes(*sizes)
	if err != nil {
		return err
	}
	scaleSizes = parsed
	if scaleRequests < 10 || scaleWorkers < 1 || scaleOthers < 0 {
		return errors.New("-scale-requests must be at least 10, -scale-c at least 1, -scale-others not negative")
	}
	if *concurrency < 1 || *uncachedC < 1 || *duration <= 0 || *warmup < 0 {
		return errors.New("-c and -uncached-c must be at least 1, -d positive and -warmup not negative")
	}
	cases, err := selectCases(all, *only)
	if err != nil {
		return err
	}

	root, built, err := stack.Prepare(ctx, stdout, os.Stderr)
	if err != nil {
		return err
	}

	// The static baseline handler, routed only in this run.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	static := &http.Server{Handler: staticHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = static.Serve(ln) }()
	defer static.Close()

	var logw io.Writer // nil: processes write their log files directly
	if *verbose {
		logw = os.Stderr
	}
	// With -profile every service serves its pprof on a loopback port of
	// its own (DEBUG_ADDR).
	debugAddrs := map[string]string{}
	if *profileDir != "" {
		if debugAddrs, err = loopbackAddrs(built); err != nil {
			return err
		}
	}
	st, err := stack.StartLoad(ctx, stack.LoadOptions{
		Name:     "bench",
		RepoRoot: root,
		Services: built,
		ExtraRoutes: []stack.Route{{
			Name: "bench-static",
			Rule: "PathRegexp(`" + stack.PrefixRegexp(staticPath) + "`)",
			URL:  "http://" + ln.Addr().String(),
		}},
		Log:          logw,
		LogLevel:     *logLevel,
		Env:          benchEnvVars(built, debugAddrs),
		NATSNodes:    *natsNodes,
		GatewayDebug: *profileDir != "",
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop:", err)
		}
	}()

	client := st.HTTPClient()
	api := loadgen.NewClient(client, st.HTTPSURL)
	if stack.Missing([]string{"auth"}, built) == "" {
		if err := api.Login(ctx, st.Demo.Email, st.Demo.Password); err != nil {
			return err
		}
	}

	metrics := map[string]string{}
	for name, u := range st.ServiceURLs {
		metrics[name] = u + "/metrics"
	}
	db, err := openBenchDB(ctx, st.DatabaseURL, *concurrency)
	if err != nil {
		return err
	}
	defer db.Close()
	demoEnv := &benchEnv{API: api, Graph: st.Graph, MetricsURL: metrics, DB: db, Stack: st.Stack}
	customers := &caseCustomers{demo: demoEnv, http: client, base: st.HTTPSURL, stack: st.Stack, envs: map[string]*benchEnv{}}
	slowWorkers := min(*uncachedC, *concurrency)
	fmt.Fprintf(stdout, "gateway %s, %d workers (slow cases %d), %s per case after %s warm-up, %d CPUs\n\n",
		st.HTTPSURL, *concurrency, slowWorkers, *duration, *warmup, runtime.NumCPU())

	results := map[string]loadgen.Result{}
	workers := map[string]int{}
	var order []string
	var failures []string
	var staticCPU time.Duration // the baseline's Traefik CPU per request
	var gateway []gatewayRow
	for _, c := range cases {
		if missing := stack.Missing(c.Needs, built); missing != "" {
			fmt.Fprintf(stdout, "%-18s skipped: %s not built\n", c.Name, missing)
			continue
		}
		w := *concurrency
		if c.Slow {
			w = slowWorkers
		}
		switch {
		case c.Note != "" && c.Latency != nil:
			fmt.Fprintf(stdout, "%-18s %s\n", c.Name, c.Note)
		case c.Note != "":
			fmt.Fprintf(stdout, "%-18s %d workers; %s\n", c.Name, w, c.Note)
		}
		env, err := customers.env(ctx, c.Customer)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failures = append(failures, fmt.Sprintf("case %s: customer: %v", c.Name, err))
			fmt.Fprintf(stdout, "%-18s CUSTOMER FAILED: %v\n\n", c.Name, err)
			continue
		}
		if c.Setup != nil {
			line, err := c.Setup(ctx, env)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				failures = append(failures, fmt.Sprintf("case %s: setup: %v", c.Name, err))
				fmt.Fprintf(stdout, "%-18s SETUP FAILED: %v\n\n", c.Name, err)
				continue
			}
			fmt.Fprintf(stdout, "%-18s setup: %s\n", "", line)
		}
		if c.Latency != nil {
			lines, err := c.Latency(ctx, env)
			for _, l := range lines {
				fmt.Fprintf(stdout, "%-18s %s\n", c.Name, l)
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				failures = append(failures, fmt.Sprintf("case %s: %v", c.Name, err))
				fmt.Fprintf(stdout, "%-18s FAILED: %v\n", c.Name, err)
			}
			fmt.Fprintln(stdout)
			continue
		}
		cl := c.client(client, w)
		sample, err := c.preflight(ctx, env, cl)
		var call func(context.Context) error
		if c.Direct != nil {
			call = func(ctx context.Context) error { return c.Direct(ctx, env) }
			sample, err = "one call ok", call(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failures = append(failures, fmt.Sprintf("case %s: preflight: %v", c.Name, err))
			fmt.Fprintf(stdout, "%-18s PREFLIGHT FAILED, not measured: %v\n\n", c.Name, err)
			continue
		}
		fmt.Fprintf(stdout, "%-18s preflight: %s\n", "", sample)
		var profiled chan error
		if *profileDir != "" {
			profiled = make(chan error, 1)
			go func() {
				profiled <- profileCase(ctx, c, st.Gateway.APIURL, debugAddrs, *warmup, *duration, *profileDir)
			}()
		}
		before := cpuTimes(st.PIDs(), st.Database)
		res, err := loadgen.Run(ctx, loadgen.Config{
			Concurrency:  w,
			Duration:     *duration,
			Warmup:       *warmup,
			Client:       cl,
			ExpectStatus: c.expect(),
			NewRequest:   c.request(env),
			Call:         call,
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-18s %s\n", c.Name, res)
		after := cpuTimes(st.PIDs(), st.Database)
		fmt.Fprintf(stdout, "%-18s CPU per request: %s\n", "", cpuPerRequest(before, after, res))
		if profiled != nil {
			if err := <-profiled; err != nil {
				failures = append(failures, fmt.Sprintf("case %s: profile: %v", c.Name, err))
			}
		}
		traefikCPU := perRequest(before, after, "traefik", res.Completed)
		if c.Name == baselineCase {
			staticCPU = traefikCPU
		} else if p, ok := pacingOf(res); ok && c.Direct == nil {
			row, err := pacedStatic(ctx, pacedRun{stdout: stdout, client: client, baseURL: st.HTTPSURL, traefikAPI: st.Gateway.APIURL,
				pids: st.PIDs, workers: w, warmup: *warmup, duration: *duration, profileDir: *profileDir}, c.Name, p, traefikCPU, staticCPU)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				failures = append(failures, fmt.Sprintf("case %s: static at the same rate and size: %v", c.Name, err))
			}
			gateway = append(gateway, row)
		}
		if res.FirstError != "" {
			fmt.Fprintf(stdout, "%-18s first error: %s\n", "", res.FirstError)
		}
		if c.After != nil {
			line, err := c.After(ctx, env)
			if err != nil {
				line = "FAILED: " + err.Error()
				failures = append(failures, fmt.Sprintf("case %s: after: %v", c.Name, err))
			}
			fmt.Fprintf(stdout, "%-18s %s\n", "", line)
		}
		if total := res.Requests + res.Errors; total == 0 || res.Errors*100 > total {
			failures = append(failures, fmt.Sprintf("case %s: %d ok, %d errors (%.1f%%, limit 1%%), first: %s",
				c.Name, res.Requests, res.Errors, errorRate(res), res.FirstError))
			fmt.Fprintf(stdout, "%-18s FAILED: error rate %.1f%% is above 1%%\n", "", errorRate(res))
		}
		fmt.Fprintln(stdout)
		results[c.Name] = res
		workers[c.Name] = w
		order = append(order, c.Name)
	}

	base, ok := results[baselineCase]
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "case\tworkers\treq/s\tp50\tp99\terrors\tratio to %s\t\n", baselineCase)
	for _, name := range order {
		r := results[name]
		ratio := "-"
		if ok && base.RPS > 0 {
			ratio = fmt.Sprintf("%.3f", r.RPS/base.RPS)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%d\t%s\t\n", name, workers[name], r.RPS, round(r.P50), round(r.P99), r.Errors, ratio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range cases {
		r, ok1 := results[c.Name]
		ref, ok2 := results[c.RelativeTo]
		if c.RelativeTo == "" || !ok1 || !ok2 || ref.RPS == 0 || ref.P50 == 0 {
			continue
		}
		fmt.Fprintf(stdout, "%s / %s: req/s ratio %.2f, p50 ratio %.2f, p99 ratio %.2f\n", c.Name, c.RelativeTo,
			r.RPS/ref.RPS, float64(r.P50)/float64(ref.P50), float64(r.P99)/float64(ref.P99))
	}
	if err := printGateway(stdout, gateway); err != nil {
		return err
	}
	if ok && slowWorkers != *concurrency {
		for _, c := range cases {
			if _, measured := results[c.Name]; c.Slow && measured {
				fmt.Fprintf(stdout, "note: %s ran with %d workers, the baseline with %d: its ratio compares throughputs at different concurrency\n",
					c.Name, slowWorkers, *concurrency)
			}
		}
	}
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "\n  "))
	}
	return nil
}

// selectCases keeps the cases named in list (all when empty), the baseline
// and the cases the chosen ones are compared with, in measurement order.
func selectCases(all []*benchCase, list string) ([]*benchCase, error) {
	byName := map[string]*benchCase{}
	for _, c := range all {
		byName[c.Name] = c
	}
	want := map[string]bool{baselineCase: true}
	chosen := false
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if byName[n] == nil {
			var names []string
			for _, c := range all {
				names = append(names, c.Name)
			}
			return nil, fmt.Errorf("-cases: unknown case %q (known: %s)", n, strings.Join(names, ", "))
		}
		want[n] = true
		chosen = true
	}
	for _, c := range all {
		if want[c.Name] && c.RelativeTo != "" {
			want[c.RelativeTo] = true
		}
	}
	var out []*benchCase
	for _, c := range all {
		if (!chosen && !c.Named) || want[c.Name] {
			out = append(out, c)
		}
	}
	return out, nil
}

// benchEnvVars are the services' extra variables: live holds the
// live-fanout case's 10,000 streams of the bench customer, and with
// -profile each service gets its DEBUG_ADDR.
func benchEnvVars(built []string, debugAddrs map[string]string) map[string][]string {
	env := map[string][]string{"live": {"LIVE_MAX_STREAMS_PER_CUSTOMER=20000"}}
	for _, name := range built {
		if a, ok := debugAddrs[name]; ok {
			env[name] = append(env[name], "DEBUG_ADDR="+a)
		}
	}
	return env
}

// loopbackAddrs picks a free loopback address for each service.
func loopbackAddrs(services []string) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range services {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		out[name] = ln.Addr().String()
		if err := ln.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// profileCase writes the CPU profiles of the measured duration of case c
// to dir: Traefik's (its /debug/pprof, served with api.debug) and each
// needed service's (DEBUG_ADDR), as <case>.<process>.pprof.
func profileCase(ctx context.Context, c *benchCase, traefikAPI string, debugAddrs map[string]string, warmup, duration time.Duration, dir string) error {
	select {
	case <-time.After(warmup):
	case <-ctx.Done():
		return ctx.Err()
	}
	targets := map[string]string{"traefik": traefikAPI}
	for _, name := range c.Needs {
		if a, ok := debugAddrs[name]; ok {
			targets[name] = "http://" + a
		}
	}
	errs := make(chan error, len(targets))
	for name, base := range targets {
		go func() {
			errs <- profileURL(ctx, base, duration, filepath.Join(dir, c.Name+"."+name+".pprof"))
		}()
	}
	var all []error
	for range targets {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// profileURL writes the CPU profile of duration from base's /debug/pprof
// to file.
func profileURL(ctx context.Context, base string, duration time.Duration, file string) error {
	seconds := max(1, int(duration/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, seconds), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", req.URL, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func errorRate(r loadgen.Result) float64 {
	if total := r.Requests + r.Errors; total > 0 {
		return float64(r.Errors) * 100 / float64(total)
	}
	return 100
}

// round keeps three significant digits or so of a latency.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}

// cpuTimes reads the CPU time used so far by the stack's processes, this
// process (the load generator) and the shared servers, from /proc. The
// PostgreSQL server's figure counts every database on it; stackDB counts
// apart the backends connected to the stack's database (database), which
// other users of a shared server do not touch.
func cpuTimes(pids map[string]int, database string) map[string]time.Duration {
	out := map[string]time.Duration{}
	out["bench"], _ = procCPU(os.Getpid())
	for name, pid := range pids {
		// A service's reaped children (translation's Apertium pipelines)
		// count apart.
		out[name], out[name+" children"] = procCPU(pid)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		switch name := strings.TrimSpace(string(comm)); name {
		case "postgres", "redis-server", "nats-server":
			self, _ := procCPU(pid)
			out[name] += self
			if name != "postgres" || database == "" {
				continue
			}
			if role, ok := backendOf(pid, database); ok {
				out[stackDB] += self
				out[stackDB+" "+role] += self
			}
		}
	}
	return out
}

// stackDB is cpuTimes' key of the backends of the stack's database.
const stackDB = "postgres stack db"

// backendOf reports whether the PostgreSQL process pid is a backend
// connected to database, and its role (each service connects as its own):
// its title is "postgres: [cluster: ]user database host(port) state".
func backendOf(pid int, database string) (role string, ok bool) {
	title, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "", false
	}
	return backendRole(strings.ReplaceAll(string(title), "\x00", " "), database)
}

// backendRole is the role of a backend's process title if it is connected
// to database.
func backendRole(title, database string) (role string, ok bool) {
	before, _, ok := strings.Cut(title, " "+database+" ")
	if !ok {
		return "", false
	}
	return before[strings.LastIndexByte(before, ' ')+1:], true
}

// procCPU is utime+stime of a process and cutime+cstime, the CPU of the
// children it has waited for (fields 14 to 17 of /proc/<pid>/stat, in
// clock ticks of 1/100 s on Linux).
func procCPU(pid int) (self, children time.Duration) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// The command name (field 2) may contain spaces: count from its end.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(data)[i+1:])
	if len(f) < 15 {
		return 0, 0
	}
	var ticks [4]int64
	for k := range ticks {
		ticks[k], _ = strconv.ParseInt(f[11+k], 10, 64)
	}
	const tick = 10 * time.Millisecond
	return time.Duration(ticks[0]+ticks[1]) * tick, time.Duration(ticks[2]+ticks[3]) * tick
}

func cpuPerRequest(before, after map[string]time.Duration, r loadgen.Result) string {
	total := r.Completed
	if total == 0 {
		return "-"
	}
	var parts []string
	for _, name := range []string{"traefik", "bench", "auth", "topics", "translation", "translation children", "mailingest", "renewal", "tickets", "postgres", "redis-server", "nats-server"} {
		d := after[name] - before[name]
		if d <= 0 {
			continue
		}
		label := name
		if name == "translation children" {
			label = "apertium" // the pipelines translation ran and reaped
		}
		part := fmt.Sprintf("%s %dµs", label, (d / time.Duration(total)).Microseconds())
		if db := after[stackDB] - before[stackDB]; name == "postgres" && db > 0 {
			// The shared server's figure includes what other users of it
			// did meanwhile; the stack's own backends are the case's.
			part += fmt.Sprintf(" (stack's database %dµs%s)", (db / time.Duration(total)).Microseconds(), byRole(before, after, total))
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// byRole is the stack's database's figure by the role its backends
// connected as (a service each; the bench's own for seeding), the roles of
// at least 2µs a request, largest first: ": tickets 400µs, importreply 9µs".
func byRole(before, after map[string]time.Duration, total int) string {
	type share struct {
		role string
		us   int64
	}
	var shares []share
	for k, d := range after {
		role, ok := strings.CutPrefix(k, stackDB+" ")
		if !ok {
			continue
		}
		if us := ((d - before[k]) / time.Duration(total)).Microseconds(); us >= 2 {
			shares = append(shares, share{role, us})
		}
	}
	if len(shares) == 0 {
		return ""
	}
	slices.SortFunc(shares, func(a, b share) int { return cmp.Compare(b.us, a.us) })
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = fmt.Sprintf("%s %dµs", s.role, s.us)
	}
	return ": " + strings.Join(parts, ", ")
}
