// Command live streams each customer's events (tickets, messages, replies,
// deliveries) to that customer's open consoles as Server-Sent Events. Every
// replica follows the EVENTS stream itself, so a console may reach any
// replica (no sticky sessions).
//
//	live            serve
//	live migrate    nothing to migrate (the same deployment step for every binary)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/services/live/internal/eventstream"
	"supportplatform.dev/services/live/internal/httpapi"
	"supportplatform.dev/services/live/internal/hub"
	"supportplatform.dev/services/live/internal/streamticket"
)

// Config of the live service.
type Config struct {
	HTTPAddr string `env:"HTTP_ADDR" default:"127.0.0.1:8092" desc:"listen address of the live service"`
	config.Common
	MaxStreams            int           `env:"LIVE_MAX_STREAMS" default:"20000" desc:"open streams one replica accepts; beyond: 429"`
	MaxStreamsPerCustomer int           `env:"LIVE_MAX_STREAMS_PER_CUSTOMER" default:"2000" desc:"open streams of one customer one replica accepts; beyond: 429"`
	Buffer                int           `env:"LIVE_BUFFER" default:"64" desc:"events one stream may have waiting; a stream that falls further behind is closed (its console reconnects and resumes)"`
	Ring                  int           `env:"LIVE_RING" default:"512" desc:"recent events kept per customer for streams that resume (Last-Event-ID); older ids are read from the EVENTS stream"`
	ReplayMax             int           `env:"LIVE_REPLAY_MAX" default:"10000" desc:"most EVENTS messages read for one resuming stream; further back, the console is told to reload (event reset)"`
	TicketTTL             time.Duration `env:"LIVE_TICKET_TTL" default:"30s" desc:"lifetime of a stream ticket (single use, never beyond its token)"`
	Heartbeat             time.Duration `env:"LIVE_HEARTBEAT" default:"15s" desc:"interval of a stream's keep-alive comment and of its token's revocation check"`
}

func main() { boot.Main("live", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	cmd, err := boot.Command(args)
	if err != nil {
		return err
	}
	if cmd == "migrate" {
		fmt.Fprintln(stdout, "live has no schema: nothing to migrate")
		return nil
	}
	if cmd == "healthcheck" {
		return boot.Healthcheck(ctx, cfg.HTTPAddr, stdout)
	}
	if err := cfg.check(); err != nil {
		return err
	}
	deps, err := boot.Open(ctx, cfg.Common, boot.Options{Service: "live"}, stdout)
	if err != nil {
		return err
	}
	defer func() { _ = deps.Close() }()

	h := hub.New(hub.Limits{MaxStreams: cfg.MaxStreams, MaxStreamsPerCustomer: cfg.MaxStreamsPerCustomer,
		Buffer: cfg.Buffer, Ring: cfg.Ring})
	dropped := prometheus.NewCounter(prometheus.CounterOpts{Name: "live_streams_dropped_total",
		Help: "Streams closed because their console read too slowly."})
	h.OnDrop(dropped.Inc)
	if err := errors.Join(
		deps.Server.Registry.Register(dropped),
		deps.Server.Registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "live_streams_open",
			Help: "Open event streams of this replica."}, func() float64 { return float64(h.Streams()) })),
	); err != nil {
		return fmt.Errorf("live: metrics: %w", err)
	}

	src := eventstream.New(deps.Bus.JS, deps.Bus.Names, deps.Log)
	src.MaxScan = cfg.ReplayMax
	stop, err := src.Follow(ctx, h)
	if err != nil {
		return err
	}
	// The consumers stop once the HTTP server has.
	deps.Go(func(ctx context.Context) {
		<-ctx.Done()
		stop()
	})

	api := httpapi.New(deps.Server, h, deps.Verifier, deps.Verifier.Revocations,
		streamticket.New(deps.Redis, cfg.RedisPrefix, cfg.TicketTTL, deps.Now), src, eventstream.ErrGone)
	api.Heartbeat, api.Now, api.Closing = cfg.Heartbeat, deps.Now, ctx.Done()
	// The streams on connections taken over end at the signal too; the
	// shutdown waits for their last event.
	deps.Go(func(ctx context.Context) {
		<-ctx.Done()
		api.Wait()
	})
	api.Routes(deps.Server.Engine, deps.Auth())
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}

// check refuses settings that cannot work.
func (c Config) check() error {
	var errs []error
	for _, v := range []struct {
		name string
		n    int
	}{{"LIVE_MAX_STREAMS", c.MaxStreams}, {"LIVE_MAX_STREAMS_PER_CUSTOMER", c.MaxStreamsPerCustomer},
		{"LIVE_BUFFER", c.Buffer}, {"LIVE_RING", c.Ring}, {"LIVE_REPLAY_MAX", c.ReplayMax}} {
		if v.n <= 0 {
			errs = append(errs, fmt.Errorf("config: %s (%d) must be positive", v.name, v.n))
		}
	}
	if c.TicketTTL <= 0 || c.TicketTTL > 5*time.Minute {
		errs = append(errs, fmt.Errorf("config: LIVE_TICKET_TTL (%v) must be positive and at most 5m", c.TicketTTL))
	}
	if c.Heartbeat <= 0 || c.Heartbeat >= c.RequestTimeout {
		errs = append(errs, fmt.Errorf("config: LIVE_HEARTBEAT (%v) must be positive and below REQUEST_TIMEOUT (%v), a stream's lifetime", c.Heartbeat, c.RequestTimeout))
	}
	return errors.Join(errs...)
}
