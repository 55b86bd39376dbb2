package e2email

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
)

// One live channel per mailbox and customer, also when ten requests race:
// one 201, the others 409.
func TestChannelsParallelSameMailbox(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	body := emailChannel(t, tn, false)
	body["emailAddress"] = strings.ToUpper(mailbox())
	counts := e2ekit.Parallel(10, func() *e2ekit.Response { return client(t).Do(http.MethodPost, "/api/Channels", tn.AdminToken, body) })
	if counts[http.StatusCreated] != 1 || counts[http.StatusConflict] != 9 {
		t.Fatalf("statuses %v, want one 201 and nine 409", counts)
	}
}

// Five admins subscribe one channel at once: every answer is 200 and Graph
// holds exactly one subscription for the inbox (the folder lock).
func TestSubscribeParallel(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	ch := createChannel(t, tn, emailChannel(t, tn, false))
	counts := e2ekit.Parallel(5, func() *e2ekit.Response {
		return client(t).Do(http.MethodPost, fmt.Sprintf("/api/ProviderWebhook/subscribe/%d", ch.ChannelID), tn.AdminToken, nil)
	})
	if counts[http.StatusOK] != 5 {
		t.Fatalf("statuses %v", counts)
	}
	resource := "/users/" + graph.UserID(*ch.ProviderTenantID, *ch.EmailAddress) + "/mailFolders('inbox')/messages"
	n := 0
	for _, s := range graph.Subscriptions() {
		if s.Resource == resource {
			n++
		}
	}
	f := folders(t, tn, ch.ChannelID)[0]
	if n != 1 || f.ProviderSubscriptionID == nil {
		t.Fatalf("%d subscriptions at Graph for the inbox, folder %+v", n, f)
	}
	// And one catch-up import, through the outbox.
	eventually(t, 10*time.Second, "the catch-up import", func() bool { return len(imports(t, f.FolderID)) == 1 })
}
