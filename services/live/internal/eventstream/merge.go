package eventstream

import (
	"container/heap"
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/services/live/internal/hub"
)

// The ordered consumers (one per filter) each deliver in sequence order,
// but not in order with each other: ticket event 11 may come before
// message event 10. A console that got 11 and reconnected with it as its
// last id would never get 10. So the merger hands an event to the hub
// only once no consumer can still deliver an earlier one: each consumer
// has delivered past it, or its info, asked after the event arrived, says
// it has nothing pending and everything it sent has arrived (an idle
// filter). The hub, and so every stream, sees the events in sequence
// order.
type merger struct {
	cons []jetstream.Consumer
	hub  *hub.Hub
	// from is where the consumers start (after it); a new consumer's
	// info reports it as delivered.
	from uint64
	in   chan arrival
	// retry is the pause before asking a consumer's info again after an
	// error (the consumer being recreated, NATS away).
	retry time.Duration
}

type arrival struct {
	k int // consumer index
	e hub.Event
	// consumer and dseq: the (ordered consumer's current) consumer that
	// delivered it and its delivery sequence there.
	consumer string
	dseq     uint64
}

type infoResult struct {
	k int
	// asked is the highest sequence seen when the info was asked: what
	// the consumer is known to be past if it is idle.
	asked uint64
	// consumer, delivered (a delivery sequence) and pending are the
	// consumer's info.
	consumer  string
	delivered uint64
	pending   uint64
	err       error
}

// run merges until ctx ends.
func (m *merger) run(ctx context.Context) {
	n := len(m.cons)
	seen := make([]uint64, n) // last sequence each consumer delivered to us
	for k := range seen {
		seen[k] = m.from
	}
	past := make([]uint64, n)     // each consumer is known to have nothing more up to this
	asking := make([]bool, n)     // an info request is out
	waiting := make([]bool, n)    // its info said messages are on their way: wait for them
	last := make([]delivery, n)   // the last delivery of each consumer that arrived
	idleAt := make([]delivery, n) // an idle consumer's info: everything it sent up to this...
	idleAsk := make([]uint64, n)  // ...and the highest sequence seen when it was asked
	var maxSeen uint64
	var pending eventHeap
	results := make(chan infoResult, n)

	position := func(k int) uint64 { return max(seen[k], past[k]) }
	ask := func(k int, delay time.Duration) {
		asking[k] = true
		asked := maxSeen
		go func() {
			if delay > 0 {
				t := time.NewTimer(delay)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
					return
				}
			}
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			info, err := m.cons[k].Info(ictx)
			cancel()
			r := infoResult{k: k, asked: asked, err: err}
			if err == nil {
				r.consumer, r.delivered, r.pending = info.Name, info.Delivered.Consumer, info.NumPending
			}
			select {
			case results <- r:
			case <-ctx.Done():
			}
		}()
	}
	// flush publishes what is safe and asks the consumers that hold the
	// rest back.
	flush := func() {
		for len(pending) > 0 {
			next := pending[0].Seq
			safe := true
			for k := range n {
				if position(k) >= next {
					continue
				}
				safe = false
				if !asking[k] && !waiting[k] {
					ask(k, 0)
				}
			}
			if !safe {
				return
			}
			m.hub.Publish(heap.Pop(&pending).(hub.Event))
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-m.in:
			seen[a.k] = max(seen[a.k], a.e.Seq)
			maxSeen = max(maxSeen, a.e.Seq)
			waiting[a.k] = false
			last[a.k] = delivery{a.consumer, a.dseq}
			if idleAt[a.k].consumer != "" && last[a.k].covers(idleAt[a.k]) {
				// An idle consumer's last messages have arrived.
				past[a.k] = max(past[a.k], idleAsk[a.k])
				idleAt[a.k] = delivery{}
			}
			if a.e.CustomerID > 0 {
				heap.Push(&pending, a.e)
			}
			flush()
		case r := <-results:
			asking[r.k] = false
			switch {
			case r.err != nil:
				ask(r.k, m.retry)
			case r.pending == 0 && (r.delivered == 0 || last[r.k].covers(delivery{r.consumer, r.delivered})):
				past[r.k] = max(past[r.k], r.asked)
			case r.pending == 0:
				// Sent but not arrived yet (the client hands messages
				// to the handler on a goroutine of its own): past once
				// it has.
				idleAt[r.k], idleAsk[r.k] = delivery{r.consumer, r.delivered}, r.asked
				waiting[r.k] = true
			default:
				// Messages pending: their arrival moves it on.
				waiting[r.k] = true
			}
			flush()
		}
	}
}

// delivery is a consumer's delivery sequence: it counts the messages it
// sent (unlike the stream sequence of its info, which a purge moves on).
type delivery struct {
	consumer string
	dseq     uint64
}

// covers: d is at or after o on the same consumer.
func (d delivery) covers(o delivery) bool { return d.consumer == o.consumer && d.dseq >= o.dseq }

// eventHeap orders events by sequence.
type eventHeap []hub.Event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].Seq < h[j].Seq }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(hub.Event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
