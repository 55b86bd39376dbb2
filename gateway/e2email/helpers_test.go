package e2email

import (
	"sync"
	"testing"

	"supportplatform.dev/gateway/internal/e2ekit"
)

// Every test works in tenants of its own, so lists hold only what the test
// made and tests may run in parallel.

// tenant is a customer of the test's own (e2ekit.Tenant).
type tenant = e2ekit.Tenant

func newTenant(t *testing.T) tenant { t.Helper(); return e2ekit.NewTenant(t, stk, client(t), "Mail") }

func client(t testing.TB) *e2ekit.Client {
	return e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
}

// wantStatus is e2ekit.WantStatus.
func wantStatus(t testing.TB, r *e2ekit.Response, want int, v any) {
	t.Helper()
	e2ekit.WantStatus(t, r, want, v)
}

type (
	channelBody = e2ekit.Channel
	folderBody  = e2ekit.Folder
)

type listBody[T any] = e2ekit.List[T]

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
func mailbox() string { return e2ekit.Mailbox() }

// providerTenant is an Entra tenant id for bodies that never reach the
// connection check (invalid ones, notifications).
const providerTenant = "7f3c1c1e-0000-4000-8000-000000000001"

// createChannel makes a channel as admin and returns it.
func createChannel(t *testing.T, tn tenant, body map[string]any) channelBody {
	t.Helper()
	return e2ekit.CreateChannel(t, client(t), tn, body)
}

// emailChannel is a microsoft365 e-mail channel body in a tenant connected
// to tn (connected once per test customer, through the real flow).
func emailChannel(t *testing.T, tn tenant, auto bool) map[string]any {
	t.Helper()
	return e2ekit.EmailChannel(connectedTenant(t, tn), auto)
}

var connected sync.Map // customer id → its connected Entra tenant

func connectedTenant(t *testing.T, tn tenant) string {
	t.Helper()
	if v, ok := connected.Load(tn.CustomerID); ok {
		return v.(string)
	}
	id := e2ekit.ConnectTenant(t, client(t), graph, tn)
	connected.Store(tn.CustomerID, id)
	return id
}

func folders(t *testing.T, tn tenant, channelID int64) []folderBody {
	t.Helper()
	return e2ekit.Folders(t, client(t), tn, channelID)
}
