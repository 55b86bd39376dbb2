// Command renewal is the mail context's subscription job: it renews the
// provider subscriptions of channel folders before they expire, re-creates
// the ones the provider has deleted, creates the missing ones and deletes
// the retired ones, every RENEWAL_INTERVAL. Its HTTP port serves only
// /healthz, /readyz and /metrics. Several may run at once: folders are
// claimed under row locks.
//
//	renewal            serve (migrations are applied at start)
//	renewal migrate    apply migrations and exit
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/services/mail/internal/graph"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
)

// Config of the renewal job.
type Config struct {
	HTTPAddr      string        `env:"HTTP_ADDR" default:"127.0.0.1:8086" desc:"listen address of the renewal job's /healthz, /readyz and /metrics"`
	Interval      time.Duration `env:"RENEWAL_INTERVAL" default:"1m" desc:"time between renewal rounds"`
	Window        time.Duration `env:"RENEWAL_WINDOW" default:"1h" desc:"subscriptions expiring within this are renewed"`
	Lifetime      time.Duration `env:"MAIL_SUBSCRIPTION_LIFETIME" default:"70h" desc:"lifetime asked for a provider subscription (Graph allows at most 4,230 minutes for messages; the expiry Graph returns is stored)"`
	PublicBaseURL string        `env:"PUBLIC_BASE_URL" default:"" desc:"public HTTPS address of the backend; notifications go to it followed by /api/providerwebhook (required)"`
	graph.Settings
	config.Common
}

// check refuses what would make every subscription fail.
func (c Config) check() error {
	var errs []error
	if err := mail.CheckPublicBaseURL(c.PublicBaseURL); err != nil {
		errs = append(errs, err)
	}
	if c.Interval <= 0 || c.Window <= 0 || c.Lifetime <= c.Window {
		errs = append(errs, errors.New("config: RENEWAL_INTERVAL and RENEWAL_WINDOW must be positive and MAIL_SUBSCRIPTION_LIFETIME longer than the window"))
	}
	return errors.Join(errs...)
}

// ProviderFactory builds the mail provider from the config.
type ProviderFactory func(cfg Config, now func() time.Time) (mail.Provider, error)

func main() { boot.Main("renewal", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return runWith(ctx, args, getenv, stdout, newProvider)
}

func runWith(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, providers ProviderFactory) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	// No outbox relay: this job publishes nothing (renewal may not publish
	// channel events); mailingest relays the mail schema's outbox, woken by
	// the NOTIFY the store sends after each commit (deps.OutboxWake).
	opts := boot.Options{Service: "renewal", Schema: postgres.Schema, Migrations: postgres.Migrations()}
	cmd, err := boot.Command(args)
	if err != nil {
		return err
	}
	if cmd == "healthcheck" {
		return boot.Healthcheck(ctx, cfg.HTTPAddr, stdout)
	}
	if cmd == "migrate" {
		return boot.Migrate(ctx, cfg.Common, opts, stdout)
	}
	if err := cfg.check(); err != nil {
		return err
	}
	deps, err := boot.Open(ctx, cfg.Common, opts, stdout)
	if err != nil {
		return err
	}
	defer func() { _ = deps.Close() }()
	provider, err := providers(cfg, deps.Now)
	if err != nil {
		return fmt.Errorf("mail provider: %w", err)
	}
	metrics, err := mail.NewSubscriptionMetrics(deps.Server.Registry)
	if err != nil {
		return err
	}
	store := postgres.New(deps.DB, deps.Now).WithWake(deps.OutboxWake)
	svc := mail.NewSubscriptionService(mail.SubscriptionOptions{Store: store, Provider: provider,
		PublicBaseURL: cfg.PublicBaseURL, Lifetime: cfg.Lifetime, CreateTimeout: cfg.CreateTimeout, Metrics: metrics,
		Now: deps.Now, Log: deps.Log})
	renewer := mail.NewRenewer(store, svc, mail.RenewerOptions{Window: cfg.Window})

	// The renewer starts once the health server listens (Serve closes
	// everything when it cannot) and stops before Serve closes the pools:
	// the HTTP server is told to stop only after the renewer has finished
	// the folder in hand.
	renewCtx, stopRenewer := context.WithCancel(ctx)
	defer stopRenewer()
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	renewerDone := make(chan struct{})
	out := &onListening{w: stdout, fn: func() {
		go func() {
			defer close(renewerDone)
			defer stopServing()
			renewer.Run(renewCtx, cfg.Interval)
		}()
	}}
	err = deps.Serve(serveCtx, cfg.HTTPAddr, out)
	// Serve returns on its own only on a server error: stop the renewer
	// too (the pools are closed by now, so its round fails fast).
	stopRenewer()
	if out.started() {
		<-renewerDone
	}
	return err
}

// onListening passes output through and calls fn when the server reports
// that it listens.
type onListening struct {
	w    io.Writer
	fn   func()
	mu   sync.Mutex
	seen bool
}

func (o *onListening) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), "listening on ") {
		o.mu.Lock()
		first := !o.seen
		o.seen = true
		o.mu.Unlock()
		if first {
			o.fn()
		}
	}
	return o.w.Write(p)
}

func (o *onListening) started() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen
}
