package e2email

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/graphfake"
)

// inboxSubscriptions are the fake Graph's live subscriptions of mailbox's
// inbox, whichever way their resources name the mailbox.
func inboxSubscriptions(tenant, mailbox string) []graphfake.Subscription {
	var out []graphfake.Subscription
	for _, s := range graph.Subscriptions() {
		if s.UserID == graph.UserID(tenant, mailbox) && strings.EqualFold(s.FolderID, "inbox") {
			out = append(out, s)
		}
	}
	return out
}

// Not parallel: it slows the fake Graph's creates for everyone. Graph makes
// a subscription even when its creator stopped waiting (the create can take
// 20 s); the stack's creates give up after 5 s. The toggle answers
// "failed", the subscription Graph made afterwards is an orphan, and the
// renewal job's retry deletes it before it makes the folder's own: one
// subscription is left, the stored one.
func TestTimedOutCreateLeavesNoOrphan(t *testing.T) {
	tn := newTenant(t)
	ch := createChannel(t, tn, emailChannel(t, tn, false))
	graph.SetCreateDelay(6 * time.Second)
	tb := toggle(t, tn, "subscribe", ch.ChannelID, http.StatusOK)
	graph.SetCreateDelay(0) // the create in progress keeps its delay
	if !tb.AutoRetrieveEmails || tb.Folders[0].Outcome != "failed" || tb.Folders[0].ProviderSubscriptionID != nil {
		t.Fatalf("subscribe while Graph is slow: %+v", tb)
	}
	var orphan string
	eventually(t, 20*time.Second, "Graph makes the subscription after the client gave up", func() bool {
		for _, s := range inboxSubscriptions(*ch.ProviderTenantID, *ch.EmailAddress) {
			if f := folders(t, tn, ch.ChannelID)[0]; f.ProviderSubscriptionID == nil || *f.ProviderSubscriptionID != s.ID {
				orphan = s.ID
			}
		}
		return orphan != ""
	})
	eventually(t, 30*time.Second, "the orphan deleted and the folder's own subscription stored", func() bool {
		f := folders(t, tn, ch.ChannelID)[0]
		subs := inboxSubscriptions(*ch.ProviderTenantID, *ch.EmailAddress)
		return f.ProviderSubscriptionID != nil && *f.ProviderSubscriptionID != orphan && len(subs) == 1 && subs[0].ID == *f.ProviderSubscriptionID
	})
}

// Graph's paths take a user's id or userPrincipalName, not an alias: a
// channel addressed by an alias is resolved to its user, whose id the
// subscription's resource names.
func TestAliasMailboxSubscribesByItsUserID(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	upn := mailbox()
	alias := mailbox()
	graph.AddAlias(upn, alias)
	body := emailChannel(t, tn, false)
	body["emailAddress"] = alias
	ch := createChannel(t, tn, body)
	tb := toggle(t, tn, "subscribe", ch.ChannelID, http.StatusOK)
	if tb.Folders[0].Outcome != "subscribed" || tb.Folders[0].ProviderSubscriptionID == nil {
		t.Fatalf("subscribe a mailbox addressed by an alias: %+v", tb)
	}
	s, ok := fakeSubscription(*tb.Folders[0].ProviderSubscriptionID)
	userID := graph.UserID(*ch.ProviderTenantID, upn)
	if !ok || s.UserID != userID || !strings.Contains(s.Resource, "/users/"+userID+"/") {
		t.Fatalf("subscription %+v, want its resource to name user %s", s, userID)
	}
}
