package timers_test

import (
	"sync"
	"testing"
	"time"

	"supportplatform.dev/services/live/internal/timers"
)

// record is a set running on the real clock whose timers report their
// names, in firing order.
type record struct {
	set   *timers.Set
	fired chan string
	done  chan struct{}
	wg    sync.WaitGroup
}

func start(t *testing.T) *record {
	r := &record{set: timers.New(time.Now), fired: make(chan string, 100), done: make(chan struct{})}
	r.wg.Go(func() { r.set.Run(r.done) })
	t.Cleanup(func() {
		close(r.done)
		r.wg.Wait()
	})
	return r
}

func (r *record) timer(name string) *timers.Timer {
	return &timers.Timer{Fn: func() { r.fired <- name }}
}

func (r *record) next(t *testing.T) string {
	t.Helper()
	select {
	case n := <-r.fired:
		return n
	case <-time.After(5 * time.Second):
		t.Fatal("no timer fired within 5 s")
		return ""
	}
}

// Timers fire in deadline order, whatever the order they were scheduled
// in; a stopped one never fires.
func TestFireInDeadlineOrder(t *testing.T) {
	r := start(t)
	now := time.Now()
	a, b, c, d := r.timer("a"), r.timer("b"), r.timer("c"), r.timer("d")
	r.set.Schedule(c, now.Add(90*time.Millisecond))
	r.set.Schedule(a, now.Add(30*time.Millisecond))
	r.set.Schedule(d, now.Add(60*time.Millisecond))
	r.set.Schedule(b, now.Add(60*time.Millisecond))
	r.set.Stop(d)
	r.set.Stop(d) // again: nothing to do
	got := []string{r.next(t), r.next(t), r.next(t)}
	if got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("fired %v, want a b c", got)
	}
	if r.set.Len() != 0 {
		t.Fatalf("%d timers left", r.set.Len())
	}
	select {
	case n := <-r.fired:
		t.Fatalf("%s fired after it was stopped", n)
	case <-time.After(100 * time.Millisecond):
	}
}

// A deadline moved earlier than the one the set waits for fires at its
// new time, not after the one waited for; a timer may schedule itself
// again from its function.
func TestEarlierDeadlineAndRescheduling(t *testing.T) {
	r := start(t)
	late := r.timer("late")
	r.set.Schedule(late, time.Now().Add(time.Hour))
	time.Sleep(20 * time.Millisecond) // the set waits for the hour
	n := 0
	var again *timers.Timer
	again = &timers.Timer{Fn: func() {
		n++
		if n < 3 {
			r.set.Schedule(again, time.Now().Add(10*time.Millisecond))
		}
		r.fired <- "again"
	}}
	r.set.Schedule(again, time.Now().Add(10*time.Millisecond))
	for range 3 {
		if got := r.next(t); got != "again" {
			t.Fatalf("fired %s", got)
		}
	}
	// Moved from an hour to now.
	r.set.Schedule(late, time.Now())
	if got := r.next(t); got != "late" {
		t.Fatalf("fired %s", got)
	}
}

// Many timers at once: each fires exactly once.
func TestManyTimers(t *testing.T) {
	r := start(t)
	const n = 2000
	counts := make([]int, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(n)
	now := time.Now()
	for i := range n {
		tm := &timers.Timer{Fn: func() {
			mu.Lock()
			counts[i]++
			mu.Unlock()
			wg.Done()
		}}
		r.set.Schedule(tm, now.Add(time.Duration(i%50)*time.Millisecond))
	}
	wg.Wait()
	time.Sleep(50 * time.Millisecond)
	for i, c := range counts {
		if c != 1 {
			t.Fatalf("timer %d fired %d times", i, c)
		}
	}
}
