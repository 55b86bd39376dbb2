package e2ekit

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// The mail context's API as the end-to-end suites of mail (e2email) and
// of mail import (e2eimport) use it.

// Channel is a channel as the API answers it.
type Channel struct {
	ChannelID          int64   `json:"channelID"`
	CustomerID         int64   `json:"customerID"`
	Name               string  `json:"name"`
	Kind               string  `json:"kind"`
	EmailAddress       *string `json:"emailAddress"`
	Provider           string  `json:"provider"`
	ProviderTenantID   *string `json:"providerTenantID"`
	AutoRetrieveEmails bool    `json:"autoRetrieveEmails"`
	IsDeleted          bool    `json:"isDeleted"`
	DateCreated        string  `json:"dateCreated"`
}

// Folder is a channel folder as the API answers it.
type Folder struct {
	FolderID                       int64   `json:"folderID"`
	ChannelID                      int64   `json:"channelID"`
	ExternalFolderID               string  `json:"externalFolderID"`
	DisplayName                    string  `json:"displayName"`
	AutoRetrieveEmails             bool    `json:"autoRetrieveEmails"`
	ProviderSubscriptionID         *string `json:"providerSubscriptionId"`
	ProviderSubscriptionExpiration *string `json:"providerSubscriptionExpiration"`
	LastNotificationAt             *string `json:"lastNotificationAt"`
	LastImportAt                   *string `json:"lastImportAt"`
}

// Mailbox is a fresh address for a test's channel.
func Mailbox() string { return "support-" + randid.Hex(5) + "@contoso.test" }

// ConnectTenant connects a fresh Entra tenant of the fake Graph g to the
// test customer tn through the platform's real flow (start, the fake's
// sign-in, callback, the fake's admin consent, callback: see
// stack.ConnectMicrosoft365) and returns its id, which the customer's
// microsoft365 channels may name.
func ConnectTenant(t testing.TB, c *Client, g *graphfake.Server, tn Tenant) string {
	t.Helper()
	tenant, err := stack.ConnectMicrosoft365(t.Context(), c.HTTP, c.BaseURL,
		func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tn.AdminToken) }, g)
	if err != nil {
		t.Fatalf("connect a Microsoft 365 tenant: %v", err)
	}
	return tenant
}

// EmailChannel is the body of a microsoft365 e-mail channel on a fresh
// mailbox in the connected tenant providerTenantID (ConnectTenant).
func EmailChannel(providerTenantID string, auto bool) map[string]any {
	return map[string]any{"name": "Support " + randid.Hex(3), "kind": "email", "emailAddress": Mailbox(),
		"provider": "microsoft365", "providerTenantID": providerTenantID, "autoRetrieveEmails": auto}
}

// CreateChannel makes a channel as the tenant's admin and returns it.
func CreateChannel(t testing.TB, c *Client, tn Tenant, body map[string]any) Channel {
	t.Helper()
	r := c.Do(http.MethodPost, "/api/Channels", tn.AdminToken, body)
	var ch Channel
	WantStatus(t, r, http.StatusCreated, &ch)
	if r.Header.Get("Location") != fmt.Sprintf("/api/Channels/%d", ch.ChannelID) {
		t.Fatalf("Location %q for %d", r.Header.Get("Location"), ch.ChannelID)
	}
	return ch
}

// Folders lists a channel's folders.
func Folders(t testing.TB, c *Client, tn Tenant, channelID int64) []Folder {
	t.Helper()
	var l List[Folder]
	WantStatus(t, c.Do(http.MethodGet, fmt.Sprintf("/api/Channels/%d/folders", channelID), tn.AgentToken, nil), http.StatusOK, &l)
	return l.Items
}

// SubscribedFolder connects a tenant of the fake Graph g to tn, makes a
// microsoft365 e-mail channel in it that retrieves mail and returns it with
// its inbox, which has its Graph subscription by then.
func SubscribedFolder(t testing.TB, c *Client, g *graphfake.Server, tn Tenant) (Channel, Folder) {
	t.Helper()
	ch := CreateChannel(t, c, tn, EmailChannel(ConnectTenant(t, c, g, tn), true))
	var f Folder
	Eventually(t, 10*time.Second, "the inbox's subscription", func() bool {
		fs := Folders(t, c, tn, ch.ChannelID)
		f = fs[0]
		return f.ProviderSubscriptionID != nil
	})
	return ch, f
}

// Eventually polls cond every 50 ms for up to d.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
