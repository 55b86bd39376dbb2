// In-process tests of what the end-to-end suite cannot do: stop NATS under
// a running topics service. Every API scenario (topics, mappings, lookups,
// tenancy, the events of a change) is tested once, through the real gateway
// over HTTPS, in gateway/e2e/topics_test.go.
package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/servicetest"
)

// A topic created while NATS is down: the request succeeds (its event waits
// in the outbox table, written in the same transaction) and topic.created
// reaches the EVENTS stream once NATS is back.
func TestEventOfAChangeMadeWhileNATSIsDownIsPublishedLater(t *testing.T) {
	ns := natstest.StartServer(t, nil)
	svc := servicetest.Start(t, "topics", run, servicetest.Options{Env: map[string]string{"NATS_URL": ns.URL()}})
	token := svc.Token(t, 42, authn.RoleAdmin)

	ns.Stop()
	req, err := http.NewRequest(http.MethodPost, svc.URL+"/api/Topics", strings.NewReader(`{"name":"Created offline"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		TopicID int64 `json:"topicID"`
	}
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || err != nil || created.TopicID <= 0 {
		t.Fatalf("POST with NATS down: %d, %+v, %v", resp.StatusCode, created, err)
	}

	ns.Start()
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := contracts.Names{Prefix: svc.Env["NATS_PREFIX"]}
	cons, err := js.OrderedConsumer(ctx, names.Stream(contracts.StreamEvents), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{names.Subject(contracts.EventSubject(contracts.EventTopicCreated))},
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(20 * time.Second))
	if err != nil {
		t.Fatalf("no topic.created after NATS came back: %v", err)
	}
	var ev contracts.Event[contracts.TopicChanged]
	if err := json.Unmarshal(msg.Data(), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != contracts.EventTopicCreated || ev.CustomerID != 42 || ev.Data.TopicID != created.TopicID || ev.Data.Name != "Created offline" ||
		msg.Headers().Get(jetstream.MsgIDHeader) != ev.ID {
		t.Fatalf("event %+v, Nats-Msg-Id %q", ev, msg.Headers().Get(jetstream.MsgIDHeader))
	}
	// Published once: nothing else on the subject.
	if extra, err := cons.Next(jetstream.FetchMaxWait(time.Second)); err == nil {
		t.Fatalf("a second event: %s", extra.Data())
	}
}
