// Command tickets is the HTTP binary of the tickets context: the EndUsers
// API (tickets and their messages come next).
//
//	tickets            serve (migrations are applied at start)
//	tickets migrate    apply migrations and exit
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/idempotency"
	"supportplatform.dev/services/tickets/internal/httpapi"
	"supportplatform.dev/services/tickets/internal/lookup"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
	"supportplatform.dev/services/tickets/internal/topicsync"
)

// Config of tickets.
type Config struct {
	HTTPAddr string `env:"HTTP_ADDR" default:"127.0.0.1:8087" desc:"listen address of the tickets service"`
	config.Common
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tickets:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	cmd := "serve"
	if len(args) > 1 {
		cmd = args[1]
	}
	opts := boot.Options{Service: "tickets", Schema: postgres.Schema, Migrations: postgres.Migrations(), Outbox: true}
	switch cmd {
	case "migrate":
		return boot.Migrate(ctx, cfg.Common, opts, stdout)
	case "serve":
	default:
		return fmt.Errorf("unknown command %q (serve, migrate)", cmd)
	}
	deps, err := boot.Open(ctx, cfg.Common, opts, stdout)
	if err != nil {
		return err
	}
	defer func() { _ = deps.Close() }()
	store := postgres.New(deps.DB, deps.Now)
	idempotent := idempotency.Middleware(idempotency.Options{Redis: deps.Redis, Prefix: cfg.RedisPrefix, Service: "tickets",
		// No request runs longer than REQUEST_TIMEOUT; a claim older than
		// that belongs to a process that died.
		PendingTTL: cfg.RequestTimeout + 10*time.Second, Fail: deps.Server.Fail})
	look := lookup.New(deps.Bus)
	_ = look
	// Topic names follow topic.updated and topic.deleted; the bus drains
	// the consumer at shutdown.
	if err := topicsync.Start(ctx, deps.Bus, store); err != nil {
		return err
	}
	httpapi.New(httpapi.Deps{
		EndUsers: tickets.NewEndUsers(store),
		Tickets:  tickets.NewTickets(store, look),
		Messages: tickets.NewMessages(store, look, deps.Now),
	}, deps.Server).Routes(deps.Server.Engine, deps.Auth(), idempotent)
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}
