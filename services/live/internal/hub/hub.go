// Package hub fans the events of each customer out to that customer's open
// streams, and keeps a ring of each customer's recent events so that a
// stream resuming after a reconnect (Last-Event-ID) gets what it missed.
//
// A stream holds the events it has not taken yet (nothing while idle, so
// that 10,000 idle streams cost no event buffers) under a lock of its own,
// so that a thousand streams taking one event do not queue on the hub's,
// and a wake-up function of its owner's (no channel, no goroutine waiting
// on one). Nothing here blocks on a stream: one that falls more than
// Limits.Buffer events behind is dropped.
package hub

import (
	"sync"

	"supportplatform.dev/pkg/apperr"
)

// Event is one event as the consoles see it.
type Event struct {
	// Seq is the event's sequence in the EVENTS stream: the SSE id.
	Seq        uint64
	CustomerID int64
	Type       string
	// Data is the SSE data: small JSON without message texts or addresses.
	Data []byte
}

// Limits bound the hub.
type Limits struct {
	// MaxStreams open on this replica, and per customer.
	MaxStreams            int
	MaxStreamsPerCustomer int
	// Buffer is the events one stream may have waiting; beyond it the
	// stream is dropped.
	Buffer int
	// Ring is the number of recent events kept per customer.
	Ring int
}

// Hub is safe for concurrent use.
type Hub struct {
	lim Limits

	mu        sync.Mutex
	customers map[int64]*customer
	streams   int
	// started: the hub has seen every event after seq `from` (Start).
	started bool
	from    uint64
	// closed: the service shuts down; every stream is told to end.
	closed  bool
	dropped func()
}

type customer struct {
	subs map[*Sub]struct{}
	// ring holds the customer's latest events in sequence order.
	ring []Event
	// evicted is the highest sequence dropped from the ring (0: none).
	evicted uint64
}

// New returns a hub that serves no stream until Start.
func New(lim Limits) *Hub {
	return &Hub{lim: lim, customers: map[int64]*customer{}}
}

// OnDrop sets a function called for every stream dropped as too slow
// (a metric).
func (h *Hub) OnDrop(fn func()) {
	h.mu.Lock()
	h.dropped = fn
	h.mu.Unlock()
}

// Start tells the hub that it will see every event with a sequence above
// from (its consumers start there).
func (h *Hub) Start(from uint64) {
	h.mu.Lock()
	h.started, h.from = true, from
	h.mu.Unlock()
}

// Ready reports whether Start was called.
func (h *Hub) Ready() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started
}

// Streams is the number of open streams.
func (h *Hub) Streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams
}

// Publish records e in its customer's ring and hands it to every open
// stream of that customer, never waiting: a stream with Buffer events not
// taken is dropped. Events come in sequence order (the merger of
// eventstream); one not after the customer's latest is ignored.
func (h *Hub) Publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.customer(e.CustomerID)
	if n := len(c.ring); n > 0 && c.ring[n-1].Seq >= e.Seq {
		return
	}
	if len(c.ring) == h.lim.Ring {
		c.evicted = c.ring[0].Seq
		// Shift in place: the ring's array is reused.
		copy(c.ring, c.ring[1:])
		c.ring = c.ring[:len(c.ring)-1]
	}
	c.ring = append(c.ring, e)
	for s := range c.subs {
		s.mu.Lock()
		full := len(s.pending) >= h.lim.Buffer
		if full {
			s.state = Dropped
		} else {
			s.pending = append(s.pending, e)
		}
		s.mu.Unlock()
		if full {
			h.remove(c, s)
			if h.dropped != nil {
				h.dropped()
			}
		}
		s.wake()
	}
}

// Close tells every stream, and every stream opened from now on, to end
// (state Closed): the service shuts down.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, c := range h.customers {
		for s := range c.subs {
			s.mu.Lock()
			s.state = Closed
			s.mu.Unlock()
			s.wake()
		}
	}
}

func (h *Hub) customer(id int64) *customer {
	c := h.customers[id]
	if c == nil {
		c = &customer{subs: map[*Sub]struct{}{}}
		h.customers[id] = c
	}
	return c
}

// remove unregisters s; h.mu is held.
func (h *Hub) remove(c *customer, s *Sub) {
	if _, ok := c.subs[s]; !ok {
		return
	}
	delete(c.subs, s)
	h.streams--
}

// State is what a stream is to do besides sending its events.
type State uint8

const (
	// Open: go on.
	Open State = iota
	// Dropped: the stream fell more than Limits.Buffer events behind and
	// was removed; it ends (its console reconnects and resumes).
	Dropped
	// Closed: the service shuts down; the stream ends.
	Closed
)

// Sub is one open stream.
type Sub struct {
	h          *Hub
	customerID int64
	// wake is its owner's: called, without waiting, under the hub's lock,
	// when there is something to Take (events, or a state other than Open).
	wake func()

	mu sync.Mutex
	// pending are the events not taken yet.
	pending []Event
	state   State
}

// Take returns the events published since the last Take, in sequence
// order, and the stream's state.
func (s *Sub) Take() ([]Event, State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.pending
	s.pending = nil
	return out, s.state
}

// Close unregisters the stream.
func (s *Sub) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if c := s.h.customers[s.customerID]; c != nil {
		s.h.remove(c, s)
	}
}

// Resume is what a stream resuming after sequence After must send before
// its live events.
type Resume struct {
	// StreamFrom..StreamTo (inclusive) is a range the ring does not cover:
	// read it from the EVENTS stream. StreamFrom 0: nothing to read.
	StreamFrom, StreamTo uint64
	// Ring are the events after the range, from the ring.
	Ring []Event
}

// Subscribe opens a stream of customer's events; wake is called (under the
// hub's lock: it must not wait, nor call the hub) whenever the stream has
// something to Take. With after > 0 (a Last-Event-ID) it also returns what
// the stream missed after that sequence; registering and taking the ring
// happen under one lock, so that no event falls between the replay and the
// live events. Over the limits it is a RateLimited error, before Start
// Unavailable. After Close a stream still opens, Closed: its console is
// told to reconnect (to another replica).
func (h *Hub) Subscribe(customerID int64, after uint64, wake func()) (*Sub, Resume, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.started {
		return nil, Resume{}, apperr.E(apperr.Unavailable, "the live service is starting; try again shortly")
	}
	if h.streams >= h.lim.MaxStreams {
		return nil, Resume{}, &apperr.Error{Code: apperr.RateLimited, RetryAfterSeconds: 5,
			Message: "this live service replica has as many open streams as it allows; try again shortly"}
	}
	c := h.customer(customerID)
	if len(c.subs) >= h.lim.MaxStreamsPerCustomer {
		return nil, Resume{}, &apperr.Error{Code: apperr.RateLimited, RetryAfterSeconds: 5,
			Message: "your organisation has as many open live streams as allowed; close another console first"}
	}
	s := &Sub{h: h, customerID: customerID, wake: wake}
	if h.closed {
		s.state = Closed
	}
	c.subs[s] = struct{}{}
	h.streams++
	var r Resume
	if after > 0 {
		// The ring holds every event of the customer after `covered`.
		covered := max(h.from, c.evicted)
		if after < covered {
			r.StreamFrom, r.StreamTo = after+1, covered
		}
		for _, e := range c.ring {
			if e.Seq > after && e.Seq > r.StreamTo {
				r.Ring = append(r.Ring, e)
			}
		}
	}
	return s, r, nil
}
