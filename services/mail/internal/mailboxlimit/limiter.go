// Package mailboxlimit holds Microsoft Graph's per-mailbox limits across
// every replica that calls Graph for a mailbox: at most 4 concurrent
// requests per app and mailbox, and at most 10,000 requests per 10 minutes.
// The import worker autoscales and its replier shares its Graph client, so
// a limit kept per process would let 3 replicas send 12 requests at once
// and Graph would answer most of them 429 (MailboxConcurrency).
//
// The slots are leases in Redis: a sorted set per mailbox whose members are
// lease ids scored with their expiry, taken and given back atomically by
// Lua scripts on Redis's own clock. A holder extends its lease while the
// request runs (a streamed attachment can take long); a replica that dies
// loses its leases when they expire. The budget is a counter per mailbox
// whose window starts with its first request. Keys live under the
// deployment's REDIS_PREFIX; the mailbox is hashed into the key, so no
// address is written to Redis.
package mailboxlimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/randid"
)

// Settings are the limiter's environment variables.
type Settings struct {
	Concurrency int           `env:"GRAPH_MAILBOX_CONCURRENCY" default:"4" desc:"concurrent Graph requests per mailbox across all import worker replicas (Graph allows 4 per app and mailbox)"`
	Budget      int           `env:"GRAPH_MAILBOX_BUDGET" default:"10000" desc:"Graph requests per mailbox per GRAPH_MAILBOX_WINDOW across all replicas (Graph allows 10,000 per 10 minutes)"`
	Window      time.Duration `env:"GRAPH_MAILBOX_WINDOW" default:"10m" desc:"window of GRAPH_MAILBOX_BUDGET"`
	Lease       time.Duration `env:"GRAPH_MAILBOX_LEASE" default:"30s" desc:"lease of a Graph request slot in Redis, extended while the request runs; a dead replica's slots come back after it"`
}

// Check refuses settings that cannot work.
func (s Settings) Check() error {
	if s.Concurrency < 1 || s.Budget < 1 || s.Window < time.Second || s.Lease < time.Second {
		return errors.New("config: GRAPH_MAILBOX_CONCURRENCY and GRAPH_MAILBOX_BUDGET must be positive, GRAPH_MAILBOX_WINDOW and GRAPH_MAILBOX_LEASE at least 1s")
	}
	return nil
}

// Waiting for a slot polls Redis, from pollMin doubling up to pollMax (with
// jitter, so that replicas do not poll in step).
const (
	pollMin = 10 * time.Millisecond
	pollMax = 250 * time.Millisecond
)

// BudgetError is an acquisition refused because the mailbox's request
// budget is spent and the caller's context ends before the window does.
type BudgetError struct {
	RetryAfter time.Duration
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("graph: the mailbox's request budget is spent; it comes back in %s", e.RetryAfter.Round(time.Millisecond))
}

// Limiter is the distributed limit. It is safe for concurrent use.
type Limiter struct {
	rdb    *redis.Client
	prefix string
	s      Settings
	log    *slog.Logger
	m      *metrics
	local  *Local // while Redis does not answer

	logMu      sync.Mutex
	lastOutage time.Time
	// downUntil: after a failed command Redis is not asked again for
	// outageBackoff, so that every call does not wait for a dial timeout.
	downUntil time.Time
}

// outageBackoff is how long the limiter stays per process after Redis
// failed a command.
const outageBackoff = 5 * time.Second

// New returns a limiter whose keys start with prefix (REDIS_PREFIX); reg
// may be nil.
func New(rdb *redis.Client, prefix string, s Settings, log *slog.Logger, reg prometheus.Registerer) (*Limiter, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Limiter{rdb: rdb, prefix: prefix + "mail:graphmailbox:", s: s, log: log, m: m, local: NewLocal(s.Concurrency)}, nil
}

// acquireScript drops expired leases, refuses when the mailbox has
// Concurrency live leases (0 and the ms until the soonest expires) or its
// budget is spent (-1 and the ms until the window ends), and otherwise
// counts the request and adds the lease (1).
//
// KEYS: leases, budget. ARGV: lease id, concurrency, budget, window ms, lease ms.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(first[2]) - now}
end
local used = tonumber(redis.call('GET', KEYS[2]) or '0')
if used >= tonumber(ARGV[3]) then
  local ttl = redis.call('PTTL', KEYS[2])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    ttl = tonumber(ARGV[4])
  end
  return {-1, ttl}
end
if redis.call('INCR', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[5]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]) * 2)
return {1, 0}
`)

// extendScript moves a live lease's expiry (it is not re-added once gone).
//
// KEYS: leases. ARGV: lease id, lease ms.
var extendScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
return n
`)

func (l *Limiter) keys(key string) []string {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:16])
	// One hash tag: both keys of a script are on one node of a cluster.
	return []string{l.prefix + "{" + h + "}:leases", l.prefix + "{" + h + "}:budget"}
}

// Acquire waits for one of the mailbox's slots (key: tenant and mailbox)
// and returns the function that gives it back (safe to call more than
// once). The wait ends with ctx. When the budget is spent, it waits for the
// window's end if ctx allows, else fails at once with *BudgetError. While
// Redis does not answer, the slots are this process's own (Local), so that
// an outage of Redis does not stop mail; Graph's 429s, which the client
// honours, are the backstop then.
func (l *Limiter) Acquire(ctx context.Context, key string) (func(), error) {
	if l.down() {
		l.m.acquired.WithLabelValues("local").Inc()
		return l.local.Acquire(ctx, key)
	}
	keys := l.keys(key)
	id := randid.Hex(12)
	poll := pollMin
	waited := false
	for {
		v, err := acquireScript.Run(ctx, l.rdb, keys, id, l.s.Concurrency, l.s.Budget,
			l.s.Window.Milliseconds(), l.s.Lease.Milliseconds()).Int64Slice()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			l.outage(err)
			l.m.acquired.WithLabelValues("local").Inc()
			return l.local.Acquire(ctx, key)
		}
		var wait time.Duration
		switch v[0] {
		case 1:
			res := "immediate"
			if waited {
				res = "waited"
			}
			l.m.acquired.WithLabelValues(res).Inc()
			return l.hold(keys[0], id), nil
		case -1:
			wait = time.Duration(v[1]) * time.Millisecond
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
				l.m.acquired.WithLabelValues("budget").Inc()
				return nil, &BudgetError{RetryAfter: wait}
			}
			wait = min(wait, pollMax)
		default:
			wait = poll
			poll = min(2*poll, pollMax)
		}
		waited = true
		// Jitter: replicas that wait for one mailbox do not poll in step.
		wait = wait/2 + rand.N(wait/2+1)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// hold keeps the lease alive until the returned release is called, then
// gives it back.
func (l *Limiter) hold(leases, id string) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(l.s.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				ctx, cancel := context.WithTimeout(context.Background(), l.s.Lease/3)
				err := extendScript.Run(ctx, l.rdb, []string{leases}, id, l.s.Lease.Milliseconds()).Err()
				cancel()
				if err != nil {
					l.outage(err)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			// Not the caller's context: a slot must come back even when
			// the request was cancelled; if Redis does not take it, the
			// lease expires.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := l.rdb.ZRem(ctx, leases, id).Err(); err != nil {
				l.outage(err)
			}
		})
	}
}

func (l *Limiter) down() bool {
	l.logMu.Lock()
	defer l.logMu.Unlock()
	return time.Now().Before(l.downUntil)
}

// outage notes a Redis failure (the limiter is per process for
// outageBackoff) and logs at most once a minute.
func (l *Limiter) outage(err error) {
	l.m.errors.Inc()
	l.logMu.Lock()
	defer l.logMu.Unlock()
	l.downUntil = time.Now().Add(outageBackoff)
	if time.Since(l.lastOutage) < time.Minute {
		return
	}
	l.lastOutage = time.Now()
	l.log.Warn("graph mailbox limiter: Redis does not answer; slots are per process until it does", "error", err.Error())
}

// Local bounds the concurrent requests per key in this process only. A
// key's slots exist while someone holds or waits for one, so the map does
// not grow with every mailbox seen.
type Local struct {
	n     int
	mu    sync.Mutex
	slots map[string]*localSlots
}

type localSlots struct {
	sem   chan struct{}
	users int
}

// NewLocal returns a per-process limit of n slots per key.
func NewLocal(n int) *Local { return &Local{n: max(n, 1), slots: map[string]*localSlots{}} }

// Acquire waits for one of key's slots and returns the function that gives
// it back (safe to call more than once).
func (l *Local) Acquire(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	s, ok := l.slots[key]
	if !ok {
		s = &localSlots{sem: make(chan struct{}, l.n)}
		l.slots[key] = s
	}
	s.users++
	l.mu.Unlock()
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		l.leave(key, s)
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-s.sem
			l.leave(key, s)
		})
	}, nil
}

func (l *Local) leave(key string, s *localSlots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.users--
	if s.users == 0 {
		delete(l.slots, key)
	}
}

type metrics struct {
	acquired *prometheus.CounterVec
	errors   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		acquired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_graph_mailbox_slots_total",
			Help: "Graph mailbox request slots asked for, by result: immediate, waited, budget (refused: the mailbox's budget is spent), local (Redis did not answer)."},
			[]string{"result"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "mail_graph_mailbox_limiter_errors_total",
			Help: "Redis commands of the Graph mailbox limiter that failed."}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.acquired, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("mailboxlimit: metrics: %w", err)
		}
	}
	for _, r := range []string{"immediate", "waited", "budget", "local"} {
		m.acquired.WithLabelValues(r)
	}
	return m, nil
}
