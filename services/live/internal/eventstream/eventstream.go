// Package eventstream reads the EVENTS stream for the live service: every
// replica follows the forwarded events with its own ordered consumers (one
// per filter of contracts.LiveConsumers, the only reads its NATS user is
// allowed) and hands them to the hub; a stream resuming from further back
// than the hub's ring reads that range of the stream again.
package eventstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/live/internal/hub"
)

// Source reads EVENTS.
type Source struct {
	js      jetstream.JetStream
	names   contracts.Names
	log     *slog.Logger
	stream  string
	filters []string
	// MaxScan bounds the messages one Replay reads.
	MaxScan int
	// replays bounds the Replays running at once: each opens a consumer
	// per filter, and the account's consumers are limited (a replica that
	// just started may see every console resume from before it).
	replays chan struct{}
}

// New returns a Source over js under names' prefix.
func New(js jetstream.JetStream, names contracts.Names, log *slog.Logger) *Source {
	s := &Source{js: js, names: names, log: log, stream: names.Stream(contracts.StreamEvents), MaxScan: 10_000,
		replays: make(chan struct{}, 16)}
	for _, c := range contracts.LiveConsumers {
		s.filters = append(s.filters, names.Subject(c.Filter))
	}
	return s
}

// Follow starts the ordered consumers at the stream's next sequence, tells
// the hub where it starts (hub.Start) and publishes every event to it, in
// sequence order (merger), until the returned stop is called.
func (s *Source) Follow(ctx context.Context, h *hub.Hub) (stop func(), err error) {
	st, err := s.js.Stream(ctx, s.stream)
	if err != nil {
		return nil, fmt.Errorf("live: events stream: %w", err)
	}
	last := st.CachedInfo().State.LastSeq
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &merger{hub: h, from: last, in: make(chan arrival, 1024), retry: 100 * time.Millisecond}
	var ccs []jetstream.ConsumeContext
	done := make(chan struct{})
	stop = func() {
		for _, cc := range ccs {
			cc.Stop()
		}
		cancel()
		<-done
	}
	for _, f := range s.filters {
		cons, err := s.js.OrderedConsumer(ctx, s.stream, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{f},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    last + 1,
			// An ordered consumer of a replica that is gone is removed
			// by the server soon.
			InactiveThreshold: 30 * time.Second,
		})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("live: consumer of %s: %w", f, err)
		}
		m.cons = append(m.cons, cons)
	}
	go func() {
		defer close(done)
		m.run(mctx)
	}()
	for k, cons := range m.cons {
		cc, err := cons.Consume(func(msg jetstream.Msg) {
			md, err := msg.Metadata()
			if err != nil {
				return
			}
			// An event that does not decode still counts as delivered
			// (CustomerID 0: the merger passes it).
			e, _ := s.decode(md.Sequence.Stream, msg)
			select {
			case m.in <- arrival{k: k, e: e, consumer: md.Consumer, dseq: md.Sequence.Consumer}:
			case <-mctx.Done():
			}
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("live: consume %s: %w", s.filters[k], err)
		}
		ccs = append(ccs, cc)
	}
	h.Start(last)
	return stop, nil
}

// ErrGone: the range asked for is no longer (or too much of it to read)
// in the stream; the console must reload.
var ErrGone = errors.New("live: the events after that id are no longer retained")

// Replay returns customer's events with sequences from..to (inclusive), in
// order, read from the stream with a short-lived ordered consumer per
// filter.
func (s *Source) Replay(ctx context.Context, customerID int64, from, to uint64) ([]hub.Event, error) {
	select {
	case s.replays <- struct{}{}:
		defer func() { <-s.replays }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	st, err := s.js.Stream(ctx, s.stream)
	if err != nil {
		return nil, fmt.Errorf("live: events stream: %w", err)
	}
	if state := st.CachedInfo().State; from < state.FirstSeq || to-from >= uint64(s.MaxScan) {
		return nil, ErrGone
	}
	var out []hub.Event
	scanned := 0
	for _, f := range s.filters {
		cons, err := s.js.OrderedConsumer(ctx, s.stream, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{f}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from,
			InactiveThreshold: 10 * time.Second,
		})
		if err != nil {
			return nil, fmt.Errorf("live: replay consumer of %s: %w", f, err)
		}
		err = s.scan(cons, to, &scanned, func(e hub.Event) {
			if e.CustomerID == customerID {
				out = append(out, e)
			}
		})
		if info := cons.CachedInfo(); info != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = s.js.DeleteConsumer(dctx, s.stream, info.Name)
			cancel()
		}
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return slices.CompactFunc(out, func(a, b hub.Event) bool { return a.Seq == b.Seq }), nil
}

// scan reads cons until a message after `to` or until nothing is pending
// (every message up to `to` is stored already).
func (s *Source) scan(cons jetstream.Consumer, to uint64, scanned *int, fn func(hub.Event)) error {
	for {
		batch, err := cons.FetchNoWait(256)
		if err != nil {
			return fmt.Errorf("live: replay: %w", err)
		}
		n := 0
		pending := uint64(0)
		for m := range batch.Messages() {
			n++
			*scanned++
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			pending = md.NumPending
			if md.Sequence.Stream > to {
				return nil
			}
			if e, ok := s.decode(md.Sequence.Stream, m); ok {
				fn(e)
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("live: replay: %w", err)
		}
		if n == 0 || pending == 0 {
			return nil
		}
		if *scanned > s.MaxScan {
			return ErrGone
		}
	}
}

// envelope is contracts.Event with the data left raw.
type envelope struct {
	Type       string                     `json:"type"`
	CustomerID int64                      `json:"customerID"`
	OccurredAt time.Time                  `json:"occurredAt"`
	Data       map[string]json.RawMessage `json:"data"`
}

// forwarded are the members of an event's data that a console sees: ids,
// states and counts. Texts, subjects, addresses, comments and error
// messages stay out (the console reads what it shows through the API,
// with its rights).
var forwarded = []string{"ticketID", "messageID", "endUserID", "channelID", "customerRepID", "inReplyToID",
	"status", "previousStatus", "isClosed", "senderType", "source", "topicIDs", "attempts", "modified"}

// decode projects a message; one that does not decode is logged and
// returned with its sequence only.
func (s *Source) decode(seq uint64, m jetstream.Msg) (hub.Event, bool) {
	e, err := Project(seq, m.Data())
	if err != nil {
		s.log.Warn("live: event skipped", "subject", m.Subject(), "seq", seq, "error", err.Error())
		return hub.Event{Seq: seq}, false
	}
	return e, true
}

// Project turns one EVENTS message into the console's event.
func Project(seq uint64, data []byte) (hub.Event, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return hub.Event{}, err
	}
	if env.CustomerID <= 0 || env.Type == "" {
		return hub.Event{}, errors.New("no customer or type")
	}
	out := map[string]any{"type": env.Type, "occurredAt": env.OccurredAt}
	for _, k := range forwarded {
		if v, ok := env.Data[k]; ok {
			out[k] = v
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return hub.Event{}, err
	}
	return hub.Event{Seq: seq, CustomerID: env.CustomerID, Type: env.Type, Data: b}, nil
}
