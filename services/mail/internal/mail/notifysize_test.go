package mail_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/services/mail/internal/mail"
)

const guid = "d1a2b3c4-0000-4a4a-9b9b-123456789abc"

func TestCheckNotification(t *testing.T) {
	ok := mail.Notification{SubscriptionID: guid, ClientState: strings.Repeat("s", 128), ChangeType: "created",
		Resource:   "Users/" + guid + "/Messages/" + strings.Repeat("A", 1024-len("Users/"+guid+"/Messages/")),
		ResourceID: strings.Repeat("A", 512), TenantID: guid}
	with := func(f func(*mail.Notification)) mail.Notification { n := ok; f(&n); return n }
	tests := []struct {
		name  string
		item  mail.Notification
		field string
	}{
		{"every field at Graph's size", ok, ""},
		{"lifecycle item without changeType", mail.Notification{SubscriptionID: guid, ClientState: "c", LifecycleEvent: "missed"}, ""},
		{"empty item (left to the notifier)", mail.Notification{}, ""},
		{"changeType updated", with(func(n *mail.Notification) { n.ChangeType = "updated" }), ""},
		{"changeType deleted, other case", with(func(n *mail.Notification) { n.ChangeType = "Deleted" }), ""},
		{"each lifecycle event", with(func(n *mail.Notification) { n.LifecycleEvent = "reauthorizationRequired" }), ""},
		{"subscriptionRemoved", with(func(n *mail.Notification) { n.LifecycleEvent = "subscriptionRemoved" }), ""},
		{"subscriptionId 37", with(func(n *mail.Notification) { n.SubscriptionID = guid + "0" }), "subscriptionId"},
		{"subscriptionId 1 MB", with(func(n *mail.Notification) { n.SubscriptionID = strings.Repeat("x", 1<<20) }), "subscriptionId"},
		{"subscriptionId not UTF-8", with(func(n *mail.Notification) { n.SubscriptionID = "\xff" }), "subscriptionId"},
		{"clientState 129", with(func(n *mail.Notification) { n.ClientState = strings.Repeat("s", 129) }), "clientState"},
		{"clientState not UTF-8", with(func(n *mail.Notification) { n.ClientState = "a\xffb" }), "clientState"},
		{"resource 1025", with(func(n *mail.Notification) { n.Resource += "A" }), "resource"},
		{"resourceData.id 513", with(func(n *mail.Notification) { n.ResourceID += "A" }), "resourceData.id"},
		{"tenantId 37", with(func(n *mail.Notification) { n.TenantID = guid + "0" }), "tenantId"},
		{"changeType not Graph's", with(func(n *mail.Notification) { n.ChangeType = "created,updated" }), "changeType"},
		{"changeType 1 MB", with(func(n *mail.Notification) { n.ChangeType = strings.Repeat("c", 1<<20) }), "changeType"},
		{"lifecycleEvent not Graph's", with(func(n *mail.Notification) { n.LifecycleEvent = "somethingNew" }), "lifecycleEvent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mail.CheckNotification(tt.item); got != tt.field {
				t.Fatalf("CheckNotification = %q, want %q", got, tt.field)
			}
		})
	}
}

// An oversized item is dropped before it reaches the rate limiter, the
// lookup cache, the store or the park, even when its client state is that
// of a create in flight.
func TestNotifyMalformedTouchesNothing(t *testing.T) {
	e := newNotifyEnv(t)
	var logs bytes.Buffer
	n := mail.NewNotifier(e.store, &fakeQueue{}, e.clock.Now, slog.New(slog.NewTextHandler(&logs, nil)), e.reg, mail.NotifierOptions{})
	t.Cleanup(n.Close)
	e.pending(t, 1, "p@contoso.com", "secret")
	big := strings.Repeat("x", 256<<10)
	var items []mail.Notification
	for range 20 {
		items = append(items, []mail.Notification{
			note(big+randid.Hex(8), "secret"),
			note(randid.Hex(8), big),
			{SubscriptionID: randid.Hex(8), ClientState: "secret", Resource: big},
			{SubscriptionID: randid.Hex(8), ClientState: "secret", ChangeType: "created", TenantID: big},
			{SubscriptionID: randid.Hex(8), ClientState: "secret", ChangeType: big},
		}...)
	}
	res, err := n.Notify(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped != len(items) || res.Parked != 0 {
		t.Fatalf("result %+v, want all %d dropped", res, len(items))
	}
	if got := counter(t, e.reg, "mail_notifications_dropped_total", "reason", mail.DropMalformed); got != float64(len(items)) {
		t.Errorf("dropped malformed = %v", got)
	}
	if k, _ := n.LimiterSize(); k != 0 {
		t.Errorf("the limiter holds %d keys", k)
	}
	if c, _ := n.CacheSize(); c != 0 {
		t.Errorf("the cache holds %d entries", c)
	}
	if got := e.store.bySubscription.Load() + e.store.byMailbox.Load(); got != 0 {
		t.Errorf("%d lookups", got)
	}
	if n.Parked() != 0 || n.ParkedBytes() != 0 {
		t.Errorf("parked %d items, %d bytes", n.Parked(), n.ParkedBytes())
	}
	// Logged once per window, with the count and never the value.
	lines := strings.Count(logs.String(), "\n")
	if lines != 1 || strings.Contains(logs.String(), "xxxx") || !strings.Contains(logs.String(), "dropped=1 ") {
		t.Errorf("log:\n%.500s", logs.String())
	}
	e.clock.Advance(time.Minute)
	if _, err := n.Notify(context.Background(), items[:3]); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(logs.String(), "\n"); got != 2 || !strings.Contains(logs.String(), "dropped=100 ") {
		t.Errorf("after the window, log:\n%.1000s", logs.String())
	}
}

// An unknown id is parked only while a create is in flight with the item's
// client state; a stranger's guessed client state is dropped at once.
func TestNotifyParksOnlyWhileCreateInFlight(t *testing.T) {
	e := newNotifyEnv(t)
	n := e.notifier(t, &fakeQueue{}, mail.NotifierOptions{})
	f := e.pending(t, 1, "p@contoso.com", "secret")
	e.folder(t, 2, "active@contoso.com", "inbox", true, true, "sub-active", "active-secret")
	tests := []struct {
		name   string
		item   mail.Notification
		parked bool
	}{
		{"create in flight with this client state", note("new-id", "secret"), true},
		{"a guessed client state", note("guessed-id", randid.Hex(16)), false},
		{"no client state", note("bare-id", ""), false},
		{"an active folder's client state", note("other-id", "active-secret"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := n.Notify(context.Background(), []mail.Notification{tt.item})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Parked == 1; got != tt.parked || (!tt.parked && res.Dropped != 1) {
				t.Fatalf("result %+v, want parked %v", res, tt.parked)
			}
		})
	}
	// The create ended (the id is stored): after the cache's TTL, more
	// unknown ids with that client state are no longer parked.
	e.subscribe(t, f.ID, "new-id", "secret")
	e.clock.Advance(31 * time.Second)
	res, err := n.Notify(context.Background(), []mail.Notification{note("late-orphan", "secret")})
	if err != nil || res.Dropped != 1 {
		t.Fatalf("after the create: %+v, %v; want dropped", res, err)
	}
}

// The park is bounded in bytes as well as in items.
func TestNotifyParkBoundedByBytes(t *testing.T) {
	e := newNotifyEnv(t)
	const parkBytes = 32 << 10
	n := e.notifier(t, &fakeQueue{}, mail.NotifierOptions{ParkBytes: parkBytes, UnknownLookupBurst: 10000})
	e.pending(t, 1, "p@contoso.com", "secret")
	items := make([]mail.Notification, 500)
	for i := range items {
		items[i] = note(randid.Hex(16), "secret")
		items[i].Resource = "Users/" + guid + "/Messages/" + strings.Repeat("A", 900)
	}
	res, err := n.Notify(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	if res.Parked == 0 || res.Parked+res.Dropped != len(items) {
		t.Fatalf("result %+v", res)
	}
	if b := n.ParkedBytes(); b > parkBytes || b == 0 {
		t.Errorf("the park holds %d bytes, bound %d", b, parkBytes)
	}
	if got := counter(t, e.reg, "mail_notifications_dropped_total", "reason", mail.DropParkFull); got != float64(res.Dropped) {
		t.Errorf("dropped park-full = %v, want %d", got, res.Dropped)
	}
}

// Whatever the fields, an item CheckNotification passes holds no more than
// Graph's sizes of valid UTF-8, and one it refuses names a field that is
// indeed out of bounds.
func FuzzCheckNotification(f *testing.F) {
	f.Add(guid, "secret", "created", "Users/x/Messages/y", "y", guid, "")
	f.Add(guid+"0", strings.Repeat("s", 129), "created,updated", strings.Repeat("r", 1025), "", "", "missed")
	f.Add("\xff", "", "", "", "", "", "somethingNew")
	f.Fuzz(func(t *testing.T, id, state, change, resource, resourceID, tenant, event string) {
		it := mail.Notification{SubscriptionID: id, ClientState: state, ChangeType: change, Resource: resource,
			ResourceID: resourceID, TenantID: tenant, LifecycleEvent: event}
		field := mail.CheckNotification(it)
		within := func(s string, max int) bool { return len(s) <= max && utf8.ValidString(s) }
		inBounds := within(id, mail.MaxNotifySubscriptionIDLen) && within(state, mail.MaxNotifyClientStateLen) &&
			within(resource, mail.MaxNotifyResourceLen) && within(resourceID, mail.MaxNotifyResourceIDLen) &&
			within(tenant, mail.MaxNotifyTenantIDLen) && len(change) <= 7 && len(event) <= 23
		if field == "" && !inBounds {
			t.Fatalf("passed an item out of bounds: %+v", it)
		}
	})
}
