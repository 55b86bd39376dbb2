// Command importreply imports mail and sends replies for the mail context: it consumes
// folder import requests from MAIL_IMPORT, runs a Microsoft Graph delta
// query per folder and publishes one message per new mail to MAIL_INBOUND
// (attachment bytes in the MAIL_ATTACHMENTS bucket), for tickets; and it
// sends agents' replies (message.reply.sent) by mail through Graph. Any
// number may run: one import of a folder at a time across all of them (a
// PostgreSQL advisory lock per folder). Its HTTP port serves only /healthz,
// /readyz and /metrics.
//
//	importreply            serve (migrations are applied at start)
//	importreply migrate    apply migrations and exit
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/mail/internal/graph"
	"supportplatform.dev/services/mail/internal/importer"
	"supportplatform.dev/services/mail/internal/mailboxlimit"
	"supportplatform.dev/services/mail/internal/postgres"
	"supportplatform.dev/services/mail/internal/queue"
	"supportplatform.dev/services/mail/internal/replier"
)

// Config of the import worker.
type Config struct {
	HTTPAddr           string        `env:"HTTP_ADDR" default:"127.0.0.1:8088" desc:"listen address of the import worker's /healthz, /readyz and /metrics"`
	Concurrency        int           `env:"IMPORT_CONCURRENCY" default:"8" desc:"folders one replica imports at once (one import per folder at a time across all replicas)"`
	AckWait            time.Duration `env:"IMPORT_ACK_WAIT" default:"2m" desc:"how long an import request may go without a sign of life before another replica gets it (a running import confirms progress every third of it)"`
	MaxDeliver         int           `env:"IMPORT_MAX_DELIVER" default:"6" desc:"deliveries of an import request before it is given up (the folder's next request imports what it missed)"`
	Lookback           time.Duration `env:"IMPORT_LOOKBACK" default:"24h" desc:"a folder's first import (and a resync) takes the mail received within this"`
	PageSize           int           `env:"IMPORT_PAGE_SIZE" default:"50" desc:"messages per delta page asked of Graph (Prefer: odata.maxpagesize)"`
	AttachmentMaxBytes int64         `env:"ATTACHMENT_MAX_BYTES" default:"26214400" desc:"largest attachment whose bytes are imported (the tickets service's cap, 25 MiB); larger ones are listed as skipped"`
	Replies            replier.Config
	// Mailbox is Graph's per-mailbox limit, held across replicas in Redis.
	Mailbox mailboxlimit.Settings
	graph.Settings
	config.Common
}

// check refuses what cannot work.
func (c Config) check() error {
	var errs []error
	if c.Concurrency <= 0 || c.MaxDeliver < 2 || c.Lookback <= 0 || c.AttachmentMaxBytes <= 0 {
		errs = append(errs, errors.New("config: IMPORT_CONCURRENCY, IMPORT_LOOKBACK and ATTACHMENT_MAX_BYTES must be positive and IMPORT_MAX_DELIVER at least 2"))
	}
	if c.AckWait < 3*time.Second {
		errs = append(errs, errors.New("config: IMPORT_ACK_WAIT must be at least 3s"))
	}
	if c.PageSize < 1 || c.PageSize > 1000 {
		errs = append(errs, errors.New("config: IMPORT_PAGE_SIZE must be between 1 and 1000"))
	}
	if err := c.Replies.Check(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Mailbox.Check(); err != nil {
		errs = append(errs, err)
	}
	if c.ClientID != "" && c.ClientSecret == "" || c.ClientID == "" && c.ClientSecret != "" {
		errs = append(errs, errors.New("config: GRAPH_CLIENT_ID and GRAPH_CLIENT_SECRET go together"))
	}
	return errors.Join(errs...)
}

// MailGraph is what the worker does with Microsoft Graph: read folders
// (imports) and send mail (replies).
type MailGraph interface {
	importer.Graph
	replier.Sender
}

// GraphFactory builds the Graph client from the config; its mail calls
// take their mailbox slots from limiter (shared by every replica).
type GraphFactory func(cfg Config, now func() time.Time, limiter graph.MailboxLimiter) (MailGraph, error)

func main() { boot.Main("importreply", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return runWith(ctx, args, getenv, stdout, newGraph)
}

func runWith(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, graphs GraphFactory) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	// No outbox relay: mailingest relays the mail schema's outbox; the
	// store wakes it with a NOTIFY after each commit (deps.OutboxWake).
	opts := boot.Options{Service: "importreply", Schema: postgres.Schema, Migrations: postgres.Migrations()}
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
	// The imports and the replies of every replica share Graph's limits
	// per mailbox.
	limiter, err := mailboxlimit.New(deps.Redis, cfg.RedisPrefix, cfg.Mailbox, deps.Log, deps.Server.Registry)
	if err != nil {
		return err
	}
	g, err := graphs(cfg, deps.Now, limiter)
	if err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	if !cfg.Configured() {
		deps.Log.Warn("no Microsoft Graph app configured: every import fails until GRAPH_CLIENT_ID and GRAPH_CLIENT_SECRET are set")
	}
	// Either side may start first: both declare the streams.
	if _, err := queue.New(ctx, deps.Bus); err != nil {
		return err
	}
	if err := deps.Bus.EnsureMailInboundStream(ctx); err != nil {
		return err
	}
	blobs, err := importer.OpenBlobs(ctx, deps.Bus.JS, deps.Bus.Names.Stream(contracts.BucketMailAttachments), deps.Bus.Names.StreamReplicas(), deps.Log)
	if err != nil {
		return err
	}
	// A held folder lock keeps its connection for the whole import: the
	// locks get a pool of their own, one connection per concurrent import,
	// so they never starve the queries.
	// They are session locks: behind a transaction pooler the pool is
	// on DATABASE_SESSION_URL (boot.Deps.SessionPool).
	lockPool, err := deps.SessionPool(ctx, int32(cfg.Concurrency))
	if err != nil {
		return fmt.Errorf("lock pool: %w", err)
	}
	defer lockPool.Close()
	metrics, err := importer.NewMetrics(deps.Server.Registry)
	if err != nil {
		return err
	}
	im := importer.New(importer.Options{Graph: g, Blobs: blobs, Publisher: deps.Bus, Lookback: cfg.Lookback,
		PageSize: cfg.PageSize, AttachmentMaxBytes: cfg.AttachmentMaxBytes,
		MaxPayload: int(deps.Bus.NC.MaxPayload()) - 16<<10, Metrics: metrics, Now: deps.Now, Log: deps.Log})
	runner := importer.NewRunner(importer.RunnerOptions{Store: postgres.New(deps.DB, deps.Now).WithWake(deps.OutboxWake),
		Locker: postgres.NewImportLocks(lockPool), Importer: im, Metrics: metrics, Now: deps.Now, Log: deps.Log})
	worker := importer.NewWorker(importer.WorkerOptions{Runner: runner, Concurrency: cfg.Concurrency,
		AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver, Now: deps.Now, Log: deps.Log})

	if err := replierMetricsAndStart(ctx, deps, cfg, g); err != nil {
		return err
	}

	// Both consumers run on natsbus.Consume: the bus's DrainSubscriptions
	// stops them at shutdown after the HTTP server, before the pools close;
	// the imports and replies in hand finish within SHUTDOWN_GRACE or are
	// cancelled and handed back unacknowledged. Their state on /metrics
	// (jetstream_consumer_*), once declared. The import consumer is
	// declared (again while NATS refuses) once the health server listens.
	deps.Bus.WatchConsumer(deps.Bus.Names.Stream(contracts.StreamMailImport), deps.Bus.Names.Stream(importer.DurableName))
	deps.Go(func(ctx context.Context) { worker.Run(ctx, deps.Bus) })
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}

// replierMetricsAndStart starts the consumer of message.reply.sent, which
// delivers agents' replies by mail.
func replierMetricsAndStart(ctx context.Context, deps *boot.Deps, cfg Config, g MailGraph) error {
	m, err := replier.NewMetrics(deps.Server.Registry)
	if err != nil {
		return err
	}
	return replier.Start(ctx, deps.Bus, postgres.New(deps.DB, deps.Now).WithWake(deps.OutboxWake), g,
		replier.Options{Config: cfg.Replies, Metrics: m, Now: deps.Now, Log: deps.Log})
}
