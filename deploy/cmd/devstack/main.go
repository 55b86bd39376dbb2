// Command devstack runs the platform locally (make run) and prepares what
// the other make targets need.
//
//	devstack run      build, start infra, seed the demo customer, run every
//	                  service and the gateway until Ctrl-C (default)
//	devstack build    build the service binaries and Traefik into bin/
//	devstack traefik  make bin/traefik the pinned Traefik build
//	devstack infra    make sure PostgreSQL, Redis and NATS answer and that
//	                  the Debian packages the services need (and pgbouncer,
//	                  for the tests) are installed
//
// Configuration (environment, read once):
//
//	GATEWAY_PORT       HTTPS port of the gateway (default 8443)
//	GATEWAY_HTTP_PORT  plain-HTTP port, which refuses everything (default 8080)
//	DEMO_EMAIL         demo admin e-mail (default demo@example.com)
//	DEMO_PASSWORD      demo admin password (default: generated and printed)
//	DEV_DATABASE       database name (default support)
//	LOG_LEVEL          services' log level (default info)
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"supportplatform.dev/deploy/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

type config struct {
	HTTPSPort    int
	HTTPPort     int
	DemoEmail    string
	DemoPassword string // empty: generate
	Database     string
	LogLevel     string
	// GraphClientID, GraphClientSecret: a real Microsoft Graph app; empty
	// serves the fake Graph instead.
	GraphClientID     string
	GraphClientSecret string
	GraphFakePort     int
	// OTLPEndpoint (OTEL_EXPORTER_OTLP_ENDPOINT): an OTLP/HTTP collector
	// that every service and Traefik send their spans to; empty: off.
	OTLPEndpoint string
	// NATSNodes (NATS_NODES): 1, one nats-server; 3, a cluster of three
	// (stack.Options.NATSNodes).
	NATSNodes int
	// Replicas (REPLICAS) is the number of processes of every service,
	// 1 to 4, behind the gateway's health check (gateway/README.md).
	Replicas int
}

func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		HTTPSPort:         8443,
		HTTPPort:          8080,
		DemoEmail:         "demo@example.com",
		DemoPassword:      getenv("DEMO_PASSWORD"),
		GraphClientID:     getenv("GRAPH_CLIENT_ID"),
		GraphClientSecret: getenv("GRAPH_CLIENT_SECRET"),
		OTLPEndpoint:      getenv("OTEL_EXPORTER_OTLP_ENDPOINT"),
		GraphFakePort:     8090,
		Database:          "support",
		LogLevel:          "info",
		NATSNodes:         1,
		Replicas:          1,
	}
	switch v := getenv("NATS_NODES"); v {
	case "", "1":
	case "3":
		c.NATSNodes = 3
	default:
		return c, fmt.Errorf("NATS_NODES=%q: want 1 (one nats-server) or 3 (a cluster)", v)
	}
	for key, dst := range map[string]*int{"GATEWAY_PORT": &c.HTTPSPort, "GATEWAY_HTTP_PORT": &c.HTTPPort, "GRAPH_FAKE_PORT": &c.GraphFakePort} {
		if v := getenv(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				return c, fmt.Errorf("%s=%q is not a port", key, v)
			}
			*dst = n
		}
	}
	for key, dst := range map[string]*string{"DEMO_EMAIL": &c.DemoEmail, "DEV_DATABASE": &c.Database, "LOG_LEVEL": &c.LogLevel} {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	if c.HTTPSPort == c.HTTPPort {
		return c, errors.New("GATEWAY_PORT and GATEWAY_HTTP_PORT must differ")
	}
	if v := getenv("REPLICAS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 4 {
			return c, fmt.Errorf("REPLICAS=%q: want 1 to 4 processes of every service", v)
		}
		c.Replicas = n
	}
	return c, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	aptPkgs := fs.String("apt", "", "infra: extra Debian packages to install when missing (space separated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmd := "run"
	if fs.NArg() > 0 {
		cmd = fs.Arg(0)
	}
	root, err := stack.FindRepoRoot(".")
	if err != nil {
		return err
	}
	switch cmd {
	case "run":
		cfg, err := loadConfig(getenv)
		if err != nil {
			return err
		}
		return runStack(ctx, root, cfg, stdout)
	case "build":
		built, err := stack.Build(ctx, root, filepath.Join(root, "bin"), stdout)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "built %v and traefik into bin/\n", built)
		return nil
	case "traefik":
		path, err := stack.EnsureTraefik(ctx, root, stdout)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "traefik:", path)
		return nil
	case "infra":
		if err := stack.EnsureInfra(ctx); err != nil {
			return err
		}
		pkgs := slices.Concat(stack.DebPackages(), stack.TestPackages, splitFields(*aptPkgs))
		if err := stack.AptInstall(ctx, stdout, pkgs...); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "infra: postgres, redis and nats answer; packages present:", pkgs)
		return nil
	default:
		return fmt.Errorf("unknown command %q (run, build, traefik, infra)", cmd)
	}
}

func runStack(ctx context.Context, root string, cfg config, stdout io.Writer) error {
	if err := stack.EnsureInfra(ctx); err != nil {
		return err
	}
	if err := stack.AptInstall(ctx, stdout, stack.DebPackages()...); err != nil {
		return err
	}
	built, err := stack.Build(ctx, root, filepath.Join(root, "bin"), stdout)
	if err != nil {
		return err
	}
	if len(built) == 0 {
		return errors.New("no service binary could be built")
	}
	if err := stack.EnsureDatabase(ctx, cfg.Database); err != nil {
		return err
	}
	generated := cfg.DemoPassword == ""
	if generated {
		cfg.DemoPassword = randomPassword()
	}
	demo := &stack.Account{Customer: "Demo Company", Email: cfg.DemoEmail, Password: cfg.DemoPassword, Name: "Demo Admin"}
	if !contains(built, "auth") {
		demo = nil
	}
	log := stack.SyncWriter(stdout)
	mailEnv, graphNote, stopGraph, err := mailProvider(cfg, root)
	if err != nil {
		return err
	}
	defer stopGraph()
	st, err := stack.Start(ctx, stack.Options{
		RepoRoot: root,
		// Persistent: TLS material (trust var/tls/ca.pem once), the auth
		// signing key (tokens survive restarts), logs.
		DataDir:      filepath.Join(root, "var"),
		Database:     cfg.Database,
		Services:     built,
		HTTPSPort:    cfg.HTTPSPort,
		HTTPPort:     cfg.HTTPPort,
		Demo:         demo,
		Log:          log,
		LogLevel:     cfg.LogLevel,
		RedisPrefix:  "sp",
		NATSPrefix:   "sp",
		NATSNodes:    cfg.NATSNodes,
		Env:          map[string][]string{"mailingest": mailEnv, "renewal": mailEnv, "importreply": mailEnv},
		OTLPEndpoint: cfg.OTLPEndpoint,
		Replicas:     map[string]int{"*": cfg.Replicas},
	})
	if err != nil {
		return err
	}

	caFile, _ := filepath.Rel(root, st.TLS.CAFile)
	base := fmt.Sprintf("https://localhost:%d", cfg.HTTPSPort)
	fmt.Fprintln(log)
	if u := pageURL(base, "console", st.Services); u != "" {
		fmt.Fprintf(log, "  console: %s (the agent console: sign in with the login below; trust %s in the browser)\n", u, caFile)
	}
	fmt.Fprintf(log, "  Support platform is up: %s (plain HTTP on :%d is refused)\n", base, cfg.HTTPPort)
	fmt.Fprintf(log, "  services: %v, database %s (each service as its own role, sp_<schema>)\n", st.Services, cfg.Database)
	if nodes := st.NATSNodes(); len(nodes) > 1 {
		var addrs []string
		for _, n := range nodes {
			addrs = append(addrs, strings.TrimPrefix(n.ClientURL, "nats://")+" (monitoring "+n.MonitorURL+")")
		}
		fmt.Fprintf(log, "  nats:  a cluster of %d, %s; every stream with %d replicas, one user per service; passwords in var/nats/nats-0/nats.conf\n",
			len(nodes), strings.Join(addrs, ", "), st.NATSReplicas())
	} else if u, err := url.Parse(st.NATSURL); err == nil {
		fmt.Fprintf(log, "  nats:  %s, one user per service; passwords in var/nats/nats.conf\n", u.Host)
	}
	if demo != nil {
		note := ""
		if generated {
			note = " (generated; set DEMO_PASSWORD to choose one)"
		}
		fmt.Fprintf(log, "  login: %s / %s%s\n", demo.Email, demo.Password, note)
		fmt.Fprintf(log, "  try:   curl --cacert %s %s/api/Auth/login -H 'Content-Type: application/json' -d '{\"email\":\"%s\",\"password\":\"%s\"}'\n",
			caFile, base, demo.Email, demo.Password)
	}
	if u := pageURL(base, "docs", st.Services); u != "" {
		fmt.Fprintf(log, "  docs:  %s (the API reference; trust %s in the browser)\n", u, caFile)
	}
	if st.Mail != nil {
		fmt.Fprintf(log, "  mail:  auth's mails (reset links, notices) go to a local relay at %s that delivers nothing: each is printed here as [mail] lines and kept in var/logs/mail.log\n", st.Mail.Addr)
	}
	if graphNote != "" {
		fmt.Fprintf(log, "  graph: %s\n", graphNote)
	}
	if cfg.OTLPEndpoint != "" {
		fmt.Fprintf(log, "  traces: every service and the gateway export to %s (OTLP/HTTP)\n", cfg.OTLPEndpoint)
	}
	fmt.Fprintf(log, "  logs:  var/logs/*.log, gateway access log var/gateway/access.log\n  Ctrl-C stops everything.\n\n")

	<-ctx.Done()
	fmt.Fprintln(log, "stopping...")
	return st.Stop()
}

// pageURL is the address of a page service (console, docs) behind the
// gateway at base, taken from the service's route in the table; "" when
// it is not among the started services.
func pageURL(base, name string, started []string) string {
	svc, ok := stack.LookupService(name)
	if !ok || !svc.Routed() || !contains(started, svc.Name) {
		return ""
	}
	return base + svc.Prefixes[0]
}

func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// splitFields splits a package list on spaces and commas.
func splitFields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' })
}
