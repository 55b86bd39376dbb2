package natsbus_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/outbox"
)

// lockedBuffer is a log sink the bus's goroutines may write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func clusterBus(t *testing.T, urls string, names contracts.Names, log *lockedBuffer) *natsbus.Bus {
	t.Helper()
	b, err := natsbus.Connect(urls, "test", names, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.NC.Close() })
	return b
}

// A stream declared with one replica (a deployment that ran on one server)
// gets the deployment's count when the services start with NATS_REPLICAS=3,
// and the change is logged; declaring it again changes nothing. The Object
// Store buckets follow the same count.
func TestStreamReplicasFollowTheDeployment(t *testing.T) {
	c := natstest.StartCluster(t, 3, nil)
	ctx := t.Context()
	var log1, log3 lockedBuffer
	one := clusterBus(t, c.URLs(), contracts.Names{Prefix: "rep"}, &log1)
	if err := one.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	replicas := func(stream string) int {
		t.Helper()
		st, err := one.JS.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		return st.CachedInfo().Config.Replicas
	}
	if r := replicas("REP_EVENTS"); r != 1 {
		t.Fatalf("default replicas %d, want 1", r)
	}
	three := clusterBus(t, c.URLs(), contracts.Names{Prefix: "rep", Replicas: 3}, &log3)
	if err := three.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	if r := replicas("REP_EVENTS"); r != 3 {
		t.Fatalf("replicas after the reconciliation %d, want 3", r)
	}
	if !strings.Contains(log3.String(), "nats stream replicas reconciled") || !strings.Contains(log3.String(), "from=1 to=3") {
		t.Fatalf("the change is not logged: %q", log3.String())
	}
	before := strings.Count(log3.String(), "reconciled")
	if err := three.EnsureMailInboundStream(ctx); err != nil {
		t.Fatal(err)
	}
	if err := three.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	if r := replicas("REP_MAIL_INBOUND"); r != 3 {
		t.Fatalf("a new stream has %d replicas, want 3", r)
	}
	if n := strings.Count(log3.String(), "reconciled"); n != before {
		t.Fatalf("an unchanged count was logged as a change: %q", log3.String())
	}

	bucket := three.Names.Stream(contracts.BucketAttachments)
	if _, err := blob.Open(ctx, one.JS, blob.Bucket{Name: bucket, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if r := replicas(contracts.ObjectStream(bucket)); r != 1 {
		t.Fatalf("bucket replicas %d, want 1", r)
	}
	var blobLog lockedBuffer
	if _, err := blob.Open(ctx, three.JS, blob.Bucket{Name: bucket, MaxBytes: 1 << 20, Replicas: three.Names.StreamReplicas(),
		Log: slog.New(slog.NewTextHandler(&blobLog, nil))}); err != nil {
		t.Fatal(err)
	}
	if r := replicas(contracts.ObjectStream(bucket)); r != 3 {
		t.Fatalf("bucket replicas after the reconciliation %d, want 3", r)
	}
	if !strings.Contains(blobLog.String(), "from=1 to=3") {
		t.Fatalf("the bucket's change is not logged: %q", blobLog.String())
	}
}

// On a single server a replicated stream is refused: a deployment that
// says NATS_REPLICAS=3 to one server fails at start instead of running
// with one copy it believes are three.
func TestReplicasOnOneServerAreRefused(t *testing.T) {
	url := natstest.Start(t)
	var log lockedBuffer
	b := clusterBus(t, url, contracts.Names{Prefix: "single", Replicas: 3}, &log)
	if err := b.EnsureEventsStream(t.Context()); err == nil {
		t.Fatal("three replicas accepted by a single server")
	}
}

func TestValidateReplicas(t *testing.T) {
	for n, ok := range map[int]bool{-1: false, 0: false, 1: true, 3: true, 5: true, 6: false} {
		if err := contracts.ValidateReplicas(n); (err == nil) != ok {
			t.Errorf("ValidateReplicas(%d) = %v", n, err)
		}
	}
	if contracts.ReplicasFor(1) != 1 || contracts.ReplicasFor(3) != 3 || (contracts.Names{}).StreamReplicas() != 1 {
		t.Fatal("replica defaults")
	}
}

// The errors of a leader election or a lost connection are Unavailable
// (503 with Retry-After); a refusal that would repeat is not.
func TestTransientErrors(t *testing.T) {
	transient := []error{
		jetstream.ErrNoStreamResponse,
		fmt.Errorf("publish: %w", nats.ErrNoResponders),
		context.DeadlineExceeded,
		nats.ErrTimeout,
		nats.ErrConnectionReconnecting,
		&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"},
	}
	for _, err := range transient {
		got := natsbus.Transient(err)
		var ae *apperr.Error
		if !errors.As(got, &ae) || ae.Code != apperr.Unavailable || ae.RetryAfterSeconds < 1 {
			t.Errorf("%v: %v, want Unavailable with a Retry-After", err, got)
		}
	}
	for _, err := range []error{
		&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamMessageExceedsMaximum, Description: "message size exceeds maximum allowed"},
		errors.New("something else"),
	} {
		if apperr.Is(natsbus.Transient(err), apperr.Unavailable) {
			t.Errorf("%v became Unavailable", err)
		}
	}
}

// A client given every server's URL loses its server: it reconnects to
// another by itself, its durable consumer (three replicas) resumes there,
// and every message published meanwhile (retried while the stream's leader
// is elected, as the services' callers do on a 503) is delivered; readiness
// answers again once the client is back. The server returns and the
// cluster has its three peers again.
func TestConsumerResumesAfterItsServerIsKilled(t *testing.T) {
	c := natstest.StartCluster(t, 3, nil)
	ctx := t.Context()
	var consLog, pubLog lockedBuffer
	names := contracts.Names{Prefix: "res", Replicas: 3}
	cons := clusterBus(t, c.URLs(), names, &consLog)
	pub := clusterBus(t, c.URLs(), names, &pubLog)
	if err := cons.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[int]bool{}
	cc, err := natsbus.Consume(ctx, cons, cons.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{Durable: "resume"},
		func(ctx context.Context, ev contracts.Event[struct{ N int }], _ jetstream.Msg) error {
			mu.Lock()
			got[ev.Data.N] = true
			mu.Unlock()
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	publish := func(n int) {
		t.Helper()
		m, err := outbox.Event(ctx, contracts.EventTopicCreated, 1, time.Now(), struct{ N int }{n})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := pub.PublishRaw(ctx, m.Subject, m.ID, m.Data)
			if err == nil {
				return
			}
			if !apperr.Is(err, apperr.Unavailable) || time.Now().After(deadline) {
				t.Fatalf("publish %d: %v", n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	for n := range 50 {
		publish(n)
	}
	waitFor(t, "the first 50 delivered", func() bool { return count() == 50 })

	var victim *natstest.Server
	for _, s := range c.Servers {
		if s.Name() == cons.NC.ConnectedServerName() {
			victim = s
		}
	}
	if victim == nil {
		t.Fatalf("the consumer's server %q is not one of the cluster's", cons.NC.ConnectedServerName())
	}
	victim.Stop()
	c.WaitLeader(t)
	for n := 50; n < 100; n++ {
		publish(n)
	}
	waitFor(t, "the consumer reconnects elsewhere", func() bool {
		return cons.NC.IsConnected() && cons.NC.ConnectedServerName() != victim.Name()
	})
	deadline := time.Now().Add(60 * time.Second)
	for count() < 100 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := count(); n != 100 {
		t.Fatalf("%d of 100 messages delivered after the consumer's server went away", n)
	}
	waitFor(t, "readiness after the reconnection", func() bool { return cons.Check(ctx) == nil })
	if !strings.Contains(consLog.String(), "nats reconnected") {
		t.Fatalf("the reconnection is not logged: %q", consLog.String())
	}

	victim.Start()
	waitFor(t, "three peers current", func() bool {
		info, err := pub.JS.Stream(ctx, pub.Names.Stream(contracts.StreamEvents))
		if err != nil || info.CachedInfo().Cluster == nil || info.CachedInfo().Cluster.Leader == "" {
			return false
		}
		replicas := info.CachedInfo().Cluster.Replicas
		current := 0
		for _, r := range replicas {
			if r.Current && !r.Offline {
				current++
			}
		}
		return len(replicas) == 2 && current == 2
	})
}
