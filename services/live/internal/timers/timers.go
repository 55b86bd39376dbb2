// Package timers runs the deadlines of many streams (heartbeats, token
// expiry, the end of a request's time budget) from one goroutine and one
// runtime timer: a replica with 10,000 idle streams then holds no
// goroutine and no runtime timer per stream, only a heap entry each.
package timers

import (
	"container/heap"
	"sync"
	"time"
)

// Timer is one deadline; Fn runs on the Set's goroutine once the deadline
// has passed, and must not wait (it hands the work to its owner). The
// zero Timer with Fn set is ready to Schedule.
type Timer struct {
	Fn func()
	at time.Time
	// i is the index in the heap plus one; 0: not scheduled.
	i int
}

// Set is safe for concurrent use.
type Set struct {
	now func() time.Time

	mu sync.Mutex
	h  timerHeap
	// changed has a value when the earliest deadline moved earlier.
	changed chan struct{}
}

// New returns an empty set on the clock now.
func New(now func() time.Time) *Set {
	return &Set{now: now, changed: make(chan struct{}, 1)}
}

// Schedule sets t's deadline to at (t's Fn runs once then), moving it if
// it is scheduled already.
func (s *Set) Schedule(t *Timer, at time.Time) {
	s.mu.Lock()
	t.at = at
	if t.i > 0 {
		heap.Fix(&s.h, t.i-1)
	} else {
		heap.Push(&s.h, t)
	}
	first := s.h[0] == t
	s.mu.Unlock()
	if first {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

// Stop unschedules t. A Fn already taken off the heap may still run.
func (s *Set) Stop(t *Timer) {
	s.mu.Lock()
	if t.i > 0 {
		heap.Remove(&s.h, t.i-1)
	}
	s.mu.Unlock()
}

// Len is the number of timers scheduled.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.h)
}

// Run fires the timers as their deadlines pass, until done is closed.
func (s *Set) Run(done <-chan struct{}) {
	rt := time.NewTimer(time.Hour)
	rt.Stop()
	var due []*Timer
	for {
		s.mu.Lock()
		now := s.now()
		due = due[:0]
		for len(s.h) > 0 && !s.h[0].at.After(now) {
			due = append(due, heap.Pop(&s.h).(*Timer))
		}
		wait := time.Duration(-1)
		if len(s.h) > 0 {
			wait = s.h[0].at.Sub(now)
		}
		s.mu.Unlock()
		if len(due) > 0 {
			for i, t := range due {
				t.Fn()
				due[i] = nil
			}
			// The functions may have scheduled again: look anew.
			continue
		}
		if wait >= 0 {
			rt.Reset(wait)
		}
		select {
		case <-rt.C:
		case <-s.changed:
			rt.Stop()
		case <-done:
			rt.Stop()
			return
		}
	}
}

// timerHeap orders the timers by deadline (container/heap).
type timerHeap []*Timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i+1, j+1
}

func (h *timerHeap) Push(x any) {
	t := x.(*Timer)
	t.i = len(*h) + 1
	*h = append(*h, t)
}

func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.i = 0
	return t
}
