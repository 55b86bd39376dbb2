package importer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// DurableName is the import workers' durable consumer on MAIL_IMPORT (every
// replica pulls from it; Names.Stream prefixes it).
const DurableName = contracts.DurableImportWorker

// Defaults of WorkerOptions.
const (
	DefaultConcurrency = 8
	DefaultAckWait     = 2 * time.Minute
	DefaultMaxDeliver  = 6
)

// DefaultRetry are the delays before a failed request is delivered again,
// by its delivery count (the last one repeats).
var DefaultRetry = []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}

// maxNotBeforeWait bounds the wait for a request's NotBefore, should the
// clocks of the publisher and the worker disagree by far.
const maxNotBeforeWait = 10 * time.Second

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	Runner *Runner
	// Concurrency bounds the requests (so the folders) in hand at once.
	Concurrency int
	// AckWait is how long a request may go without a sign of life before
	// JetStream delivers it again (a replica died): longer than a round's
	// slowest step, since a running import confirms progress every
	// AckWait/3.
	AckWait time.Duration
	// MaxDeliver bounds the deliveries of a request.
	MaxDeliver int
	// Retry are the delays before a failed request comes again.
	Retry []time.Duration
	Now   func() time.Time
	Log   *slog.Logger
}

// Worker consumes MAIL_IMPORT: each request is waited for until its
// NotBefore, then handed to the Runner, and acknowledged when the folder's
// import succeeded or the folder is gone.
type Worker struct {
	o WorkerOptions
}

// NewWorker fills o's defaults and returns a Worker.
func NewWorker(o WorkerOptions) *Worker {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = DefaultMaxDeliver
	}
	if len(o.Retry) == 0 {
		o.Retry = DefaultRetry
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Worker{o: o}
}

// ConsumerConfig is the durable consumer's configuration under names.
//
// JetStream's BackOff replaces AckWait for the redelivery of a request
// nobody acknowledged (a replica died mid-import): its first step is
// AckWait, so that a running import, which confirms progress every
// AckWait/3, is never delivered twice, and the later steps grow. A failed
// import is handed back at once with the shorter Retry delays.
func (w *Worker) ConsumerConfig(names contracts.Names) jetstream.ConsumerConfig {
	backoff := make([]time.Duration, 0, w.o.MaxDeliver-1)
	for i := 0; i < w.o.MaxDeliver-1; i++ {
		backoff = append(backoff, w.o.AckWait*time.Duration(1<<min(i, 4)))
	}
	return jetstream.ConsumerConfig{
		Durable:       names.Stream(DurableName),
		Description:   "import workers: folder imports into MAIL_INBOUND",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       w.o.AckWait,
		MaxDeliver:    w.o.MaxDeliver,
		BackOff:       backoff,
		MaxAckPending: 1000,
	}
}

// Run declares the consumer (again every few seconds while NATS refuses)
// and returns once it runs, or when ctx ends first. It runs on
// natsbus.Consume: Concurrency requests in hand at once, progress confirmed
// every AckWait/3, a failed request handed back after the next Retry delay;
// the bus's DrainSubscriptions stops it at shutdown, lets the imports in
// hand finish within its grace and then cancels them (handed back
// unacknowledged, so they come again).
func (w *Worker) Run(ctx context.Context, bus *natsbus.Bus) {
	for {
		_, err := natsbus.Consume(ctx, bus, bus.Names.Stream(contracts.StreamMailImport), w.ConsumerConfig(bus.Names), w.handle,
			natsbus.WithConcurrency(w.o.Concurrency), natsbus.WithProgress(), natsbus.WithRetry(w.o.Retry))
		if err == nil || ctx.Err() != nil {
			return
		}
		w.o.Log.ErrorContext(ctx, "import requests: the consumer cannot be declared", "error", err.Error())
		sleep(ctx, 3*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// handle runs one request: nil acknowledges it, ErrPermanent terminates a
// malformed one, another error hands it back (natsbus.Consume settles it).
func (w *Worker) handle(ctx context.Context, req contracts.MailImportRequest, _ jetstream.Msg) error {
	if req.FolderID <= 0 || req.CustomerID <= 0 {
		return fmt.Errorf("malformed import request: %w", natsbus.ErrPermanent)
	}
	err := w.run(ctx, req)
	if errors.Is(err, ErrDropped) {
		w.o.Log.InfoContext(ctx, "import request dropped: the folder is gone or not imported",
			"customerID", req.CustomerID, "channelID", req.ChannelID, "folderID", req.FolderID, "reason", req.Reason)
		return nil
	}
	return err
}

// run waits for the request's NotBefore, then imports.
func (w *Worker) run(ctx context.Context, req contracts.MailImportRequest) error {
	if wait := min(req.NotBefore.Sub(w.o.Now()), maxNotBeforeWait); wait > 0 {
		sleep(ctx, wait)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return w.o.Runner.Import(ctx, req.CustomerID, req.ChannelID, req.FolderID)
}
