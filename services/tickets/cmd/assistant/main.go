// Command assistant is the AI assistant of the tickets context: it
// consumes ticket.message.created and the topic detection requests from
// EVENTS and, for each, detects topics, ranks prompt documents and
// prepares a reply with the configured engine, writing the results through
// the tickets store (its events go through the tickets outbox, which the
// tickets binary relays; the store wakes that relay with a NOTIFY after
// each commit). It serves /healthz, /readyz and /metrics only.
//
//	assistant            serve
//	assistant migrate    apply the tickets migrations and exit
//	assistant eval       print the offline engine's figures on the evaluation set (make bench)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"supportplatform.dev/ai/apertium"
	"supportplatform.dev/ai/mt"
	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/services/tickets/internal/assistant/engines"
	"supportplatform.dev/services/tickets/internal/assistant/eval"
	"supportplatform.dev/services/tickets/internal/assistant/worker"
	"supportplatform.dev/services/tickets/internal/lookup"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Config of the assistant.
type Config struct {
	HTTPAddr string `env:"HTTP_ADDR" default:"127.0.0.1:8089" desc:"listen address of the assistant's /healthz, /readyz and /metrics"`
	config.Common
	engines.Config
	Concurrency      int           `env:"ASSISTANT_CONCURRENCY" default:"4" desc:"events of each kind (new messages, detection requests) one assistant replica works on at once"`
	ApertiumCommand  string        `env:"APERTIUM_COMMAND" default:"apertium" desc:"the apertium executable"`
	ApertiumDataDir  string        `env:"APERTIUM_DATA_DIR" default:"/usr/share/apertium" desc:"where the installed Apertium modes are"`
	ApertiumTimeout  time.Duration `env:"APERTIUM_TIMEOUT" default:"30s" desc:"timeout of one Apertium run; must be below REQUEST_TIMEOUT"`
	ApertiumMaxProcs int           `env:"APERTIUM_MAX_PROCESSES" default:"2" desc:"concurrent Apertium processes"`
}

func main() { boot.Main("assistant", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	if err := cfg.check(); err != nil {
		return err
	}
	cmd, err := boot.Command(args, "eval")
	if err != nil {
		return err
	}
	if cmd == "healthcheck" {
		return boot.Healthcheck(ctx, cfg.HTTPAddr, stdout)
	}
	// The tickets binary applies the migrations at start; the assistant may
	// run them too (the same schema and files), so either may start first.
	opts := boot.Options{Service: "assistant", Schema: postgres.Schema, Migrations: postgres.Migrations()}
	if cmd == "migrate" {
		return boot.Migrate(ctx, cfg.Common, opts, stdout)
	}
	translator := apertium.New(apertium.Config{Command: cfg.ApertiumCommand, DataDir: cfg.ApertiumDataDir,
		Timeout: cfg.ApertiumTimeout, MaxProcesses: cfg.ApertiumMaxProcs})
	if cmd == "eval" {
		return evaluate(ctx, translator, stdout)
	}
	deps, err := boot.Open(ctx, cfg.Common, opts, stdout)
	if err != nil {
		return err
	}
	defer func() { _ = deps.Close() }()
	engine, err := newEngine(cfg, translator, deps.Log)
	if err != nil {
		return err
	}
	metrics, err := worker.NewMetrics(deps.Server.Registry)
	if err != nil {
		return err
	}
	store := postgres.New(deps.DB, deps.Now).WithWake(deps.OutboxWake)
	look := lookup.New(deps.Bus)
	w := worker.New(store, tickets.NewMessages(store, look, deps.Now), look, engine,
		worker.Options{Metrics: metrics, Log: deps.Log})
	// The bus drains both consumers at shutdown (running handlings finish
	// within SHUTDOWN_GRACE; the others are redelivered).
	if err := worker.Start(ctx, deps.Bus, w, worker.ConsumerOptions{Concurrency: cfg.Concurrency, AckWait: cfg.ackWait()}); err != nil {
		return err
	}
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}

// ackWait is how long one step of a handling (one engine call with its
// retries, each attempt AI_TIMEOUT, plus backoff) may take before the
// event is redelivered; every engine call starts with a sign of life.
func (c Config) ackWait() time.Duration {
	return time.Duration(c.AIMaxRetries+1)*(c.AITimeout+5*time.Second) + 30*time.Second
}

func (c Config) check() error {
	var errs []error
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("config: ASSISTANT_CONCURRENCY (%d) must be positive", c.Concurrency))
	}
	if c.ApertiumTimeout <= 0 || c.ApertiumMaxProcs < 1 {
		errs = append(errs, errors.New("config: APERTIUM_TIMEOUT and APERTIUM_MAX_PROCESSES must be positive"))
	}
	// No HTTP request waits on the engine here; REQUEST_TIMEOUT is still
	// the budget every upstream call is held to.
	errs = append(errs, c.Config.Check(c.RequestTimeout))
	return errors.Join(errs...)
}

// evaluate runs the offline engine on the evaluation set of package eval
// and prints its topic accuracy and prompt-document recall (make bench);
// it needs no database or NATS.
func evaluate(ctx context.Context, translator mt.Translator, stdout io.Writer) error {
	set, err := eval.Load()
	if err != nil {
		return err
	}
	engine, err := engines.Offline(translator)
	if err != nil {
		return err
	}
	res, err := eval.Evaluate(ctx, engine, set)
	if err != nil {
		return err
	}
	return res.Write(stdout)
}
