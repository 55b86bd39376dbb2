package hub_test

import (
	"sync"
	"testing"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/services/live/internal/hub"
)

func ev(seq uint64, customer int64) hub.Event {
	return hub.Event{Seq: seq, CustomerID: customer, Type: "ticket.created", Data: []byte(`{}`)}
}

func started(lim hub.Limits) *hub.Hub {
	h := hub.New(lim)
	h.Start(0)
	return h
}

var roomy = hub.Limits{MaxStreams: 100, MaxStreamsPerCustomer: 10, Buffer: 8, Ring: 8}

// waker is a stream's wake-up function that records its calls on a
// channel of one slot, as the HTTP/2 stream does.
type waker chan struct{}

func newWaker() waker { return make(waker, 1) }

func (w waker) wake() {
	select {
	case w <- struct{}{}:
	default:
	}
}

// woken reports whether the stream was woken since the last call.
func (w waker) woken() bool {
	select {
	case <-w:
		return true
	default:
		return false
	}
}

// sub subscribes with a new waker.
func sub(t *testing.T, h *hub.Hub, customer int64, after uint64) (*hub.Sub, waker, hub.Resume) {
	t.Helper()
	w := newWaker()
	s, r, err := h.Subscribe(customer, after, w.wake)
	if err != nil {
		t.Fatal(err)
	}
	return s, w, r
}

// A stream whose buffer is full is dropped at once; the other streams of
// the customer get every event, and Publish never waits for the slow one.
func TestSlowStreamIsDroppedWithoutBlockingOthers(t *testing.T) {
	var drops int
	h := started(hub.Limits{MaxStreams: 10, MaxStreamsPerCustomer: 10, Buffer: 2, Ring: 8})
	h.OnDrop(func() { drops++ })
	slow, slowWake, _ := sub(t, h, 1, 0)
	fast, fastWake, _ := sub(t, h, 1, 0)
	for seq := uint64(1); seq <= 5; seq++ {
		h.Publish(ev(seq, 1)) // returns although slow takes nothing
		if !fastWake.woken() {
			t.Fatalf("event %d did not wake the fast stream", seq)
		}
		if got, state := fast.Take(); len(got) != 1 || got[0].Seq != seq || state != hub.Open {
			t.Fatalf("fast got %v (state %d), want %d", got, state, seq)
		}
	}
	if !slowWake.woken() {
		t.Fatal("the slow stream was not woken")
	}
	if _, state := slow.Take(); state != hub.Dropped {
		t.Fatalf("the slow stream's state is %d, want dropped", state)
	}
	if drops != 1 || h.Streams() != 1 {
		t.Fatalf("%d drops, %d streams open; want 1 and 1", drops, h.Streams())
	}
	slow.Close() // after the drop: nothing to undo
	if h.Streams() != 1 {
		t.Fatalf("%d streams after closing the dropped one", h.Streams())
	}
}

// A customer's stream gets that customer's events and no other's.
func TestEventsReachOnlyTheirCustomer(t *testing.T) {
	h := started(roomy)
	a, aWake, _ := sub(t, h, 1, 0)
	b, bWake, _ := sub(t, h, 2, 0)
	h.Publish(ev(1, 1))
	h.Publish(ev(2, 2))
	if !aWake.woken() || !bWake.woken() {
		t.Fatal("a stream was not woken")
	}
	if got, _ := a.Take(); len(got) != 1 || got[0].Seq != 1 {
		t.Fatalf("customer 1 got %v", got)
	}
	if got, _ := b.Take(); len(got) != 1 || got[0].Seq != 2 {
		t.Fatalf("customer 2 got %v, want its own event 2 only", got)
	}
	h.Publish(ev(3, 1))
	if bWake.woken() {
		t.Fatal("customer 2's stream was woken by customer 1's event")
	}
	if got, _ := b.Take(); len(got) != 0 {
		t.Fatalf("customer 2 got %v", got)
	}
}

// Close tells every open stream to end, and a stream opened after it
// opens Closed (its console is told to reconnect).
func TestCloseEndsEveryStream(t *testing.T) {
	h := started(roomy)
	a, aWake, _ := sub(t, h, 1, 0)
	b, bWake, _ := sub(t, h, 2, 0)
	if _, state := a.Take(); state != hub.Open {
		t.Fatalf("state %d before Close", state)
	}
	h.Close()
	for _, s := range []struct {
		sub  *hub.Sub
		wake waker
	}{{a, aWake}, {b, bWake}} {
		if !s.wake.woken() {
			t.Fatal("Close did not wake a stream")
		}
		if _, state := s.sub.Take(); state != hub.Closed {
			t.Fatalf("state %d after Close, want closed", state)
		}
	}
	late, _, _ := sub(t, h, 1, 0)
	if _, state := late.Take(); state != hub.Closed {
		t.Fatalf("a stream opened after Close: state %d, want closed", state)
	}
}

func TestResumeFromTheRingOrTheStream(t *testing.T) {
	h := hub.New(hub.Limits{MaxStreams: 10, MaxStreamsPerCustomer: 10, Buffer: 8, Ring: 3})
	if _, _, err := h.Subscribe(1, 0, func() {}); !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("before Start: %v", err)
	}
	h.Start(10) // the hub sees the events after 10
	// Another customer's in between; an event again is ignored.
	for _, e := range []hub.Event{ev(11, 1), ev(12, 1), ev(13, 1), ev(14, 2), ev(15, 1), ev(13, 1)} {
		h.Publish(e)
	}
	// The ring holds 12, 13, 15 of customer 1 (11 was evicted).
	cases := []struct {
		name     string
		after    uint64
		from, to uint64
		ring     []uint64
	}{
		{"no id", 0, 0, 0, nil},
		{"in the ring", 12, 0, 0, []uint64{13, 15}},
		{"latest", 15, 0, 0, nil},
		{"evicted", 11, 0, 0, []uint64{12, 13, 15}},
		{"before the ring", 5, 6, 11, []uint64{12, 13, 15}},
		{"before the hub started", 9, 10, 11, []uint64{12, 13, 15}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _, r := sub(t, h, 1, tc.after)
			defer s.Close()
			var ring []uint64
			for _, e := range r.Ring {
				ring = append(ring, e.Seq)
			}
			if r.StreamFrom != tc.from || r.StreamTo != tc.to || !equal(ring, tc.ring) {
				t.Fatalf("resume %d..%d + %v, want %d..%d + %v", r.StreamFrom, r.StreamTo, ring, tc.from, tc.to, tc.ring)
			}
		})
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStreamLimits(t *testing.T) {
	h := started(hub.Limits{MaxStreams: 3, MaxStreamsPerCustomer: 2, Buffer: 1, Ring: 1})
	nop := func() {}
	a1, _, _ := sub(t, h, 1, 0)
	sub(t, h, 1, 0)
	if _, _, err := h.Subscribe(1, 0, nop); !apperr.Is(err, apperr.RateLimited) {
		t.Fatalf("third stream of a customer: %v, want rate limited", err)
	}
	sub(t, h, 2, 0)
	if _, _, err := h.Subscribe(3, 0, nop); !apperr.Is(err, apperr.RateLimited) {
		t.Fatalf("fourth stream of the replica: %v, want rate limited", err)
	}
	a1.Close()
	if _, _, err := h.Subscribe(3, 0, nop); err != nil {
		t.Fatalf("after a close: %v", err)
	}
}

// A burst of events wakes a stream once; it takes them all, in order, and
// its events are kept in the customer's ring, not per stream.
func TestBurstIsTakenAtOnce(t *testing.T) {
	h := started(hub.Limits{MaxStreams: 10, MaxStreamsPerCustomer: 10, Buffer: 50, Ring: 100})
	s, w, _ := sub(t, h, 1, 0)
	for seq := uint64(1); seq <= 50; seq++ {
		h.Publish(ev(seq, 1))
	}
	if !w.woken() {
		t.Fatal("not woken")
	}
	got, state := s.Take()
	if len(got) != 50 || got[0].Seq != 1 || got[49].Seq != 50 {
		t.Fatalf("took %d events", len(got))
	}
	if state != hub.Open {
		t.Fatalf("state %d at its buffer's size, want open", state)
	}
	if again, _ := s.Take(); len(again) != 0 {
		t.Fatalf("took %d events again", len(again))
	}
}

// Streams opened at once: exactly the customer's limit get in, and the
// replica's limit holds across customers.
func TestStreamLimitsUnderConcurrentOpens(t *testing.T) {
	h := started(hub.Limits{MaxStreams: 7, MaxStreamsPerCustomer: 5, Buffer: 1, Ring: 1})
	var mu sync.Mutex
	opened := map[int64]int{}
	var wg sync.WaitGroup
	for i := range 60 {
		customer := int64(1 + i%2)
		wg.Go(func() {
			_, _, err := h.Subscribe(customer, 0, func() {})
			if err != nil && !apperr.Is(err, apperr.RateLimited) {
				t.Errorf("subscribe: %v", err)
			}
			if err == nil {
				mu.Lock()
				opened[customer]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if opened[1] > 5 || opened[2] > 5 || opened[1]+opened[2] != 7 {
		t.Fatalf("opened %v: want at most 5 per customer and 7 in all", opened)
	}
}
