package e2email

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/graphfake"
)

func toggle(t *testing.T, tn tenant, op string, channelID int64, want int) toggleBody {
	t.Helper()
	var tb toggleBody
	r := client(t).Do(http.MethodPost, fmt.Sprintf("/api/ProviderWebhook/%s/%d", op, channelID), tn.AdminToken, nil)
	if want == http.StatusOK {
		wantStatus(t, r, want, &tb)
	} else {
		wantStatus(t, r, want, nil)
	}
	return tb
}

func fakeSubscription(id string) (graphfake.Subscription, bool) {
	for _, s := range graph.Subscriptions() {
		if s.ID == id {
			return s, true
		}
	}
	return graphfake.Subscription{}, false
}

func TestSubscribeUnsubscribe(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	ch := createChannel(t, tn, emailChannel(t, tn, false))
	if fs := folders(t, tn, ch.ChannelID); fs[0].ProviderSubscriptionID != nil {
		t.Fatalf("subscribed while off: %+v", fs)
	}
	tb := toggle(t, tn, "subscribe", ch.ChannelID, http.StatusOK)
	if !tb.AutoRetrieveEmails || tb.ChannelID != ch.ChannelID || len(tb.Folders) != 1 || tb.Folders[0].Outcome != "subscribed" ||
		tb.Folders[0].ProviderSubscriptionID == nil || !tb.Folders[0].AutoRetrieveEmails {
		t.Fatalf("subscribe: %+v", tb)
	}
	id := *tb.Folders[0].ProviderSubscriptionID
	s, ok := fakeSubscription(id)
	if !ok {
		t.Fatalf("Graph has no subscription %s", id)
	}
	// The resource names the mailbox by its user's id (an alias would fail at Graph).
	if s.Resource != "/users/"+graph.UserID(*ch.ProviderTenantID, *ch.EmailAddress)+"/mailFolders('inbox')/messages" || s.ChangeType != "created" ||
		s.NotificationURL != stk.HTTPSURL+"/api/providerwebhook" || s.LifecycleNotificationURL != s.NotificationURL ||
		s.ClientState == "" || s.TenantID != *ch.ProviderTenantID {
		t.Fatalf("Graph subscription %+v", s)
	}
	// The stored expiry is the one Graph returned, about three days ahead.
	f := folders(t, tn, ch.ChannelID)[0]
	exp, err := time.Parse(time.RFC3339Nano, *f.ProviderSubscriptionExpiration)
	if err != nil || !sameInstant(exp, s.ExpirationDateTime) || time.Until(exp) < 60*time.Hour || time.Until(exp) > 72*time.Hour {
		t.Fatalf("stored expiry %v, Graph's %v", f.ProviderSubscriptionExpiration, s.ExpirationDateTime)
	}
	if *tb.Folders[0].ProviderSubscriptionExpiration != *f.ProviderSubscriptionExpiration {
		t.Fatalf("subscribe reported expiry %s, stored %s", *tb.Folders[0].ProviderSubscriptionExpiration, *f.ProviderSubscriptionExpiration)
	}
	var got channelBody
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/Channels/%d", ch.ChannelID), tn.AgentToken, nil), http.StatusOK, &got)
	if !got.AutoRetrieveEmails {
		t.Fatalf("channel not switched on: %+v", got)
	}

	// Again: nothing new is made.
	tb = toggle(t, tn, "subscribe", ch.ChannelID, http.StatusOK)
	if tb.Folders[0].Outcome != "active" || *tb.Folders[0].ProviderSubscriptionID != id {
		t.Fatalf("second subscribe: %+v", tb)
	}

	tb = toggle(t, tn, "unsubscribe", ch.ChannelID, http.StatusOK)
	if tb.AutoRetrieveEmails || tb.Folders[0].Outcome != "unsubscribed" || tb.Folders[0].ProviderSubscriptionID != nil || tb.Folders[0].AutoRetrieveEmails {
		t.Fatalf("unsubscribe: %+v", tb)
	}
	if _, ok := fakeSubscription(id); ok {
		t.Fatal("the subscription still exists at Graph")
	}
	f = folders(t, tn, ch.ChannelID)[0]
	if f.ProviderSubscriptionID != nil || f.ProviderSubscriptionExpiration != nil || f.AutoRetrieveEmails {
		t.Fatalf("folder after unsubscribe %+v", f)
	}
	// A notification of the deleted subscription queues nothing.
	n := len(imports(t, f.FolderID))
	if _, err := graph.Notify(t.Context(), id, 1); err == nil {
		t.Fatal("the fake still notifies a deleted subscription")
	}
	if len(imports(t, f.FolderID)) != n {
		t.Fatal("import queued after unsubscribe")
	}
}

func TestSubscribeNotFound(t *testing.T) {
	t.Parallel()
	tn, other := newTenant(t), newTenant(t)
	web := createChannel(t, tn, map[string]any{"name": "Web", "kind": "web"})
	deleted := createChannel(t, tn, emailChannel(t, tn, false))
	wantStatus(t, client(t).Do(http.MethodDelete, fmt.Sprintf("/api/Channels/%d", deleted.ChannelID), tn.AdminToken, nil), http.StatusNoContent, nil)
	mine := createChannel(t, tn, emailChannel(t, tn, false))
	for _, op := range []string{"subscribe", "unsubscribe"} {
		toggle(t, tn, op, 999999999, http.StatusNotFound)
		toggle(t, tn, op, web.ChannelID, http.StatusNotFound)
		toggle(t, tn, op, deleted.ChannelID, http.StatusNotFound)
		toggle(t, other, op, mine.ChannelID, http.StatusNotFound)
		wantStatus(t, client(t).Do(http.MethodPost, "/api/ProviderWebhook/"+op+"/abc", tn.AdminToken, nil), http.StatusBadRequest, nil)
	}
	// The refused calls changed nothing.
	var got channelBody
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/Channels/%d", mine.ChannelID), tn.AdminToken, nil), http.StatusOK, &got)
	if got.AutoRetrieveEmails {
		t.Fatal("another tenant's subscribe switched the channel")
	}
}

// A channel whose provider is not microsoft365 is switched without
// provider subscriptions.
func TestSubscribeOtherProviderSkipped(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	body := emailChannel(t, tn, false)
	body["provider"], body["providerTenantID"] = "none", nil
	ch := createChannel(t, tn, body)
	tb := toggle(t, tn, "subscribe", ch.ChannelID, http.StatusOK)
	if !tb.AutoRetrieveEmails || tb.Provider != "none" || tb.Folders[0].Outcome != "skipped" || !tb.Folders[0].AutoRetrieveEmails {
		t.Fatalf("%+v", tb)
	}
	// Nothing at Graph for its mailbox. (Counting every subscription of
	// the fake raced with the parallel tests that delete theirs.)
	for _, sub := range graph.Subscriptions() {
		if strings.EqualFold(sub.Mailbox, body["emailAddress"].(string)) {
			t.Fatalf("a channel of provider none got a Graph subscription: %+v", sub)
		}
	}
	tb = toggle(t, tn, "unsubscribe", ch.ChannelID, http.StatusOK)
	if tb.AutoRetrieveEmails || tb.Folders[0].Outcome != "skipped" {
		t.Fatalf("%+v", tb)
	}
}

// Deleting a channel deletes its subscriptions at Graph.
func TestDeleteChannelDeletesSubscriptions(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	ch, f := subscribedFolder(t, tn)
	id := *f.ProviderSubscriptionID
	wantStatus(t, client(t).Do(http.MethodDelete, fmt.Sprintf("/api/Channels/%d", ch.ChannelID), tn.AdminToken, nil), http.StatusNoContent, nil)
	eventually(t, 10*time.Second, "the subscription deleted at Graph", func() bool { _, ok := fakeSubscription(id); return !ok })
}

// The renewal job renews a subscription whose stored expiry is within the
// hour, once, even with three renewal processes running, and leaves the
// others alone.
func TestRenewalWithinTheHour(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	// A second and a third renewal process beside the stack's.
	var more []*stack.Replica
	for range 2 {
		r, err := stk.StartReplica(t.Context(), "renewal")
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, r)
		t.Cleanup(func() {
			if err := r.Stop(); err != nil {
				t.Errorf("renewal %s: %v (log %s)", r.Name, err, stk.LogFile(r.Name))
			}
		})
	}
	// rounds are the renewal rounds each process has run.
	rounds := func() []float64 {
		out := []float64{metric(t, "renewal", "mail_renewal_rounds_total")}
		for _, r := range more {
			out = append(out, metricAt(t, r.URL, "mail_renewal_rounds_total"))
		}
		return out
	}

	const due, notDue = 4, 2
	var dueIDs, otherIDs []string
	var dueFolders []int64
	for i := range due + notDue {
		_, f := subscribedFolder(t, tn)
		if i < due {
			dueIDs = append(dueIDs, *f.ProviderSubscriptionID)
			dueFolders = append(dueFolders, f.FolderID)
		} else {
			otherIDs = append(otherIDs, *f.ProviderSubscriptionID)
			exec(t, `UPDATE mail.channel_folders SET provider_subscription_expiration = now() + interval '2 hours' WHERE folder_id = $1`, f.FolderID)
		}
	}
	exec(t, `UPDATE mail.channel_folders SET provider_subscription_expiration = now() + interval '30 minutes' WHERE folder_id = ANY($1)`, dueFolders)
	eventually(t, 15*time.Second, "every due subscription renewed", func() bool {
		for _, id := range dueIDs {
			if graph.Renewals(id) == 0 {
				return false
			}
		}
		return true
	})
	// Two more rounds of every process, each of which would renew a
	// folder it still took for due.
	before := rounds()
	eventually(t, 15*time.Second, "two more rounds of every renewal process", func() bool {
		for i, n := range rounds() {
			if n < before[i]+2 {
				return false
			}
		}
		return true
	})
	for _, id := range dueIDs {
		if n := graph.Renewals(id); n != 1 {
			t.Errorf("subscription %s renewed %d times", id, n)
		}
		s, _ := fakeSubscription(id)
		var stored time.Time
		if err := backends.DB.QueryRow(t.Context(), `SELECT provider_subscription_expiration FROM mail.channel_folders WHERE provider_subscription_id = $1`, id).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if !sameInstant(stored, s.ExpirationDateTime) || time.Until(stored) < 60*time.Hour {
			t.Errorf("stored expiry %v, Graph's %v", stored, s.ExpirationDateTime)
		}
	}
	for _, id := range otherIDs {
		if n := graph.Renewals(id); n != 0 {
			t.Errorf("subscription %s outside the hour renewed %d times", id, n)
		}
	}
}

// A subscription Graph deleted (not renewed in time) is made again, stored,
// and a catch-up import is queued.
func TestRenewalRecreatesDeletedSubscription(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	_, f := subscribedFolder(t, tn)
	old := *f.ProviderSubscriptionID
	eventually(t, 5*time.Second, "catch-up import", func() bool { return len(imports(t, f.FolderID)) >= 1 })
	// The re-creation's catch-up in a bucket of its own (one in the same
	// bucket is the same import, run after the bucket ends).
	time.Sleep(contracts.MailImportBucket)
	graph.Expire(old)
	exec(t, `UPDATE mail.channel_folders SET provider_subscription_expiration = now() + interval '10 minutes' WHERE folder_id = $1`, f.FolderID)
	var now string
	eventually(t, 15*time.Second, "a new subscription stored", func() bool {
		if err := backends.DB.QueryRow(t.Context(), `SELECT coalesce(provider_subscription_id, '') FROM mail.channel_folders WHERE folder_id = $1`, f.FolderID).Scan(&now); err != nil {
			t.Fatal(err)
		}
		return now != "" && now != old
	})
	if _, ok := fakeSubscription(now); !ok {
		t.Fatalf("new subscription %s not at Graph", now)
	}
	eventually(t, 5*time.Second, "a second catch-up import", func() bool {
		n := 0
		for _, r := range imports(t, f.FolderID) {
			if r.Reason == contracts.ImportCatchUp {
				n++
			}
		}
		return n >= 2
	})
}

// Lifecycle notifications: missed queues a catch-up; subscriptionRemoved
// gets the subscription made again; reauthorizationRequired renews it.
func TestLifecycleNotifications(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	_, f := subscribedFolder(t, tn)
	id := *f.ProviderSubscriptionID
	eventually(t, 5*time.Second, "catch-up import", func() bool { return len(imports(t, f.FolderID)) >= 1 })

	if status, err := graph.NotifyLifecycle(t.Context(), id, "missed"); err != nil || status != http.StatusOK {
		t.Fatalf("missed: %d %v", status, err)
	}
	last := imports(t, f.FolderID)
	if r := last[len(last)-1]; r.Reason != contracts.ImportMissed {
		t.Fatalf("after missed: %+v", r)
	}

	if status, err := graph.NotifyLifecycle(t.Context(), id, "reauthorizationRequired"); err != nil || status != http.StatusOK {
		t.Fatalf("reauthorizationRequired: %d %v", status, err)
	}
	eventually(t, 15*time.Second, "renewed after reauthorizationRequired", func() bool { return graph.Renewals(id) >= 1 })

	if status, err := graph.NotifyLifecycle(t.Context(), id, "subscriptionRemoved"); err != nil || status != http.StatusOK {
		t.Fatalf("subscriptionRemoved: %d %v", status, err)
	}
	eventually(t, 15*time.Second, "made again after subscriptionRemoved", func() bool {
		var now string
		_ = backends.DB.QueryRow(t.Context(), `SELECT coalesce(provider_subscription_id, '') FROM mail.channel_folders WHERE folder_id = $1`, f.FolderID).Scan(&now)
		_, ok := fakeSubscription(now)
		return now != "" && now != id && ok
	})
}

// Not parallel: it changes the fake Graph for everyone. A failed validation
// handshake makes Graph refuse the create (400): the switch holds, the
// folder's outcome says why, and the renewal job makes the subscription
// once Graph accepts again.
func TestSubscribeWhenGraphRefuses(t *testing.T) {
	tn := newTenant(t)
	ch := createChannel(t, tn, emailChannel(t, tn, false))
	graph.SetHandshake(graphfake.HandshakeFail)
	tb := toggle(t, tn, "subscribe", ch.ChannelID, http.StatusOK)
	graph.SetHandshake(graphfake.HandshakeValidate)
	if !tb.AutoRetrieveEmails || tb.Folders[0].Outcome != "failed" || tb.Folders[0].Error == "" || tb.Folders[0].ProviderSubscriptionID != nil {
		t.Fatalf("subscribe while Graph refuses: %+v", tb)
	}
	if strings.Contains(tb.Folders[0].Error, stack.FakeGraphClientSecret) {
		t.Fatal("the client secret leaked into the outcome")
	}
	if f := folders(t, tn, ch.ChannelID)[0]; f.ProviderSubscriptionID != nil || !f.AutoRetrieveEmails {
		t.Fatalf("folder after the refusal %+v", f)
	}
	// Once Graph accepts again, subscribing makes it (the renewal job would
	// too, after the folder's retry delay).
	tb = toggle(t, tn, "subscribe", ch.ChannelID, http.StatusOK)
	if tb.Folders[0].Outcome != "subscribed" || tb.Folders[0].ProviderSubscriptionID == nil {
		t.Fatalf("subscribe after the refusal: %+v", tb)
	}
}

// sameInstant compares times to PostgreSQL's precision (Graph writes 100 ns).
func sameInstant(a, b time.Time) bool { return a.Sub(b).Abs() < time.Microsecond }
