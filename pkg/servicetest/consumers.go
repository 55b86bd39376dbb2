package servicetest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// InHand is one message a JetStream consumer of the service holds in its
// handler across SIGTERM: the consumer's only message, so that its state
// tells how often it was delivered and whether it was acknowledged.
type InHand struct {
	// Stream and Durable are the consumer's base names (Names.Stream
	// prefixes them).
	Stream, Durable string
	// Lock ("schema.table") is locked in PostgreSQL before Publish and held
	// until the test lets the handler go on: the handler waits on it.
	Lock string
	// Publish sends the message through the test's bus.
	Publish func(ctx context.Context, b *natsbus.Bus) error
	// Applied counts the message's effects in the database: 0 before it was
	// handled, 1 after (more is a message applied twice).
	Applied func(ctx context.Context, db *pgx.Conn) (int, error)
}

// ConsumerShutdownCase describes a service's consumer shutdown test.
type ConsumerShutdownCase struct {
	Name    string
	Run     Run
	Options Options
	// Serve, when set, runs on the test's bus before the service starts
	// (answers to the RPCs the handlers make).
	Serve func(c *RPCClient) error
	// Setup, when set, writes the rows the messages refer to, once the
	// service is ready and before the locks are taken.
	Setup func(t *testing.T, db *pgx.Conn)
	// InHand are the messages, one per consumer.
	InHand []InHand
}

// ConsumerShutdownTest sends the process SIGTERM while every consumer of
// c.InHand holds its message in a handler waiting on a PostgreSQL lock,
// twice:
//   - finishes: the locks go once the listener has closed, within
//     SHUTDOWN_GRACE (20 s): run returns nil before the grace is over, each
//     message applied once and acknowledged after one delivery, nothing
//     logged at error level;
//   - redelivers: the locks outlast SHUTDOWN_GRACE (3 s): run returns soon
//     after it, reporting the handlers cancelled, nothing applied and each
//     message handed back; the next run, on the same database and NATS,
//     applies each once at its second delivery and acknowledges it (the
//     3 s leave the test time to see the handlers in hand after SIGTERM).
func ConsumerShutdownTest(t *testing.T, c ConsumerShutdownCase) {
	t.Run("finishes", func(t *testing.T) { consumerShutdown(t, c, 20*time.Second, false) })
	t.Run("redelivers", func(t *testing.T) { consumerShutdown(t, c, 3*time.Second, true) })
}

func consumerShutdown(t *testing.T, c ConsumerShutdownCase, grace time.Duration, outlast bool) {
	ctx := context.Background()
	sig, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	o := c.Options
	pub, priv := newKey(t)
	env := Env(t, c.Name, pub, false)
	for k, v := range o.Env {
		env[k] = v
	}
	env["SHUTDOWN_GRACE"] = grace.String()
	o.Env = env
	client := &RPCClient{}
	var err error
	client.Bus, err = natsbus.Connect(env["NATS_URL"], "consumer-shutdown-test", contracts.Names{Prefix: env["NATS_PREFIX"]},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Bus.NC.Close() })
	if c.Serve != nil {
		if err := c.Serve(client); err != nil {
			t.Fatal(err)
		}
	}
	first := o
	first.Context = sig
	svc := start(t, c.Name, c.Run, first, priv)
	db, err := pgx.Connect(ctx, adminURL(env))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(ctx) })
	if c.Setup != nil {
		c.Setup(t, db)
	}

	// Each lock once, however many handlers wait on it.
	locks := map[string]*heldLock{}
	for _, h := range c.InHand {
		l := locks[h.Lock]
		if l == nil {
			l = &heldLock{}
			l.release, l.waiting = lockTable(t, adminURL(env), h.Lock)
			defer l.release()
			locks[h.Lock] = l
		}
		l.handlers++
	}
	for _, h := range c.InHand {
		if err := h.Publish(ctx, client.Bus); err != nil {
			t.Fatal(err)
		}
	}
	inHand := func() bool {
		for _, l := range locks {
			if l.waiting() < l.handlers {
				return false
			}
		}
		return true
	}
	waitUntil(t, 15*time.Second, "every handler waiting on its lock", svc, inHand)

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	waitUntil(t, 10*time.Second, "the listener closed after SIGTERM", svc, func() bool {
		resp, err := probe.Get(svc.URL + "/healthz")
		if err != nil {
			return true
		}
		resp.Body.Close()
		return false
	})
	// Shutdown has begun and the handlers still wait: run waits for them.
	if !inHand() || svc.Returned() {
		t.Fatalf("a handler left its lock or run returned while the messages were in hand:\n%s", svc.Logs())
	}

	applied := func(want int) {
		t.Helper()
		for i, h := range c.InHand {
			if n, err := h.Applied(ctx, db); err != nil || n != want {
				t.Errorf("message %d (%s): applied %d times (%v), want %d", i, h.Durable, n, err, want)
			}
		}
	}
	if !outlast {
		for _, l := range locks {
			l.release()
		}
		if err := svc.Wait(grace); err != nil {
			t.Fatalf("run after SIGTERM: %v\n%s", err, svc.Logs())
		}
		if d := time.Since(signalled); d > grace {
			t.Errorf("run returned %v after SIGTERM, grace %v", d, grace)
		}
		applied(1)
		settled(t, client.Bus, c.InHand, 1)
		if strings.Contains(svc.Logs(), `"level":"ERROR"`) {
			t.Errorf("logged at error level:\n%s", svc.Logs())
		}
		return
	}

	// The handlers are cancelled after the grace and hand their messages
	// back; nothing they did is committed.
	err = svc.Wait(grace + 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "cancelled after the shutdown grace") {
		t.Fatalf("run after SIGTERM with the handlers held past the grace: %v\n%s", err, svc.Logs())
	}
	if d := time.Since(signalled); d > grace+5*time.Second {
		t.Errorf("run returned %v after SIGTERM, grace %v", d, grace)
	}
	svc.accept()
	if n := strings.Count(svc.Logs(), "shutdown: message handed back"); n != len(c.InHand) {
		t.Errorf("%d messages handed back, want %d:\n%s", n, len(c.InHand), svc.Logs())
	}
	for _, l := range locks {
		l.release()
	}
	applied(0)
	next := start(t, c.Name, c.Run, o, priv)
	waitUntil(t, 15*time.Second, "every message applied by the next run", next, func() bool {
		for _, h := range c.InHand {
			if n, err := h.Applied(ctx, db); err != nil || n == 0 {
				return false
			}
		}
		return true
	})
	if err := next.Stop(); err != nil {
		t.Fatalf("next run: %v\n%s", err, next.Logs())
	}
	applied(1)
	settled(t, client.Bus, c.InHand, 2)
	if strings.Contains(next.Logs(), `"level":"ERROR"`) {
		t.Errorf("the next run logged at error level:\n%s", next.Logs())
	}
}

type heldLock struct {
	release  func()
	waiting  func() int
	handlers int
}

// settled requires each consumer to have acknowledged its one message
// after deliveries deliveries, with nothing pending.
func settled(t *testing.T, b *natsbus.Bus, inHand []InHand, deliveries uint64) {
	t.Helper()
	ctx := context.Background()
	for _, h := range inHand {
		cons, err := b.JS.Consumer(ctx, b.Names.Stream(h.Stream), b.Names.Stream(h.Durable))
		if err != nil {
			t.Fatalf("consumer %s: %v", h.Durable, err)
		}
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatalf("consumer %s: %v", h.Durable, err)
		}
		if info.NumAckPending != 0 || info.NumPending != 0 || info.Delivered.Consumer != deliveries || info.AckFloor.Consumer != deliveries {
			t.Errorf("consumer %s: %d pending acknowledgement, %d not delivered, %d deliveries (acknowledged up to %d), want %d deliveries all acknowledged",
				h.Durable, info.NumAckPending, info.NumPending, info.Delivered.Consumer, info.AckFloor.Consumer, deliveries)
		}
	}
}

// waitUntil polls cond until it holds; it fails the test after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, svc *Service, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s\n%s", limit, what, svc.Logs())
		}
	}
}

// accept marks run's error as expected and checked: the cleanup does not
// report it.
func (s *Service) accept() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		s.runErr = nil
	}
}
