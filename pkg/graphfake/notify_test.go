package graphfake

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

var messageResourceRE = regexp.MustCompile(`^Users/[0-9a-f-]{36}/Messages/([A-Za-z0-9_-]+)$`)

func TestNotifyPostsOutlookCreatedItems(t *testing.T) {
	tests := []struct {
		name          string
		receiverCode  int
		n             int
		wantReceiver  int
		wantDistinctN int
	}{
		{name: "one message", n: 1, wantReceiver: http.StatusAccepted, wantDistinctN: 1},
		{name: "three messages in one POST", n: 3, wantReceiver: http.StatusAccepted, wantDistinctN: 3},
		{name: "receiver fails", receiverCode: http.StatusServiceUnavailable, n: 1, wantReceiver: http.StatusServiceUnavailable, wantDistinctN: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.recv.setStatus(tt.receiverCode)
			sub := e.create(e.token(tenantA), e.newSub("agent@contoso.example", "inbox"))
			status, err := e.fake.Notify(context.Background(), sub.ID, tt.n)
			if err != nil || status != tt.wantReceiver {
				t.Fatalf("Notify = %d, %v; want %d", status, err, tt.wantReceiver)
			}
			got := e.recv.gotNotifications()
			if len(got) != 1 || len(got[0].Value) != tt.n {
				t.Fatalf("receiver got %+v, want one POST of %d items", got, tt.n)
			}
			userID := e.fake.Subscriptions()[0].UserID
			ids := map[string]bool{}
			for _, it := range got[0].Value {
				m := messageResourceRE.FindStringSubmatch(it.Resource)
				if m == nil || !strings.Contains(it.Resource, userID) {
					t.Errorf("resource %q does not name a message of user %s", it.Resource, userID)
					continue
				}
				ids[m[1]] = true
				rd := it.ResourceData
				if it.SubscriptionID != sub.ID || it.ChangeType != "created" || it.TenantID != tenantA ||
					it.ClientState == nil || *it.ClientState != "state-inbox" || it.SubscriptionExpirationDateTime != sub.ExpirationDateTime ||
					rd == nil || rd.ID != m[1] || rd.ODataID != it.Resource || rd.ODataType != "#Microsoft.Graph.Message" ||
					!strings.HasPrefix(rd.ODataETag, `W/"`) || it.LifecycleEvent != "" {
					t.Errorf("item %+v (resourceData %+v)", it, rd)
				}
			}
			if len(ids) != tt.wantDistinctN {
				t.Errorf("%d distinct message ids, want %d", len(ids), tt.wantDistinctN)
			}
		})
	}
}

// The wire format is what receivers parse; check it against the documentation's example rather
// than against this package's own types.
func TestNotificationWireFormat(t *testing.T) {
	e := newEnv(t)
	bodies := make(chan []byte, 1)
	e.recv.setHandler(echoOr(func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type %q", ct)
		}
		raw, _ := io.ReadAll(r.Body)
		bodies <- raw
		w.WriteHeader(http.StatusAccepted)
	}))
	sub := e.create(e.token(tenantA), e.newSub("a@b.example", "inbox"))
	if _, err := e.fake.Notify(context.Background(), sub.ID, 1); err != nil {
		t.Fatal(err)
	}
	raw := <-bodies
	var doc struct {
		Value []map[string]any `json:"value"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Value) != 1 {
		t.Fatalf("body %s: %v", raw, err)
	}
	item := doc.Value[0]
	for _, k := range []string{"subscriptionId", "subscriptionExpirationDateTime", "changeType", "resource", "resourceData", "clientState", "tenantId"} {
		if _, ok := item[k]; !ok {
			t.Errorf("item lacks %q: %s", k, raw)
		}
	}
	rd, _ := item["resourceData"].(map[string]any)
	for _, k := range []string{"@odata.type", "@odata.id", "@odata.etag", "id"} {
		if _, ok := rd[k]; !ok {
			t.Errorf("resourceData lacks %q: %s", k, raw)
		}
	}
}

func TestNotifyBatch(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	inbox := e.create(tok, e.newSub("a@b.example", "inbox"))
	support := e.create(tok, e.newSub("a@b.example", "support"))
	elsewhere := e.newSub("a@b.example", "other")
	elsewhere["notificationUrl"] = e.recv.url("/other")
	other := e.create(tok, elsewhere)

	tests := []struct {
		name      string
		items     []Notification
		wantErr   error
		wantItems int
		check     func(t *testing.T, items []notificationItem)
	}{
		{name: "duplicates of one change", items: []Notification{
			{SubscriptionID: inbox.ID, MessageID: "AAkALgAA-m1"}, {SubscriptionID: inbox.ID, MessageID: "AAkALgAA-m1"},
		}, wantItems: 2, check: func(t *testing.T, items []notificationItem) {
			if items[0].ResourceData.ID != "AAkALgAA-m1" || items[1].ResourceData.ID != "AAkALgAA-m1" {
				t.Errorf("items %+v", items)
			}
		}},
		{name: "two subscriptions", items: []Notification{{SubscriptionID: inbox.ID}, {SubscriptionID: support.ID}},
			wantItems: 2, check: func(t *testing.T, items []notificationItem) {
				if items[0].SubscriptionID != inbox.ID || items[1].SubscriptionID != support.ID || *items[1].ClientState != "state-support" {
					t.Errorf("items %+v", items)
				}
			}},
		{name: "forged", items: []Notification{{SubscriptionID: inbox.ID, Forge: true}}, wantItems: 1,
			check: func(t *testing.T, items []notificationItem) {
				if items[0].ClientState == nil || *items[0].ClientState == "state-inbox" {
					t.Errorf("forged clientState %v", items[0].ClientState)
				}
			}},
		{name: "folder resource", items: []Notification{{SubscriptionID: inbox.ID, Resource: "users/a@b.example/mailFolders('inbox')/messages"}},
			wantItems: 1, check: func(t *testing.T, items []notificationItem) {
				if items[0].Resource != "users/a@b.example/mailFolders('inbox')/messages" {
					t.Errorf("resource %q", items[0].Resource)
				}
			}},
		{name: "different URLs", items: []Notification{{SubscriptionID: inbox.ID}, {SubscriptionID: other.ID}}, wantErr: errors.New("")},
		{name: "unknown subscription", items: []Notification{{SubscriptionID: "nope"}}, wantErr: ErrNoSubscription},
		{name: "nothing", wantErr: errors.New("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.recv.gotNotifications())
			status, err := e.fake.NotifyBatch(context.Background(), tt.items...)
			if tt.wantErr != nil {
				if err == nil || (tt.wantErr == ErrNoSubscription && !errors.Is(err, ErrNoSubscription)) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				if len(e.recv.gotNotifications()) != before {
					t.Error("a refused batch was posted")
				}
				return
			}
			if err != nil || status != http.StatusAccepted {
				t.Fatalf("NotifyBatch = %d, %v", status, err)
			}
			got := e.recv.gotNotifications()
			if len(got) != before+1 || len(got[before].Value) != tt.wantItems {
				t.Fatalf("receiver got %+v", got[before:])
			}
			tt.check(t, got[before].Value)
		})
	}
}

func TestNotifyLifecycle(t *testing.T) {
	tests := []struct {
		name        string
		event       string
		lifecycle   bool
		wantPath    string
		wantRemoved bool
	}{
		{name: "missed to the lifecycle URL", event: LifecycleMissed, lifecycle: true, wantPath: "/lifecycle"},
		{name: "reauthorization without a lifecycle URL", event: LifecycleReauthorizationRequired, wantPath: "/api/ProviderWebhook"},
		{name: "removal removes", event: LifecycleSubscriptionRemoved, lifecycle: true, wantPath: "/lifecycle", wantRemoved: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			type post struct {
				path string
				body notificationBody
			}
			posts := make(chan post, 1)
			e.recv.setHandler(echoOr(func(w http.ResponseWriter, r *http.Request) {
				var p post
				p.path = r.URL.Path
				_ = json.NewDecoder(r.Body).Decode(&p.body)
				posts <- p
				w.WriteHeader(http.StatusAccepted)
			}))
			body := e.newSub("a@b.example", "inbox")
			if tt.lifecycle {
				body["lifecycleNotificationUrl"] = e.recv.url("/lifecycle")
			}
			tok := e.token(tenantA)
			sub := e.create(tok, body)
			status, err := e.fake.NotifyLifecycle(context.Background(), sub.ID, tt.event)
			if err != nil || status != http.StatusAccepted {
				t.Fatalf("NotifyLifecycle = %d, %v", status, err)
			}
			p := <-posts
			got := p.body
			if p.path != tt.wantPath || len(got.Value) != 1 {
				t.Fatalf("posted to %q: %+v", p.path, got)
			}
			it := got.Value[0]
			if it.LifecycleEvent != tt.event || it.SubscriptionID != sub.ID || it.TenantID != tenantA ||
				*it.ClientState != "state-inbox" || it.ResourceData != nil || it.Resource != "" || it.ChangeType != "" {
				t.Errorf("item %+v", it)
			}
			removed := e.call(http.MethodGet, "/subscriptions/"+sub.ID, tok, nil).status == http.StatusNotFound
			if removed != tt.wantRemoved {
				t.Errorf("removed = %v, want %v", removed, tt.wantRemoved)
			}
		})
	}
}

func TestNotifyLifecycleRefusesUnknownEvents(t *testing.T) {
	e := newEnv(t)
	sub := e.create(e.token(tenantA), e.newSub("a@b.example", "inbox"))
	if _, err := e.fake.NotifyLifecycle(context.Background(), sub.ID, "deleted"); err == nil {
		t.Error("unknown event accepted")
	}
	if _, err := e.fake.NotifyLifecycle(context.Background(), "nope", LifecycleMissed); !errors.Is(err, ErrNoSubscription) {
		t.Errorf("unknown subscription: %v", err)
	}
}

func TestNotifyOnCreateArrivesBeforeTheCreateAnswers(t *testing.T) {
	e := newEnv(t)
	e.fake.SetNotifyOnCreate(2)
	sub := e.create(e.token(tenantA), e.newSub("a@b.example", "inbox"))
	// create returned only after the 201, so anything received by now came before it.
	got := e.recv.gotNotifications()
	if len(got) != 1 || len(got[0].Value) != 2 || got[0].Value[0].SubscriptionID != sub.ID {
		t.Errorf("before the 201 the receiver got %+v", got)
	}
}
