package importer

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
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
	DefaultGrace       = 15 * time.Second
)

// DefaultRetry are the delays before a failed request is delivered again,
// by its delivery count (the last one repeats).
var DefaultRetry = []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}

// maxNotBeforeWait bounds the wait for a request's NotBefore, should the
// clocks of the publisher and the worker disagree by far.
const maxNotBeforeWait = 10 * time.Second

// fetchWait is how long one pull for a request waits.
const fetchWait = 5 * time.Second

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
	// Grace is how long the imports in hand may finish at shutdown; after
	// it they are abandoned, not acknowledged, and come again.
	Grace time.Duration
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
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
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
// and handles requests until ctx ends; then it takes no more, lets the
// imports in hand finish within Grace, abandons the rest (not
// acknowledged, so they come again) and returns.
func (w *Worker) Run(ctx context.Context, js jetstream.JetStream, names contracts.Names) {
	var cons jetstream.Consumer
	for {
		var err error
		cons, err = js.CreateOrUpdateConsumer(ctx, names.Stream(contracts.StreamMailImport), w.ConsumerConfig(names))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		w.o.Log.ErrorContext(ctx, "import requests: the consumer cannot be declared", "error", err.Error())
		sleep(ctx, 3*time.Second)
	}
	// Imports outlive ctx by up to Grace.
	work, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	slots := make(chan struct{}, w.o.Concurrency)
	var wg sync.WaitGroup
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		msg, err := w.next(ctx, cons)
		if msg == nil {
			<-slots
			if err != nil && ctx.Err() == nil {
				w.o.Log.WarnContext(ctx, "import requests: pull failed", "error", err.Error())
				sleep(ctx, time.Second)
			}
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			w.handle(work, names, msg)
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(w.o.Grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		w.o.Log.Warn("shutdown: abandoning the imports in hand; their requests come again")
		abandon()
		<-done
	}
}

// next pulls one request; nil and no error when none came in time.
func (w *Worker) next(ctx context.Context, cons jetstream.Consumer) (jetstream.Msg, error) {
	fctx, cancel := context.WithTimeout(ctx, fetchWait)
	defer cancel()
	msg, err := cons.Next(jetstream.FetchContext(fctx))
	if err != nil {
		if fctx.Err() != nil {
			return nil, nil
		}
		return nil, err
	}
	return msg, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// handle runs one request and settles its message, under a consumer span
// that continues the trace of whoever asked for the import (the provider's
// notification through mailingest, a renewal's catch-up).
func (w *Worker) handle(ctx context.Context, names contracts.Names, msg jetstream.Msg) {
	ctx, span := natsbus.StartConsumerSpan(ctx, names, msg, names.Stream(DurableName))
	var failed error
	defer func() { natsbus.EndSpan(span, failed) }()
	var req contracts.MailImportRequest
	if err := json.Unmarshal(msg.Data(), &req); err != nil || req.FolderID <= 0 || req.CustomerID <= 0 {
		failed = errors.New("malformed import request")
		w.o.Log.ErrorContext(ctx, "malformed import request terminated", "subject", msg.Subject())
		_ = msg.Term()
		return
	}
	log := w.o.Log.With("customerID", req.CustomerID, "channelID", req.ChannelID, "folderID", req.FolderID, "reason", req.Reason)
	// Signs of life while the import runs, so that JetStream does not hand
	// the request to another replica.
	hctx, stop := context.WithCancel(ctx)
	heartbeat := make(chan struct{})
	go func() {
		defer close(heartbeat)
		tick := time.NewTicker(w.o.AckWait / 3)
		defer tick.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-tick.C:
				if err := msg.InProgress(); err != nil {
					log.WarnContext(ctx, "import request: progress not confirmed", "error", err.Error())
				}
			}
		}
	}()
	err := w.run(ctx, req)
	stop()
	<-heartbeat
	switch {
	case err == nil:
		_ = msg.Ack()
	case errors.Is(err, ErrDropped):
		log.InfoContext(ctx, "import request dropped: the folder is gone or not imported")
		_ = msg.Ack()
	case ctx.Err() != nil:
		// Shutdown: handed back for another replica (or the next start).
		_ = msg.Nak()
	default:
		failed = err
		delivered := 1
		if md, err := msg.Metadata(); err == nil && md.NumDelivered > 0 {
			delivered = int(md.NumDelivered)
		}
		if delivered >= w.o.MaxDeliver {
			log.ErrorContext(ctx, "folder import given up after its last delivery; the folder's next request imports what it missed",
				"deliveries", delivered, "error", err.Error())
		}
		_ = msg.NakWithDelay(w.o.Retry[min(delivered-1, len(w.o.Retry)-1)])
	}
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
