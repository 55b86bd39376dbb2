// Package natsbus wraps NATS and JetStream: connection with reconnects,
// idempotent stream declaration, typed event publishing, typed request/reply
// with application errors carried across, and request ids in headers.
package natsbus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/requestid"
)

// Bus is a connection plus JetStream and the deployment's names.
type Bus struct {
	NC    *nats.Conn
	JS    jetstream.JetStream
	Names contracts.Names
	log   *slog.Logger
	now   func() time.Time
}

// Connect dials NATS with unlimited reconnects and returns a Bus.
func Connect(url, clientName string, names contracts.Names, log *slog.Logger) (*Bus, error) {
	nc, err := nats.Connect(url,
		nats.Name(clientName),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.Timeout(5*time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "error", err.Error())
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("nats reconnected", "url", c.ConnectedUrl()) }),
	)
	if err != nil {
		return nil, fmt.Errorf("natsbus: connect %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("natsbus: jetstream: %w", err)
	}
	return &Bus{NC: nc, JS: js, Names: names, log: log, now: time.Now}, nil
}

// Check is a readiness probe: connected and JetStream answering.
func (b *Bus) Check(ctx context.Context) error {
	if !b.NC.IsConnected() {
		return errors.New("nats not connected")
	}
	_, err := b.JS.AccountInfo(ctx)
	return err
}

// Drain drains the connection (subscriptions finish in-flight messages).
func (b *Bus) Drain() error { return b.NC.Drain() }

// EnsureEventsStream declares the EVENTS stream (idempotent).
func (b *Bus) EnsureEventsStream(ctx context.Context) error {
	return b.EnsureStream(ctx, jetstream.StreamConfig{
		Name:     b.Names.Stream(contracts.StreamEvents),
		Subjects: []string{b.Names.Subject(contracts.EventsSubjects)},
		Storage:  jetstream.FileStorage,
		MaxAge:   7 * 24 * time.Hour,
		// Duplicate window lets event ids dedupe retried publishes.
		Duplicates: 2 * time.Minute,
	})
}

// EnsureStream creates or updates a stream.
func (b *Bus) EnsureStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	if _, err := b.JS.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("natsbus: stream %s: %w", cfg.Name, err)
	}
	return nil
}

// PublishEvent publishes a typed event on the EVENTS stream and waits for
// the stream's acknowledgement.
func PublishEvent[T any](ctx context.Context, b *Bus, eventType string, customerID int64, data T) error {
	ev := contracts.Event[T]{ID: newID(), Type: eventType, CustomerID: customerID, OccurredAt: b.now().UTC(), Data: data}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("natsbus: encode %s: %w", eventType, err)
	}
	msg := nats.NewMsg(b.Names.Subject(contracts.EventSubject(eventType)))
	msg.Data = body
	setRequestID(ctx, msg)
	if _, err := b.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(ev.ID)); err != nil {
		return fmt.Errorf("natsbus: publish %s: %w", eventType, err)
	}
	return nil
}

// Publish publishes a JSON payload to a JetStream subject with a message id
// (the stream drops duplicates of the same id inside its window).
func Publish[T any](ctx context.Context, b *Bus, subject, msgID string, payload T) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("natsbus: encode: %w", err)
	}
	msg := nats.NewMsg(subject)
	msg.Data = body
	setRequestID(ctx, msg)
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	if _, err := b.JS.PublishMsg(ctx, msg, opts...); err != nil {
		return fmt.Errorf("natsbus: publish %s: %w", subject, err)
	}
	return nil
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
// sent back as application errors (internal ones without their text).
func Serve[Req, Resp any](b *Bus, subject, queue string, fn func(ctx context.Context, req Req) (Resp, error)) (*nats.Subscription, error) {
	full := b.Names.Subject(subject)
	sub, err := b.NC.QueueSubscribe(full, queue, func(m *nats.Msg) {
		ctx := context.Background()
		if id := m.Header.Get(requestid.Header); id != "" {
			ctx = requestid.With(ctx, id)
		}
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
			}
		} else if env.Data, err = json.Marshal(resp); err != nil {
			env.Error = &replyError{Code: apperr.Internal, Message: "internal error"}
		}
		body, _ := json.Marshal(env)
		if err := m.Respond(body); err != nil {
			b.log.WarnContext(ctx, "rpc respond failed", "subject", full, "error", err.Error())
		}
	})
	if err != nil {
		return nil, fmt.Errorf("natsbus: subscribe %s: %w", full, err)
	}
	return sub, nil
}

// Request sends req and decodes the reply. No responder or a timeout is an
// Unavailable error; the responder's application errors come back as such.
func Request[Req, Resp any](ctx context.Context, b *Bus, subject string, req Req) (Resp, error) {
	var zero Resp
	body, err := json.Marshal(req)
	if err != nil {
		return zero, fmt.Errorf("natsbus: encode: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	msg := nats.NewMsg(b.Names.Subject(subject))
	msg.Data = body
	setRequestID(ctx, msg)
	reply, err := b.NC.RequestMsgWithContext(ctx, msg)
	if err != nil {
		return zero, apperr.Wrap(apperr.Unavailable, err, "a dependent service did not answer")
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

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
