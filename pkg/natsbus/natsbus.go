// Package natsbus wraps NATS and JetStream: connection with reconnects,
// idempotent stream declaration, typed event publishing, typed request/reply
// with application errors carried across, and request ids in headers.
package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/requestid"
)

// Bus is a connection plus JetStream and the deployment's names. It keeps
// the subscriptions and consumers it makes so that shutdown can drain them
// and wait until their in-flight handlers have returned.
type Bus struct {
	NC    *nats.Conn
	JS    jetstream.JetStream
	Names contracts.Names
	log   *slog.Logger
	now   func() time.Time

	// ctx is the parent of every handler's context; Close cancels it when
	// handlers outlive the shutdown grace.
	ctx    context.Context
	cancel context.CancelFunc
	closed chan struct{} // closed by the connection's closed callback

	mu        sync.Mutex
	subs      []*nats.Subscription
	consumers []jetstream.ConsumeContext
	// slots bounds the RPC handlers running at once; inflight counts them.
	slots    chan struct{}
	inflight atomic.Int64

	metrics consumerMetrics // the consumers' state and deliveries (metrics.go)
}

// maxConcurrentHandlers bounds the RPC handlers one Bus runs at once; a
// subscription delivers its messages one by one, so each is handed to a
// goroutine of its own up to this bound.
const maxConcurrentHandlers = 64

// Connect dials NATS with unlimited reconnects and returns a Bus.
func Connect(url, clientName string, names contracts.Names, log *slog.Logger) (*Bus, error) {
	closed := make(chan struct{})
	nc, err := nats.Connect(url,
		nats.Name(clientName),
		// Replies come back under the client's own inbox prefix, the only
		// one its NATS user may subscribe to (contracts.Permissions).
		nats.CustomInboxPrefix(contracts.InboxPrefix(clientName)),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.Timeout(5*time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "error", err.Error())
			}
		}),
		// The URL carries the service's NATS password: never log it whole.
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("nats error", "subject", subject, "error", err.Error())
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("natsbus: connect: %w", redactURLError(err, url))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("natsbus: jetstream: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Bus{NC: nc, JS: js, Names: names, log: log, now: time.Now, ctx: ctx, cancel: cancel, closed: closed,
		slots: make(chan struct{}, maxConcurrentHandlers)}, nil
}

// redactURLError keeps credentials in the URL out of logs: url may list a
// cluster's servers, comma-separated, each with its credentials.
func redactURLError(err error, url string) error {
	msg := err.Error()
	redacted := false
	for _, one := range strings.Split(url, ",") {
		if u, perr := neturl.Parse(strings.TrimSpace(one)); perr == nil && u.User != nil {
			msg = strings.ReplaceAll(msg, u.User.String(), "***")
			if pw, ok := u.User.Password(); ok && pw != "" {
				msg = strings.ReplaceAll(msg, pw, "***")
			}
			redacted = true
		}
	}
	if !redacted {
		return err
	}
	return errors.New(msg)
}

func (b *Bus) track(sub *nats.Subscription, cc jetstream.ConsumeContext) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if sub != nil {
		b.subs = append(b.subs, sub)
	}
	if cc != nil {
		b.consumers = append(b.consumers, cc)
	}
}

// DrainSubscriptions stops taking new requests and messages on every
// subscription and consumer the bus made, and waits until the handlers of
// those already received have returned. When ctx ends first, the handlers'
// contexts are cancelled and it waits briefly once more.
func (b *Bus) DrainSubscriptions(ctx context.Context) error {
	b.mu.Lock()
	subs, consumers := b.subs, b.consumers
	b.subs, b.consumers = nil, nil
	b.mu.Unlock()
	for _, s := range subs {
		if err := s.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
			b.log.Warn("nats drain subscription", "subject", s.Subject, "error", err.Error())
		}
	}
	for _, c := range consumers {
		c.Drain()
	}
	// Said so that an operator (and a shutdown test) sees what the shutdown
	// waits for: RPC handlers running, consumers whose handlers have not
	// all returned.
	open := 0
	for _, c := range consumers {
		select {
		case <-c.Closed():
		default:
			open++
		}
	}
	if rpcs := b.inflight.Load(); rpcs > 0 || open > 0 {
		b.log.Info("shutdown: waiting for the handlers in hand", "rpcs", rpcs, "consumers", open)
	}
	done := func() bool {
		if b.inflight.Load() > 0 {
			return false
		}
		for _, s := range subs {
			if s.IsValid() {
				return false
			}
		}
		for _, c := range consumers {
			select {
			case <-c.Closed():
			default:
				return false
			}
		}
		return true
	}
	if waitUntil(ctx, done) {
		return nil
	}
	b.cancel()
	if waitUntil(context.Background(), done, 2*time.Second) {
		return fmt.Errorf("natsbus: handlers were cancelled after the shutdown grace: %w", ctx.Err())
	}
	return errors.New("natsbus: handlers still running after the shutdown grace")
}

// waitUntil polls done until it is true (true) or ctx ends or the optional
// limit passes (false).
func waitUntil(ctx context.Context, done func() bool, limit ...time.Duration) bool {
	var deadline <-chan time.Time
	if len(limit) > 0 {
		t := time.NewTimer(limit[0])
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return done()
		case <-deadline:
			return done()
		case <-tick.C:
		}
	}
	return true
}

// Close drains the connection (flushing what was published) and waits for
// its closed callback, at most until ctx ends; then it closes it outright.
// Call DrainSubscriptions first so that handlers have finished.
func (b *Bus) Close(ctx context.Context) error {
	defer b.cancel()
	if b.NC.IsClosed() {
		return nil
	}
	if err := b.NC.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		b.NC.Close()
		return fmt.Errorf("natsbus: drain: %w", err)
	}
	select {
	case <-b.closed:
		return nil
	case <-ctx.Done():
		b.NC.Close()
		<-b.closed
		return fmt.Errorf("natsbus: connection did not drain in time: %w", ctx.Err())
	}
}

// Check is a readiness probe: connected and JetStream answering.
func (b *Bus) Check(ctx context.Context) error {
	if !b.NC.IsConnected() {
		return errors.New("nats not connected")
	}
	_, err := b.JS.AccountInfo(ctx)
	return err
}

// EnsureEventsStream declares the EVENTS stream (idempotent).
func (b *Bus) EnsureEventsStream(ctx context.Context) error {
	return b.EnsureStream(ctx, WithLimits(jetstream.StreamConfig{
		Name:     b.Names.Stream(contracts.StreamEvents),
		Subjects: []string{b.Names.Subject(contracts.EventsSubjects)},
		Storage:  jetstream.FileStorage,
		// Duplicate window lets event ids dedupe retried publishes.
		Duplicates: 2 * time.Minute,
	}, contracts.StreamEvents))
}

// EnsureMailInboundStream declares the MAIL_INBOUND stream (idempotent): the
// import worker, which publishes to it, and tickets, which consumes it, both
// declare it, so either may start first.
func (b *Bus) EnsureMailInboundStream(ctx context.Context) error {
	return b.EnsureStream(ctx, WithLimits(jetstream.StreamConfig{
		Name:     b.Names.Stream(contracts.StreamMailInbound),
		Subjects: []string{b.Names.Subject(contracts.MailInboundSubjects)},
		// A work queue: a mail is gone once tickets has stored it.
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    jetstream.FileStorage,
		Duplicates: contracts.MailInboundDuplicates,
	}, contracts.StreamMailInbound))
}

// WithLimits returns cfg with the limits pkg/contracts gives the stream
// base (max bytes, messages, message size and age, discard policy);
// EnsureStream applies them to an existing stream too.
func WithLimits(cfg jetstream.StreamConfig, base string) jetstream.StreamConfig {
	l, ok := contracts.Limits(base)
	if !ok {
		return cfg
	}
	cfg.MaxBytes, cfg.MaxMsgs, cfg.MaxMsgSize, cfg.MaxAge = l.MaxBytes, l.MaxMsgs, l.MaxMsgSize, l.MaxAge
	cfg.Discard = jetstream.DiscardOld
	if l.DiscardNew {
		cfg.Discard = jetstream.DiscardNew
	}
	return cfg
}

// EnsureStream creates or updates a stream. Its replica count, unless cfg
// sets one, is the deployment's (Names.StreamReplicas, NATS_REPLICAS): an
// existing stream with another count is changed to it, and the change is
// logged (a stream created on one server keeps one copy until a cluster's
// services start with NATS_REPLICAS=3).
func (b *Bus) EnsureStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	if cfg.Replicas == 0 {
		cfg.Replicas = b.Names.StreamReplicas()
	}
	return RetryTransient(ctx, b.log, "stream "+cfg.Name, func(ctx context.Context) error {
		if err := ReconcileReplicas(ctx, b.JS, b.log, cfg.Name, cfg.Replicas); err != nil {
			return err
		}
		if _, err := b.JS.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("natsbus: stream %s: %w", cfg.Name, err)
		}
		return nil
	})
}

// declareBudget bounds RetryTransient: a cluster elects its leaders in
// seconds.
const declareBudget = 60 * time.Second

// RetryTransient runs a declaration (a stream, a bucket, a consumer) until
// it succeeds, fails for good, or declareBudget passes; each attempt has
// RequestTimeout. On a cluster a JetStream API request can go unanswered
// for a moment: another service declared the same stream a moment ago and
// its leader is not elected yet, or a server just went away.
func RetryTransient(ctx context.Context, log *slog.Logger, what string, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, declareBudget)
	defer cancel()
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, RequestTimeout)
		err := fn(actx)
		acancel()
		if err == nil || !(apperr.Is(Transient(err), apperr.Unavailable) || attempt < 5 && concurrentCreate(err)) {
			return err
		}
		log.Warn("nats declaration retried", "what", what, "attempt", attempt, "error", err.Error())
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// ReconcileReplicas logs, before a create-or-update gives the stream (or an
// Object Store bucket's stream) named stream want replicas, that an
// existing one has another count. A stream not there yet is no change.
func ReconcileReplicas(ctx context.Context, js jetstream.JetStream, log *slog.Logger, stream string, want int) error {
	st, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("natsbus: stream %s: %w", stream, err)
	}
	if have := st.CachedInfo().Config.Replicas; have != want {
		log.Warn("nats stream replicas reconciled", "stream", stream, "from", have, "to", want)
	}
	return nil
}

// concurrentCreate tells whether a declaration failed the way a concurrent
// creation of the same stream makes it fail: replicas of a service start
// together and declare the same streams. The server reserves a new stream's
// max_bytes before it notices that another request has just created it, so
// the loser is refused with "insufficient storage resources" (10047) when
// the two reservations do not fit the account, or finds the name in use
// (10058); the next attempt finds the stream and updates it. Other API
// errors count too (servers of other versions may word the race otherwise):
// RetryTransient tries those only five times, so a lasting one fails within
// about a second.
func concurrentCreate(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr)
}

// PublishRaw publishes data to the JetStream subject base (prefixed here)
// with a message id, so the stream drops a repeated publish inside its
// duplicate window, and waits for the stream's acknowledgement. The message
// carries the request id and, under a producer span, the trace context of
// ctx. The outbox relay is its user.
func (b *Bus) PublishRaw(ctx context.Context, base, msgID string, data []byte) error {
	if err := b.connected(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	msg := nats.NewMsg(b.Names.Subject(base))
	msg.Data = data
	ctx, span := b.startSend(ctx, msg, trace.SpanKindProducer, msgID)
	if _, err := b.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID)); err != nil {
		err = Transient(fmt.Errorf("natsbus: publish %s: %w", base, err))
		EndSpan(span, err)
		return err
	}
	span.End()
	return nil
}

// PublishBatch publishes n messages as PublishRaw does each (message(i)
// gives the i-th: the context whose request id and trace it carries, its
// subject base, message id and data), but without waiting for one
// acknowledgement before sending the next: all are sent, then the
// acknowledgements are awaited. It returns how many of the first messages,
// in order, the stream acknowledged, and the first error. One publish and
// one wait per batch instead of per message: the server handles the batch
// in one read, and the relay holds its transaction for one round trip.
func (b *Bus) PublishBatch(ctx context.Context, n int, message func(i int) (mctx context.Context, base, msgID string, data []byte)) (int, error) {
	if err := b.connected(); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	type sent struct {
		ack  jetstream.PubAckFuture
		span trace.Span
	}
	pending := make([]sent, 0, n)
	bases := make([]string, 0, n)
	var sendErr error
	for i := range n {
		mctx, base, msgID, data := message(i)
		msg := nats.NewMsg(b.Names.Subject(base))
		msg.Data = data
		_, span := b.startSend(mctx, msg, trace.SpanKindProducer, msgID)
		f, err := b.JS.PublishMsgAsync(msg, jetstream.WithMsgID(msgID))
		if err != nil {
			sendErr = Transient(fmt.Errorf("natsbus: publish %s: %w", base, err))
			EndSpan(span, sendErr)
			break
		}
		pending = append(pending, sent{f, span})
		bases = append(bases, base)
	}
	acked, firstErr := 0, error(nil)
	for i, p := range pending {
		var err error
		select {
		case <-p.ack.Ok():
		case err = <-p.ack.Err():
			err = Transient(fmt.Errorf("natsbus: publish %s: %w", bases[i], err))
		case <-ctx.Done():
			err = Transient(fmt.Errorf("natsbus: publish %s: %w", bases[i], ctx.Err()))
		}
		if err != nil {
			EndSpan(p.span, err)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		p.span.End()
		if firstErr == nil {
			acked++
		}
	}
	if firstErr == nil {
		firstErr = sendErr
	}
	return acked, firstErr
}

// replyEnvelope carries either data or an application error.
type replyEnvelope struct {
	Data  json.RawMessage `json:"data,omitempty"`
	Error *replyError     `json:"error,omitempty"`
}

type replyError struct {
	Code    apperr.Code       `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

// Serve answers requests on subject within a queue group with fn. Errors are
// sent back as application errors (internal ones without their text). The
// handler's context ends with the request's 10 s budget or when shutdown
// gives up waiting; DrainSubscriptions waits for running handlers.
func Serve[Req, Resp any](b *Bus, subject, queue string, fn func(ctx context.Context, req Req) (Resp, error)) (*nats.Subscription, error) {
	full := b.Names.Subject(subject)
	sub, err := b.NC.QueueSubscribe(full, queue, func(m *nats.Msg) {
		b.slots <- struct{}{}
		b.inflight.Add(1)
		go func() {
			defer func() { <-b.slots; b.inflight.Add(-1) }()
			serveOne(b, full, m, fn)
		}()
	})
	if err != nil {
		return nil, fmt.Errorf("natsbus: subscribe %s: %w", full, err)
	}
	b.track(sub, nil)
	// Once Serve returns the server knows the subscription, so a request
	// sent right after (readiness, tests) finds its responder.
	if err := b.NC.FlushTimeout(5 * time.Second); err != nil {
		return nil, fmt.Errorf("natsbus: subscribe %s: %w", full, err)
	}
	return sub, nil
}

func serveOne[Req, Resp any](b *Bus, full string, m *nats.Msg, fn func(ctx context.Context, req Req) (Resp, error)) {
	ctx, span := startReceived(b.ctx, full, m.Header, trace.SpanKindServer, destination(b.Names, full))
	defer span.End()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var env replyEnvelope
	var req Req
	if err := json.Unmarshal(m.Data, &req); err != nil {
		env.Error = &replyError{Code: apperr.Invalid, Message: "malformed request"}
	} else if resp, err := fn(ctx, req); err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Code != apperr.Internal {
			env.Error = &replyError{Code: ae.Code, Message: ae.Message, Fields: ae.Fields}
		} else {
			b.log.ErrorContext(ctx, "rpc failed", "subject", full, "error", err.Error())
			env.Error = &replyError{Code: apperr.Internal, Message: "internal error"}
			span.RecordError(err)
			span.SetStatus(codes.Error, "internal error")
		}
	} else if env.Data, err = json.Marshal(resp); err != nil {
		env.Error = &replyError{Code: apperr.Internal, Message: "internal error"}
	}
	if env.Error != nil {
		span.SetAttributes(attribute.String("error.type", string(env.Error.Code)))
	}
	body, _ := json.Marshal(env)
	if err := m.Respond(body); err != nil {
		b.log.WarnContext(ctx, "rpc respond failed", "subject", full, "error", err.Error())
	}
}

// RequestTimeout bounds the wait for a reply: the lookups between services
// answer in milliseconds, so a longer wait means the request or its reply
// was lost (NATS restarting) and the caller's client should try again.
const RequestTimeout = 5 * time.Second

// connected fails fast with Unavailable while the connection is down
// (reconnecting): a request or a publish would otherwise sit in the
// reconnect buffer until its deadline. The buffer stays for what must not
// be lost across a reconnect, the acknowledgements of consumed messages.
func (b *Bus) connected() error { return Connected(b.NC) }

// Connected is nil while nc is connected and an Unavailable error (503,
// retry after a second) while it is reconnecting or closed: code that
// writes to JetStream through nc directly (pkg/blob) fails fast with it.
func Connected(nc *nats.Conn) error {
	if st := nc.Status(); st != nats.CONNECTED {
		return &apperr.Error{Code: apperr.Unavailable, RetryAfterSeconds: 1,
			Err:     fmt.Errorf("natsbus: %s", st),
			Message: "the message bus is temporarily unavailable; try again later"}
	}
	return nil
}

// Transient turns the JetStream errors of a moment into an Unavailable
// error (503, retry after a second): no answer from the stream (its leader
// is being elected after a server of the cluster went away), no responders
// (no server holds the stream's leader yet), JetStream itself unavailable,
// the connection lost meanwhile, or the wait running out. A publish with a
// message id may be sent again safely. Other errors are returned as they
// are.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return err
	}
	var apiErr *jetstream.APIError
	transient := errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.As(err, &apiErr) && (apiErr.Code == 503 || apiErr.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabled)
	if !transient {
		return err
	}
	return &apperr.Error{Code: apperr.Unavailable, RetryAfterSeconds: 1, Err: err,
		Message: "the message bus is temporarily unavailable; try again later"}
}

// Request sends req and decodes the reply. No responder or a timeout is an
// Unavailable error; the responder's application errors come back as such.
// The request carries the request id and, under a client span, the trace
// context of ctx.
func Request[Req, Resp any](ctx context.Context, b *Bus, subject string, req Req) (Resp, error) {
	var zero Resp
	body, err := json.Marshal(req)
	if err != nil {
		return zero, fmt.Errorf("natsbus: encode: %w", err)
	}
	if err := b.connected(); err != nil {
		return zero, err
	}
	// A request sent just before the connection dropped gets no reply: it
	// waits at most RequestTimeout, not the caller's whole budget.
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	msg := nats.NewMsg(b.Names.Subject(subject))
	msg.Data = body
	ctx, span := b.startSend(ctx, msg, trace.SpanKindClient, "")
	resp, err := request[Resp](ctx, b, subject, msg)
	EndSpan(span, err)
	return resp, err
}

func request[Resp any](ctx context.Context, b *Bus, subject string, msg *nats.Msg) (Resp, error) {
	var zero Resp
	reply, err := b.NC.RequestMsgWithContext(ctx, msg)
	if err != nil {
		return zero, &apperr.Error{Code: apperr.Unavailable, Err: err, RetryAfterSeconds: 1,
			Message: "a dependent service did not answer; try again later"}
	}
	var env replyEnvelope
	if err := json.Unmarshal(reply.Data, &env); err != nil {
		return zero, fmt.Errorf("natsbus: malformed reply on %s: %w", subject, err)
	}
	if env.Error != nil {
		return zero, &apperr.Error{Code: env.Error.Code, Message: env.Error.Message, Fields: env.Error.Fields}
	}
	var resp Resp
	if err := json.Unmarshal(env.Data, &resp); err != nil {
		return zero, fmt.Errorf("natsbus: decode reply on %s: %w", subject, err)
	}
	return resp, nil
}

func setRequestID(ctx context.Context, msg *nats.Msg) {
	if id := requestid.From(ctx); id != "" {
		msg.Header.Set(requestid.Header, id)
	}
}
