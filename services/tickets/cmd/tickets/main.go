// Command tickets is the binary of the tickets context: the HTTP API of end
// users, tickets, messages and attachments, and the consumers of topic
// events, imported mails (MAIL_INBOUND) and reply delivery reports. It also
// relays the outbox rows the assistant binary writes.
//
//	tickets            serve (migrations are applied at start)
//	tickets migrate    apply migrations and exit
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/ratelimit"
	"supportplatform.dev/services/tickets/internal/assistant/engines"
	"supportplatform.dev/services/tickets/internal/httpapi"
	"supportplatform.dev/services/tickets/internal/idempotency"
	"supportplatform.dev/services/tickets/internal/lookup"
	"supportplatform.dev/services/tickets/internal/mailin"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
	"supportplatform.dev/services/tickets/internal/topicsync"
)

// Config of tickets.
type Config struct {
	HTTPAddr string `env:"HTTP_ADDR" default:"127.0.0.1:8087" desc:"listen address of the tickets service"`
	config.Common
	// The engine of the summaries (the assistant's configuration).
	engines.Config

	AttachmentMaxBytes      int64         `env:"ATTACHMENT_MAX_BYTES" default:"26214400" desc:"largest attachment file (bytes; 25 MiB): above it an upload is a 413 and nothing is kept; the upload route's body limit is this plus 64 KiB of multipart overhead (MAX_BODY_BYTES does not apply to it)"`
	AttachmentQuotaBytes    int64         `env:"ATTACHMENT_QUOTA_BYTES" default:"1073741824" desc:"attachment storage of one customer (bytes; 1 GiB), uploads and mail attachments together: an upload over it is a 413 with the figures, a mail's attachments over it are listed as skipped (reason quota); deleting attachments frees it"`
	AttachmentSweepInterval time.Duration `env:"ATTACHMENT_SWEEP_INTERVAL" default:"30s" desc:"time between rounds of the sweeper that deletes the bytes of deleted attachments (a deletion through the API also starts one at once)"`
	FeedbackLimitPerToken   int           `env:"FEEDBACK_LIMIT_PER_TOKEN" default:"30" desc:"votes through one ticket token's feedback link per FEEDBACK_LIMIT_WINDOW before 429"`
	FeedbackLimitPerIP      int           `env:"FEEDBACK_LIMIT_PER_IP" default:"300" desc:"votes through feedback links from one client IP address per FEEDBACK_LIMIT_WINDOW before 429"`
	FeedbackLimitWindow     time.Duration `env:"FEEDBACK_LIMIT_WINDOW" default:"1m" desc:"window of the feedback link's rate limits"`
	TicketRefSecret         string        `env:"TICKET_REF_SECRET" default:"" desc:"secret (at least 32 bytes) of the ticket references in reply subjects, [#<id>-<HMAC tag>]; required; the same in every replica"`
	TicketRefSecretPrevious string        `env:"TICKET_REF_SECRET_PREVIOUS" default:"" desc:"the secret before the last rotation: references signed by it are still accepted in subjects (empty: none)"`
}

func main() { boot.Main("tickets", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	if cfg.AttachmentMaxBytes < 1 || cfg.AttachmentQuotaBytes < 1 || cfg.AttachmentSweepInterval <= 0 || cfg.FeedbackLimitPerToken < 1 ||
		cfg.FeedbackLimitPerIP < 1 || cfg.FeedbackLimitWindow <= 0 {
		return errors.New("config: ATTACHMENT_MAX_BYTES, ATTACHMENT_QUOTA_BYTES, ATTACHMENT_SWEEP_INTERVAL and the FEEDBACK_LIMIT_* variables must be positive")
	}
	if err := cfg.Config.Check(cfg.RequestTimeout); err != nil {
		return err
	}
	cmd := "serve"
	if len(args) > 1 {
		cmd = args[1]
	}
	var refs *tickets.Refs
	if cmd == "serve" {
		var err error
		if refs, err = tickets.NewRefs(cfg.TicketRefSecret, cfg.TicketRefSecretPrevious); err != nil {
			return fmt.Errorf("config: TICKET_REF_SECRET and TICKET_REF_SECRET_PREVIOUS: %w", err)
		}
	}
	opts := boot.Options{Service: "tickets", Schema: postgres.Schema, Migrations: postgres.Migrations(), Outbox: true,
		// The busiest pool: at 4 connections (pgx's default on 2 CPUs) its requests
		// waited for one (make soak: p99 0.6-0.8 s against 0.2 s at 8).
		MaxConns: 8}
	switch cmd {
	case "migrate":
		return boot.Migrate(ctx, cfg.Common, opts, stdout)
	case "healthcheck":
		return boot.Healthcheck(ctx, cfg.HTTPAddr, stdout)
	case "serve":
	default:
		return fmt.Errorf("unknown command %q (serve, migrate, healthcheck)", cmd)
	}
	deps, err := boot.Open(ctx, cfg.Common, opts, stdout)
	if err != nil {
		return err
	}
	defer func() { _ = deps.Close() }()
	store := postgres.New(deps.DB, deps.Now).WithWake(deps.OutboxWake)
	idempotent := idempotency.Middleware(idempotency.Options{Redis: deps.Redis, Prefix: cfg.RedisPrefix, Service: "tickets",
		// No request runs longer than REQUEST_TIMEOUT; a claim older than
		// that belongs to a process that died.
		PendingTTL: cfg.RequestTimeout + 10*time.Second, Fail: deps.Server.Fail})
	look := lookup.New(deps.Bus)
	// Topic names follow topic.updated and topic.deleted; the bus drains
	// the consumer at shutdown.
	if err := topicsync.Start(ctx, deps.Bus, store); err != nil {
		return err
	}
	bucketLimits, _ := contracts.Limits(contracts.BucketAttachments)
	blobs, err := blob.Open(ctx, deps.Bus.JS, blob.Bucket{Name: deps.Bus.Names.Stream(contracts.BucketAttachments), Description: "attachment bytes of the tickets service",
		MaxBytes: bucketLimits.MaxBytes, Replicas: deps.Bus.Names.StreamReplicas(), Log: deps.Log})
	if err != nil {
		return err
	}
	attachments := tickets.NewAttachments(store, blobs, tickets.AttachmentOptions{
		MaxBytes:   cfg.AttachmentMaxBytes,
		QuotaBytes: cfg.AttachmentQuotaBytes,
		// An upload's bytes are collected if its metadata is not stored by
		// then; no request runs longer than REQUEST_TIMEOUT.
		GarbageDelay:  cfg.RequestTimeout + time.Minute,
		SweepInterval: cfg.AttachmentSweepInterval,
		Now:           deps.Now, Log: deps.Log,
	})
	deps.Go(attachments.RunSweeper)
	// Mail into tickets: MAIL_INBOUND from the import worker, and the
	// delivery reports of replies sent by mail. The bus drains both
	// consumers at shutdown.
	mailMetrics, err := mailin.NewMetrics(deps.Server.Registry)
	if err != nil {
		return err
	}
	importer := mailin.New(store, look, attachments,
		mailin.NewBucketSource(deps.Bus.JS, deps.Bus.Names.Stream(contracts.BucketMailAttachments)),
		mailin.Options{Metrics: mailMetrics, Refs: refs, Now: deps.Now, Log: deps.Log})
	if err := mailin.Start(ctx, deps.Bus, importer); err != nil {
		return err
	}
	if err := mailin.StartDelivery(ctx, deps.Bus, store); err != nil {
		return err
	}
	feedbackLimit := func(n int) *ratelimit.Limiter {
		return ratelimit.New(deps.Redis, cfg.RedisPrefix+"tickets:feedback:", n, cfg.FeedbackLimitWindow)
	}
	// Summaries come from the configured engine (the LLM when AI_* is set,
	// else the offline one); the current ranking of prompt documents of a
	// message without a prepared reply from the offline engine (cheap,
	// local). The assistant binary does the rest.
	summarizer, err := engines.New(cfg.Config, nil, deps.Log)
	if err != nil {
		return err
	}
	ranker, err := engines.Offline(nil)
	if err != nil {
		return err
	}
	httpapi.New(httpapi.Deps{
		EndUsers:    tickets.NewEndUsers(store),
		Tickets:     tickets.NewTickets(store, look),
		Messages:    tickets.NewMessages(store, look, deps.Now).WithRanker(ranker).WithRefs(refs),
		Attachments: attachments,
		Feedback:    tickets.NewFeedback(store, look, feedbackLimit(cfg.FeedbackLimitPerToken), feedbackLimit(cfg.FeedbackLimitPerIP)),
		Summaries:   tickets.NewSummaries(store, summarizer, deps.Now),
		Assistant:   tickets.NewAssistantFeedback(store),
	}, deps.Server).Routes(deps.Server.Engine, deps.Auth(), idempotent)
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}
