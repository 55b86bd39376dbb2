// Command bench measures the platform through the gateway over HTTPS (make
// bench). It builds and starts the whole stack against a fresh database,
// logs in, and drives each named case with a closed-loop load generator;
// the "static" baseline is the same Traefik, TLS and rate-limit middleware
// in front of a static Go handler, so each case's ratio to it shows what the
// service itself costs.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"supportplatform.dev/deploy/loadgen"
	"supportplatform.dev/deploy/stack"
)

// benchCase is one measured request. New endpoints are new entries.
type benchCase struct {
	Name   string
	Method string
	Path   string
	Body   string // JSON, sent with Content-Type application/json
	Auth   bool   // send the demo account's bearer token
	Expect int    // status of a successful response (default 200)
	// Services the case needs; it is skipped when one was not built.
	Needs []string
}

const baselineCase = "static"

var cases = []benchCase{
	{Name: baselineCase, Method: http.MethodGet, Path: "/bench/static"},
	{Name: "customers-me", Method: http.MethodGet, Path: "/api/Customers/me", Auth: true, Needs: []string{"auth"}},
	// Next: {Name: "topics-list", Method: http.MethodGet, Path: "/api/Topics", Auth: true, Needs: []string{"topics"}},
	// and the translation endpoints, once their services exist.
}

// staticBody is about the size of a /api/Customers/me answer.
var staticBody = []byte(`{"customer":{"customerID":1,"name":"Bench Company","createdAt":"2026-01-01T00:00:00Z"},` +
	`"account":{"accountID":1,"email":"bench@example.com","name":"Bench Admin","role":"admin"}}`)

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
	only := fs.String("cases", "", "comma-separated case names (default: all)")
	verbose := fs.Bool("v", false, "print the stack's logs")
	logLevel := fs.String("log-level", "info", "services' LOG_LEVEL (info logs every request, as in production)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	root, err := stack.FindRepoRoot(".")
	if err != nil {
		return err
	}
	if err := stack.EnsureInfra(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "building...")
	built, err := stack.Build(ctx, root, filepath.Join(root, "bin"), os.Stderr)
	if err != nil {
		return err
	}

	// The static baseline handler, routed only in this run.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	static := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(staticBody)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = static.Serve(ln) }()
	defer static.Close()

	demo := &stack.Account{Customer: "Bench Company", Email: "bench@example.com", Password: "bench-" + randomHex(12), Name: "Bench Admin"}
	var logw io.Writer // nil: processes write their log files directly
	if *verbose {
		logw = os.Stderr
	}
	st, err := stack.Start(ctx, stack.Options{
		RepoRoot: root,
		Services: built,
		Demo:     demo,
		// The gateway's limit stays on the path (same middleware as in
		// production) but far above what the generator can send.
		RateLimit: stack.RateLimit{Average: 1_000_000, Period: time.Second, Burst: 1_000_000},
		ExtraRoutes: []stack.Route{{
			Name: "bench-static",
			Rule: "PathRegexp(`" + stack.PrefixRegexp("/bench/static") + "`)",
			URL:  "http://" + ln.Addr().String(),
		}},
		Log:      logw,
		LogLevel: *logLevel,
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop:", err)
		}
	}()

	client := st.HTTPClient()
	var token string
	if missingServices([]string{"auth"}, built) == "" {
		if token, err = login(ctx, client, st.HTTPSURL, demo); err != nil {
			return err
		}
	}

	selected := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			selected[n] = true
		}
	}
	fmt.Fprintf(stdout, "gateway %s, %d workers, %s per case after %s warm-up, %d CPUs\n\n",
		st.HTTPSURL, *concurrency, *duration, *warmup, runtime.NumCPU())

	results := map[string]loadgen.Result{}
	var order []string
	for _, c := range cases {
		if len(selected) > 0 && !selected[c.Name] && c.Name != baselineCase {
			continue
		}
		if missing := missingServices(c.Needs, built); missing != "" {
			fmt.Fprintf(stdout, "%-14s skipped: %s not built\n", c.Name, missing)
			continue
		}
		before := cpuTimes(st.PIDs())
		res, err := loadgen.Run(ctx, loadgen.Config{
			Concurrency:  *concurrency,
			Duration:     *duration,
			Warmup:       *warmup,
			Client:       client,
			ExpectStatus: c.Expect,
			NewRequest:   c.request(st.HTTPSURL, token),
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-14s %s\n", c.Name, res)
		fmt.Fprintf(stdout, "%-14s CPU per request: %s\n", "", cpuPerRequest(before, cpuTimes(st.PIDs()), res))
		if res.FirstError != "" {
			fmt.Fprintf(stdout, "%-14s first error: %s\n", "", res.FirstError)
		}
		results[c.Name] = res
		order = append(order, c.Name)
	}

	base, ok := results[baselineCase]
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\treq/s\tp50\tp99\terrors\tratio to static\t")
	for _, name := range order {
		r := results[name]
		ratio := "-"
		if ok && base.RPS > 0 {
			ratio = fmt.Sprintf("%.2f", r.RPS/base.RPS)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%d\t%s\t\n", name, r.RPS, r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Errors, ratio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for name, r := range results {
		if r.Requests == 0 || r.Errors*100 > r.Requests {
			return fmt.Errorf("case %s: %d ok, %d errors (first: %s)", name, r.Requests, r.Errors, r.FirstError)
		}
	}
	return nil
}

func (c benchCase) request(baseURL, token string) func(context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		var body io.Reader
		if c.Body != "" {
			body = strings.NewReader(c.Body)
		}
		req, err := http.NewRequestWithContext(ctx, c.Method, baseURL+c.Path, body)
		if err != nil {
			return nil, err
		}
		if c.Body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.Auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return req, nil
	}
}

func login(ctx context.Context, client *http.Client, baseURL string, a *stack.Account) (string, error) {
	body, _ := json.Marshal(map[string]string{"email": a.Email, "password": a.Password})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/api/Auth/login", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("login: %s: %s", resp.Status, data)
	}
	var tok struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.Unmarshal(data, &tok); err != nil || tok.AccessToken == "" {
		return "", errors.New("login: no accessToken in " + string(data))
	}
	return tok.AccessToken, nil
}

func missingServices(needs, built []string) string {
	var missing []string
	for _, n := range needs {
		found := false
		for _, b := range built {
			found = found || b == n
		}
		if !found {
			missing = append(missing, n)
		}
	}
	return strings.Join(missing, ", ")
}

// cpuTimes reads the CPU time used so far by the stack's processes, this
// process (the load generator) and the shared servers, from /proc.
func cpuTimes(pids map[string]int) map[string]time.Duration {
	out := map[string]time.Duration{"bench": procCPU(os.Getpid())}
	for name, pid := range pids {
		out[name] = procCPU(pid)
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
			out[name] += procCPU(pid)
		}
	}
	return out
}

// procCPU is utime+stime of a process (fields 14 and 15 of
// /proc/<pid>/stat, in clock ticks of 1/100 s on Linux).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may contain spaces: count from its end.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data)[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func cpuPerRequest(before, after map[string]time.Duration, r loadgen.Result) string {
	total := r.Completed
	if total == 0 {
		return "-"
	}
	var parts []string
	for _, name := range []string{"traefik", "bench", "auth", "topics", "translation", "postgres", "redis-server", "nats-server"} {
		d := after[name] - before[name]
		if d <= 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %dµs", name, (d/time.Duration(total)).Microseconds()))
	}
	return strings.Join(parts, ", ")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
