package contracts_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/outbox"
)

func connect(t *testing.T, url, name string, names contracts.Names) *natsbus.Bus {
	t.Helper()
	b, err := natsbus.Connect(url, name, names, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	t.Cleanup(func() { b.NC.Close() })
	return b
}

// permissionError waits for the server's asynchronous permissions violation
// on b's connection that names subject.
func permissionError(t *testing.T, b *natsbus.Bus, subject string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if err := b.NC.LastError(); err != nil && errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no permissions violation for %s (last error: %v)", subject, b.NC.LastError())
}

// The RPC servers trust the customerID of a request because only the
// services the table lets call an RPC can send one.
func TestOnlyCallersMayRequestAnRPC(t *testing.T) {
	names := contracts.Names{Prefix: "perm"}
	urls := natstest.StartWithUsers(t, names)
	auth := connect(t, urls["auth"], "auth", names)
	var seen atomic.Int32
	if _, err := natsbus.Serve(auth, contracts.RPCCustomerExists, contracts.QueueAuth,
		func(_ context.Context, req contracts.CustomerExistsRequest) (contracts.CustomerExistsReply, error) {
			seen.Add(1)
			return contracts.CustomerExistsReply{Exists: req.CustomerID == 7}, nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := auth.NC.Flush(); err != nil {
		t.Fatal(err)
	}

	topics := connect(t, urls["topics"], "topics", names)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := natsbus.Request[contracts.CustomerExistsRequest, contracts.CustomerExistsReply](ctx, topics,
		contracts.RPCCustomerExists, contracts.CustomerExistsRequest{CustomerID: 7})
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("topics asked auth: %v, want no answer", err)
	}
	permissionError(t, topics, names.Subject(contracts.RPCCustomerExists))

	translation := connect(t, urls["translation"], "translation", names)
	reply, err := natsbus.Request[contracts.CustomerExistsRequest, contracts.CustomerExistsReply](context.Background(), translation,
		contracts.RPCCustomerExists, contracts.CustomerExistsRequest{CustomerID: 7})
	if err != nil || !reply.Exists {
		t.Fatalf("translation asked auth: %+v, %v", reply, err)
	}
	if n := seen.Load(); n != 1 {
		t.Fatalf("the auth handler saw %d requests, want only translation's", n)
	}

	// Nor may another service answer in auth's place.
	if _, err := topics.NC.QueueSubscribe(names.Subject(contracts.RPCCustomerExists), contracts.QueueAuth, func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	permissionError(t, topics, names.Subject(contracts.RPCCustomerExists))
}

// Each service user can do what its service does: declare its streams,
// publish its events, serve its RPCs and call the ones it calls; and not
// publish another service's events or delete a stream.
func TestEachServiceCanDoItsWork(t *testing.T) {
	names := contracts.Names{Prefix: "work"}
	urls := natstest.StartWithUsers(t, names)
	ctx := context.Background()
	harness := connect(t, urls[contracts.HarnessUser], contracts.HarnessUser, names)
	events := make(chan *nats.Msg, 64)
	if _, err := harness.NC.ChanSubscribe(names.Subject(contracts.EventsSubjects), events); err != nil {
		t.Fatal(err)
	}
	buses := map[string]*natsbus.Bus{}
	type anyMsg = map[string]any
	for _, s := range contracts.Services {
		b := connect(t, urls[s.Name], s.Name, names)
		buses[s.Name] = b
		if slices.Contains(s.Streams, contracts.StreamEvents) {
			// Twice: the second start updates the stream.
			for range 2 {
				if err := b.EnsureEventsStream(ctx); err != nil {
					t.Fatalf("%s: %v", s.Name, err)
				}
			}
		}
		if err := b.Check(ctx); err != nil {
			t.Fatalf("%s readiness: %v", s.Name, err)
		}
		for _, rpc := range s.Serves {
			if _, err := natsbus.Serve(b, rpc, s.Name, func(context.Context, anyMsg) (anyMsg, error) {
				return anyMsg{"servedBy": s.Name}, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.NC.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range contracts.Services {
		b := buses[s.Name]
		for _, ev := range s.Publishes {
			if err := publishEvent(ctx, b, ev); err != nil {
				t.Errorf("%s publishes %s: %v", s.Name, ev, err)
				continue
			}
			select {
			case m := <-events:
				if m.Subject != names.Subject(contracts.EventSubject(ev)) {
					t.Errorf("event on %s, want %s", m.Subject, ev)
				}
			case <-time.After(3 * time.Second):
				t.Errorf("%s's %s never arrived", s.Name, ev)
			}
		}
		for _, rpc := range s.Serves {
			// The harness stands in for future callers of RPCs nobody calls yet.
			if _, err := natsbus.Request[anyMsg, anyMsg](ctx, harness, rpc, anyMsg{}); err != nil {
				t.Errorf("%s serves %s: %v", s.Name, rpc, err)
			}
		}
		for _, rpc := range s.Calls {
			if _, err := natsbus.Request[anyMsg, anyMsg](ctx, b, rpc, anyMsg{}); err != nil {
				t.Errorf("%s calls %s: %v", s.Name, rpc, err)
			}
		}
	}

	translation := buses["translation"]
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := publishEvent(short, translation, contracts.EventTopicDeleted); err == nil {
		t.Error("translation published topics' event")
	}
	permissionError(t, translation, names.Subject(contracts.EventSubject(contracts.EventTopicDeleted)))
	auth := buses["auth"]
	short2, cancel2 := context.WithTimeout(ctx, time.Second)
	defer cancel2()
	if err := auth.JS.DeleteStream(short2, names.Stream(contracts.StreamEvents)); err == nil {
		t.Error("auth deleted the EVENTS stream")
	}
	permissionError(t, auth, "$JS.API.STREAM.DELETE."+names.Stream(contracts.StreamEvents))
}

// A service without credentials, or with another's password, gets nowhere.
func TestUnknownUsersAreRefused(t *testing.T) {
	urls := natstest.StartWithUsers(t, contracts.Names{Prefix: "anon"})
	u := urls["auth"]
	at := strings.LastIndex(u, "@")
	if _, err := nats.Connect("nats://" + u[at+1:]); err == nil {
		t.Error("anonymous connection accepted")
	}
	if _, err := nats.Connect("nats://auth:wrong@" + u[at+1:]); err == nil {
		t.Error("wrong password accepted")
	}
}

// Every RPC someone calls is served by exactly one service, and the table's
// names are unique.
func TestTableIsConsistent(t *testing.T) {
	servedBy := map[string]string{}
	seen := map[string]bool{contracts.HarnessUser: true}
	for _, s := range contracts.Services {
		if seen[s.Name] {
			t.Errorf("service %s listed twice (or named like the harness)", s.Name)
		}
		seen[s.Name] = true
		for _, rpc := range s.Serves {
			if other, ok := servedBy[rpc]; ok {
				t.Errorf("%s served by %s and %s", rpc, other, s.Name)
			}
			servedBy[rpc] = s.Name
		}
	}
	for _, s := range contracts.Services {
		for _, rpc := range s.Calls {
			if _, ok := servedBy[rpc]; !ok {
				t.Errorf("%s calls %s, which no service serves", s.Name, rpc)
			}
		}
	}
}

// A service gets its replies under its own inbox prefix and may not listen
// to another's: topics cannot read the answers auth sends translation.
func TestServicesCannotReadEachOthersReplies(t *testing.T) {
	names := contracts.Names{Prefix: "inbox"}
	urls := natstest.StartWithUsers(t, names)
	topics := connect(t, urls["topics"], "topics", names)
	spy := contracts.InboxPrefix("translation") + ".>"
	if _, err := topics.NC.SubscribeSync(spy); err != nil {
		t.Fatal(err)
	}
	if err := topics.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	permissionError(t, topics, spy)
	own, err := topics.NC.SubscribeSync(contracts.InboxPrefix("topics") + ".x")
	if err != nil {
		t.Fatal(err)
	}
	if err := topics.NC.Flush(); err != nil || !own.IsValid() {
		t.Fatalf("own inbox: %v", err)
	}
	if err := topics.NC.LastError(); err != nil && strings.Contains(err.Error(), contracts.InboxPrefix("topics")) {
		t.Fatalf("own inbox refused: %v", err)
	}
}

// publishEvent publishes an event the way the outbox relay does.
func publishEvent(ctx context.Context, b *natsbus.Bus, eventType string) error {
	m, err := outbox.Event(ctx, eventType, 1, time.Now(), map[string]any{})
	if err != nil {
		return err
	}
	return b.PublishRaw(ctx, m.Subject, m.ID, m.Data)
}

// A service with a bucket can do with it what nats.go's Object Store does
// (create, put, read through an ordered consumer, get info, list, delete);
// another service can do none of it.
func TestBucketOwnersUseTheirBucketsOnly(t *testing.T) {
	names := contracts.Names{Prefix: "obj"}
	urls := natstest.StartWithUsers(t, names)
	ctx := context.Background()
	owners := 0
	for _, s := range contracts.Services {
		for _, base := range s.Buckets {
			owners++
			b := connect(t, urls[s.Name], s.Name, names)
			bucket := names.Stream(base)
			obs, err := b.JS.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: bucket})
			if err != nil {
				t.Fatalf("%s creates %s: %v", s.Name, bucket, err)
			}
			// Twice: the second start updates the bucket.
			if _, err := b.JS.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: bucket}); err != nil {
				t.Fatalf("%s updates %s: %v", s.Name, bucket, err)
			}
			data := make([]byte, 300_000) // three chunks
			for i := range data {
				data[i] = byte(i * 7)
			}
			if _, err := obs.PutBytes(ctx, "a", data); err != nil {
				t.Fatalf("%s puts into %s: %v", s.Name, bucket, err)
			}
			got, err := obs.GetBytes(ctx, "a")
			if err != nil || string(got) != string(data) {
				t.Fatalf("%s reads %s: %d bytes, %v", s.Name, bucket, len(got), err)
			}
			if _, err := obs.List(ctx); err != nil {
				t.Fatalf("%s lists %s: %v", s.Name, bucket, err)
			}
			if err := obs.Delete(ctx, "a"); err != nil {
				t.Fatalf("%s deletes from %s: %v", s.Name, bucket, err)
			}
			if _, err := obs.GetInfo(ctx, "a"); !errors.Is(err, jetstream.ErrObjectNotFound) {
				t.Fatalf("after delete: %v", err)
			}
			if _, err := obs.PutBytes(ctx, "b", []byte("kept")); err != nil {
				t.Fatal(err)
			}

			short, cancel := context.WithTimeout(ctx, time.Second)
			if err := b.JS.DeleteObjectStore(short, bucket); err == nil {
				t.Errorf("%s deleted its bucket's stream", s.Name)
			}
			cancel()
			permissionError(t, b, "$JS.API.STREAM.DELETE."+contracts.ObjectStream(bucket))

			for _, other := range contracts.Services {
				if other.Name == s.Name {
					continue
				}
				o := connect(t, urls[other.Name], other.Name, names)
				short, cancel := context.WithTimeout(ctx, time.Second)
				if slices.Contains(other.ReadsBuckets, base) {
					// A reader reads the object and can neither write nor
					// delete.
					ro, err := o.JS.ObjectStore(short, bucket)
					if err != nil {
						t.Fatalf("%s binds %s's bucket to read it: %v", other.Name, s.Name, err)
					}
					if got, err := ro.GetBytes(short, "b"); err != nil || string(got) != "kept" {
						t.Fatalf("%s reads %s's object: %q, %v", other.Name, s.Name, got, err)
					}
					if err := ro.Delete(short, "b"); err == nil {
						t.Errorf("%s deleted an object of %s's bucket", other.Name, s.Name)
					}
					cancel()
				} else {
					if _, err := o.JS.ObjectStore(short, bucket); err == nil {
						t.Errorf("%s bound %s's bucket", other.Name, s.Name)
					}
					cancel()
					permissionError(t, o, "$JS.API.STREAM.INFO."+contracts.ObjectStream(bucket))
				}
				if err := o.NC.Publish("$O."+bucket+".C.x", []byte("x")); err != nil {
					t.Fatal(err)
				}
				permissionError(t, o, "$O."+bucket+".C.x")
			}
		}
	}
	if owners == 0 {
		t.Fatal("no service owns a bucket")
	}
}

// streamSubjects are the base subjects each stream captures.
var streamSubjects = map[string]string{
	contracts.StreamEvents:      contracts.EventsSubjects,
	contracts.StreamMailImport:  contracts.MailImportSubjects,
	contracts.StreamMailInbound: contracts.MailInboundSubjects,
}

// Each service creates and reads its own durable consumers with exactly the
// names and filters of the table, through the API forms nats.go uses
// against nats-server 2.9 and later.
func TestEachServiceCreatesItsOwnConsumers(t *testing.T) {
	names := contracts.Names{Prefix: "cons"}
	urls := natstest.StartWithUsers(t, names)
	ctx := context.Background()
	harness := connect(t, urls[contracts.HarnessUser], contracts.HarnessUser, names)
	for base, subj := range streamSubjects {
		if _, err := harness.JS.CreateStream(ctx, jetstream.StreamConfig{Name: names.Stream(base), Subjects: []string{names.Subject(subj)}}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, s := range contracts.Services {
		for _, c := range s.Consumers {
			n++
			b := connect(t, urls[s.Name], s.Name, names)
			cfg := jetstream.ConsumerConfig{Durable: names.Stream(c.Durable), AckPolicy: jetstream.AckExplicitPolicy}
			subject := names.Subject(strings.Replace(streamSubjects[c.Stream], ">", c.Durable, 1))
			if c.Filter != "" {
				cfg.FilterSubject = names.Subject(c.Filter)
				subject = names.Subject(strings.Replace(c.Filter, ">", "x", 1))
			}
			// Twice: a restart updates the consumer.
			var cons jetstream.Consumer
			for range 2 {
				var err error
				if cons, err = b.JS.CreateOrUpdateConsumer(ctx, names.Stream(c.Stream), cfg); err != nil {
					t.Fatalf("%s creates %s on %s: %v", s.Name, c.Durable, c.Stream, err)
				}
			}
			if _, err := harness.JS.Publish(ctx, subject, []byte("x")); err != nil {
				t.Fatal(err)
			}
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for m := range batch.Messages() {
				got++
				if err := m.DoubleAck(ctx); err != nil {
					t.Fatalf("%s acks on %s: %v", s.Name, c.Durable, err)
				}
			}
			if got != 1 || batch.Error() != nil {
				t.Fatalf("%s fetched %d messages from %s: %v", s.Name, got, c.Durable, batch.Error())
			}
			if _, err := b.JS.Consumer(ctx, names.Stream(c.Stream), names.Stream(c.Durable)); err != nil {
				t.Fatalf("%s reads %s's info: %v", s.Name, c.Durable, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no consumers in the table")
	}
}

// A service may create no consumer but its own: tickets' user cannot read
// auth's events, neither through a consumer of any name, filter or API form,
// nor by subscribing to them.
func TestTicketsCannotReadAuthEvents(t *testing.T) {
	names := contracts.Names{Prefix: "pin"}
	urls := natstest.StartWithUsers(t, names)
	ctx := context.Background()
	harness := connect(t, urls[contracts.HarnessUser], contracts.HarnessUser, names)
	if err := harness.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	tickets := connect(t, urls["tickets"], "tickets", names)
	stream := names.Stream(contracts.StreamEvents)
	authEvents := names.Subject(contracts.EventSubject("auth.>"))
	own := names.Stream(contracts.DurableTicketsTopics)
	for name, cfg := range map[string]jetstream.ConsumerConfig{
		"own durable, auth filter":     {Durable: own, FilterSubject: authEvents},
		"own durable, no filter":       {Durable: own},
		"own durable, everything":      {Durable: own, FilterSubject: names.Subject(contracts.EventsSubjects)},
		"new durable, auth filter":     {Durable: "SPY", FilterSubject: authEvents},
		"auth's reset event":           {Durable: "SPY", FilterSubject: names.Subject(contracts.EventSubject(contracts.EventPasswordResetRequested))},
		"ephemeral, auth filter":       {FilterSubject: authEvents},
		"another's durable and filter": {Durable: names.Stream(contracts.DurableAssistantMessages), FilterSubject: names.Subject(contracts.EventSubject(contracts.EventMessageCreated))},
	} {
		t.Run(name, func(t *testing.T) {
			short, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if _, err := tickets.JS.CreateOrUpdateConsumer(short, stream, cfg); err == nil {
				t.Fatalf("tickets created %+v", cfg)
			}
			permissionError(t, tickets, "$JS.API.CONSUMER.CREATE."+stream)
		})
	}
	t.Run("legacy durable create", func(t *testing.T) {
		// CONSUMER.DURABLE.CREATE carries no filter in its subject: the
		// server would take any filter, so it is not allowed on EVENTS.
		req := `{"stream_name":"` + stream + `","config":{"durable_name":"` + own + `","filter_subject":"` + authEvents + `","ack_policy":"explicit"}}`
		subj := "$JS.API.CONSUMER.DURABLE.CREATE." + stream + "." + own
		if _, err := tickets.NC.Request(subj, []byte(req), time.Second); err == nil {
			t.Fatal("tickets created a durable through the legacy subject")
		}
		permissionError(t, tickets, subj)
	})
	t.Run("core subscription", func(t *testing.T) {
		if _, err := tickets.NC.SubscribeSync(authEvents); err != nil {
			t.Fatal(err)
		}
		if err := tickets.NC.Flush(); err != nil {
			t.Fatal(err)
		}
		permissionError(t, tickets, authEvents)
	})
	// Nothing reads auth's events: no consumer exists on EVENTS.
	st, err := harness.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	lister := st.ListConsumers(ctx)
	for info := range lister.Info() {
		t.Errorf("consumer %s (filter %q) exists", info.Name, info.Config.FilterSubject)
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	// Its own consumer with its own filter still works.
	if _, err := tickets.JS.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: own,
		FilterSubject: names.Subject(contracts.EventSubject("topic.>"))}); err != nil {
		t.Fatalf("tickets' own consumer: %v", err)
	}
}

// The live service reads EVENTS through ordered consumers of generated names
// with the table's filters only: it receives a ticket event, and can neither
// open a consumer on auth's events (whatever its name or API form) nor use
// another service's durable consumer.
func TestLiveReadsOnlyItsFilters(t *testing.T) {
	names := contracts.Names{Prefix: "live"}
	urls := natstest.StartWithUsers(t, names)
	ctx := context.Background()
	harness := connect(t, urls[contracts.HarnessUser], contracts.HarnessUser, names)
	if err := harness.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	stream := names.Stream(contracts.StreamEvents)
	tickets := connect(t, urls["tickets"], "tickets", names)
	own := names.Stream(contracts.DurableTicketsReplyDelivery)
	if _, err := tickets.JS.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: own,
		FilterSubject: names.Subject(contracts.EventSubject("message.reply.>")), AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	live := connect(t, urls["live"], "live", names)
	if err := live.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range contracts.LiveConsumers {
		cons, err := live.JS.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{names.Subject(c.Filter)}})
		if err != nil {
			t.Fatalf("live opens %s: %v", c.Filter, err)
		}
		subject := names.Subject(strings.Replace(c.Filter, ">", "x", 1))
		if _, err := harness.JS.Publish(ctx, subject, []byte("x")); err != nil {
			t.Fatal(err)
		}
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil || m.Subject() != subject {
			t.Fatalf("live reads %s: %v", c.Filter, err)
		}
		if _, err := cons.Info(ctx); err != nil {
			t.Fatalf("live reads its consumer's info: %v", err)
		}
	}
	authEvents := names.Subject(contracts.EventSubject("auth.>"))
	for name, cfg := range map[string]jetstream.ConsumerConfig{
		"ephemeral, auth filter":      {Name: "SPY", FilterSubject: authEvents},
		"ephemeral, every event":      {Name: "SPY", FilterSubject: names.Subject(contracts.EventsSubjects)},
		"ephemeral, no filter":        {Name: "SPY"},
		"ephemeral, several filters":  {Name: "SPY", FilterSubjects: []string{names.Subject(contracts.EventSubject("ticket.>")), authEvents}},
		"a durable of tickets":        {Durable: own, FilterSubject: names.Subject(contracts.EventSubject("message.reply.>"))},
		"a durable of tickets, moved": {Durable: own, FilterSubject: names.Subject(contracts.EventSubject("ticket.>"))},
	} {
		t.Run(name, func(t *testing.T) {
			short, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if _, err := live.JS.CreateOrUpdateConsumer(short, stream, cfg); err == nil {
				t.Fatalf("live created %+v", cfg)
			}
			permissionError(t, live, "$JS.API.CONSUMER.CREATE."+stream)
		})
	}
	for _, op := range []string{"MSG.NEXT", "INFO", "DELETE"} {
		t.Run(op+" of a durable of tickets", func(t *testing.T) {
			subj := "$JS.API.CONSUMER." + op + "." + stream + "." + own
			if _, err := live.NC.Request(subj, []byte(`{"batch":1,"expires":100000000}`), 500*time.Millisecond); err == nil {
				t.Fatalf("live used %s", subj)
			}
			permissionError(t, live, subj)
		})
	}
	if _, err := harness.JS.Consumer(ctx, stream, own); err != nil {
		t.Fatalf("tickets' durable is gone: %v", err)
	}
}
