package ratelimit

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/redistest"
	"supportplatform.dev/pkg/tcptest"
)

func begin(t *testing.T, a *Attempts, key string) (Attempt, Result) {
	t.Helper()
	at, r, err := a.Begin(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return at, r
}

// Failures count until the window ends; attempts ended as done do not
// count; a clear forgets the failures.
func TestAttemptsCountFailuresOnly(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testRedis(t)
	a := NewAttempts(rdb, prefix, 3, 400*time.Millisecond, time.Minute)
	for range 5 {
		at, r := begin(t, a, "k")
		if !r.Allowed {
			t.Fatalf("an attempt ended as done must not count: %+v", r)
		}
		if err := a.Done(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		at, r := begin(t, a, "k")
		if !r.Allowed || r.Count != i+1 {
			t.Fatalf("attempt %d after %d failures: %+v", i+1, i, r)
		}
		if err := a.Failed(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	at, r := begin(t, a, "k")
	if r.Allowed || r.RetryAfter <= 0 || r.RetryAfter > 400*time.Millisecond || r.Count != 3 {
		t.Fatalf("after 3 failures: %+v", r)
	}
	// Ending a refused attempt is harmless.
	if err := a.Failed(ctx, at); err != nil {
		t.Fatal(err)
	}
	if _, r := begin(t, a, "other"); !r.Allowed || r.Count != 1 {
		t.Fatalf("keys must be independent: %+v", r)
	}
	time.Sleep(450 * time.Millisecond) // the window is a Redis TTL
	at, r = begin(t, a, "k")
	if !r.Allowed || r.Count != 1 {
		t.Fatalf("the window should have ended: %+v", r)
	}
	if err := a.Failed(ctx, at); err != nil {
		t.Fatal(err)
	}
	at, _ = begin(t, a, "k")
	if err := a.Clear(ctx, at); err != nil {
		t.Fatal(err)
	}
	if _, r := begin(t, a, "k"); !r.Allowed || r.Count != 1 {
		t.Fatalf("a clear must forget the failures: %+v", r)
	}
}

// Many attempts begun at once cannot pass the limit before any of them
// has failed: the attempts under way count.
func TestParallelAttemptsCountAgainstTheLimit(t *testing.T) {
	rdb, prefix := testRedis(t)
	a := NewAttempts(rdb, prefix, 5, time.Minute, time.Minute)
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			if _, r, err := a.Begin(context.Background(), "k"); err == nil && r.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 5 {
		t.Fatalf("%d of 40 parallel attempts were allowed, want 5", allowed.Load())
	}
	if _, r := begin(t, a, "k"); r.Allowed || r.RetryAfter <= 0 || r.RetryAfter > time.Minute {
		t.Fatalf("refused while 5 are under way: %+v", r)
	}
}

// An attempt that is never ended (Redis went away before its end, the
// process died) stops counting at its own expiry, not at the end of the
// window; attempts begun later do not extend the earlier ones.
func TestAbandonedAttemptsExpire(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testRedis(t)
	a := NewAttempts(rdb, prefix, 2, time.Hour, 300*time.Millisecond)
	begin(t, a, "k")
	time.Sleep(150 * time.Millisecond)
	begin(t, a, "k")
	_, r := begin(t, a, "k")
	if r.Allowed || r.RetryAfter > 200*time.Millisecond {
		t.Fatalf("two abandoned attempts fill the limit until the first expires: %+v", r)
	}
	time.Sleep(200 * time.Millisecond)
	at, r := begin(t, a, "k")
	if !r.Allowed {
		t.Fatalf("the first abandoned attempt should have expired: %+v", r)
	}
	if err := a.Done(ctx, at); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	for i := range 2 {
		at, r := begin(t, a, "k")
		if !r.Allowed {
			t.Fatalf("attempt %d once every abandoned one expired: %+v", i+1, r)
		}
		defer a.Done(ctx, at)
	}
	// Nothing of an abandoned attempt was counted as a failure.
	if n, _ := rdb.Exists(ctx, prefix+"k").Result(); n != 0 {
		t.Fatalf("abandoned attempts left a failure counter")
	}
}

// redisProxy forwards connections to the test Redis while it is up; cut
// closes every connection and refuses new ones until restore: Redis going
// away between an attempt's beginning and its end.
type redisProxy struct {
	mu    sync.Mutex
	up    bool
	conns map[net.Conn]bool
}

func newRedisProxy(t *testing.T) (*redisProxy, string) {
	p := &redisProxy{up: true, conns: map[net.Conn]bool{}}
	upstream := redistest.Options(t).Addr
	addr := tcptest.Serve(t, func(c net.Conn) {
		defer c.Close()
		p.mu.Lock()
		if !p.up {
			p.mu.Unlock()
			return
		}
		p.conns[c] = true
		p.mu.Unlock()
		r, err := net.Dial("tcp", upstream)
		if err != nil {
			return
		}
		defer r.Close()
		go func() { _, _ = io.Copy(r, c); r.Close() }()
		_, _ = io.Copy(c, r)
	})
	return p, addr
}

func (p *redisProxy) set(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = up
	if !up {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// The ends that Redis did not take are recorded before the next attempt
// begins: the attempts under way when Redis went down neither keep
// counting (the address is not locked out once it is back) nor lose the
// failures among them.
func TestEndsRecordedAfterRedisComesBack(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testRedis(t)
	proxy, addr := newRedisProxy(t)
	via := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { via.Close() })
	a := NewAttempts(via, prefix, 3, time.Hour, time.Hour)
	ok, _ := begin(t, a, "k")
	bad, _ := begin(t, a, "k")
	third, _ := begin(t, a, "k")

	proxy.set(false)
	if err := a.Clear(ctx, ok); err == nil {
		t.Fatal("an end while Redis is away must report an error")
	}
	if err := a.Failed(ctx, bad); err == nil {
		t.Fatal("an end while Redis is away must report an error")
	}
	if _, _, err := a.Begin(ctx, "k"); err == nil {
		t.Fatal("a begin while Redis is away must fail")
	}
	proxy.set(true)

	// Without the backlog, three attempts would still be under way.
	at, r := begin(t, a, "k")
	if !r.Allowed || r.Count != 3 {
		t.Fatalf("after Redis is back: %+v, want allowed with 1 failure, the third attempt and this one", r)
	}
	if n, _ := rdb.Get(ctx, prefix+"k").Int(); n != 1 {
		t.Fatalf("failures %d, want the one recorded late", n)
	}
	for _, x := range []Attempt{third, at} {
		if err := a.Done(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := rdb.ZCard(ctx, prefix+"k:pending").Result(); n != 0 {
		t.Fatalf("%d attempts still under way", n)
	}
}
