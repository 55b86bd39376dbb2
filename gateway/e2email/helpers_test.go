package e2email

import (
	"fmt"
	"net/http"
	"testing"

	"supportplatform.dev/gateway/e2e"
	"supportplatform.dev/pkg/randid"
)

// Every test works in tenants of its own, so lists hold only what the test
// made and tests may run in parallel.

// tenant is a customer of the test's own (e2e.Tenant).
type tenant = e2e.Tenant

func newTenant(t *testing.T) tenant { t.Helper(); return e2e.NewTenant(t, stk, client(t), "Mail") }

func client(t testing.TB) *e2e.Client { return e2e.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api) }

// wantStatus is e2e.WantStatus.
func wantStatus(t testing.TB, r *e2e.Response, want int, v any) {
	t.Helper()
	e2e.WantStatus(t, r, want, v)
}

type channelBody struct {
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

type folderBody struct {
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

type listBody[T any] = e2e.List[T]

type toggleBody struct {
	ChannelID          int64  `json:"channelID"`
	AutoRetrieveEmails bool   `json:"autoRetrieveEmails"`
	Provider           string `json:"provider"`
	Folders            []struct {
		FolderID                       int64   `json:"folderID"`
		ExternalFolderID               string  `json:"externalFolderID"`
		AutoRetrieveEmails             bool    `json:"autoRetrieveEmails"`
		Outcome                        string  `json:"outcome"`
		ProviderSubscriptionID         *string `json:"providerSubscriptionId"`
		ProviderSubscriptionExpiration *string `json:"providerSubscriptionExpiration"`
		Error                          string  `json:"error"`
	} `json:"folders"`
}

// mailbox is a fresh address for a test's channel.
func mailbox() string { return "support-" + randid.Hex(5) + "@contoso.test" }

// providerTenant is the Entra tenant the fake Graph issues tokens for.
const providerTenant = "7f3c1c1e-0000-4000-8000-000000000001"

// createChannel makes a channel as admin and returns it.
func createChannel(t *testing.T, tn tenant, body map[string]any) channelBody {
	t.Helper()
	r := client(t).Do(http.MethodPost, "/api/Channels", tn.AdminToken, body)
	var ch channelBody
	wantStatus(t, r, http.StatusCreated, &ch)
	if r.Header.Get("Location") != fmt.Sprintf("/api/Channels/%d", ch.ChannelID) {
		t.Fatalf("Location %q for %d", r.Header.Get("Location"), ch.ChannelID)
	}
	return ch
}

// emailChannel is a microsoft365 e-mail channel body.
func emailChannel(auto bool) map[string]any {
	return map[string]any{"name": "Support " + randid.Hex(3), "kind": "email", "emailAddress": mailbox(),
		"provider": "microsoft365", "providerTenantID": providerTenant, "autoRetrieveEmails": auto}
}

func folders(t *testing.T, tn tenant, channelID int64) []folderBody {
	t.Helper()
	var l listBody[folderBody]
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/Channels/%d/folders", channelID), tn.AgentToken, nil), http.StatusOK, &l)
	return l.Items
}
