// Package mail is the domain of the mail context: channels (email, web, api),
// the provider folders of an e-mail channel, the provider's change
// notifications and the provider subscriptions behind them. Everything a
// client reaches is scoped to one customer (tenant); another customer's ids
// are not found.
//
// Deleting a channel is a soft delete (tickets keep referring to its id): it
// stays readable with isDeleted true, takes no more changes, and its
// provider subscriptions are retired. Deleting a folder is a hard delete.
// A retired subscription is deleted at the provider after the change commits;
// what fails there is retried by the renewal job (the store's
// retired_subscriptions table), so no change waits on the provider.
package mail

import (
	"errors"
	"time"
)

// Channel kinds.
const (
	KindEmail = "email"
	KindWeb   = "web"
	KindAPI   = "api"
)

// Mail providers of an e-mail channel. Only microsoft365 channels get
// provider subscriptions; "none" channels are switched without them.
const (
	ProviderMicrosoft365 = "microsoft365"
	ProviderNone         = "none"
)

// InboxFolderID is the provider's well-known name of the inbox: the folder a
// new e-mail channel gets unless its request lists folders.
const InboxFolderID = "inbox"

// HeaderReply is the internet message header on every mail the platform
// sends for an agent, its value the reply's idempotency key: the replier
// sets it, the import skips mail that carries it, and an operator finds a
// reply in Sent Items by it.
const HeaderReply = "X-SupportPlatform-Reply"

// Channel is where tickets come from.
type Channel struct {
	ID                 int64
	CustomerID         int64
	Name               string
	Kind               string
	EmailAddress       string // lower-case; "" when none
	Provider           string
	ProviderTenantID   string // the customer's Entra tenant for Graph
	AutoRetrieveEmails bool
	IsDeleted          bool
	CreatedAt          time.Time
	// TenantConnected: ProviderTenantID is connected to the channel's
	// customer (read with the channel). No Graph call is made for a
	// channel without it.
	TenantConnected bool
}

// Subscribable reports whether the channel's folders may have provider
// subscriptions at all: a live microsoft365 e-mail channel whose tenant is
// connected to its customer.
func (c Channel) Subscribable() bool {
	return !c.IsDeleted && c.Kind == KindEmail && c.Provider == ProviderMicrosoft365 && c.EmailAddress != "" && c.TenantConnected
}

// ErrTenantNotConnected is the refusal to take a Graph token for a channel
// whose tenant is not connected to its customer.
var ErrTenantNotConnected = errors.New("the channel's Microsoft 365 tenant is not connected to its customer")

// GraphTenant is the Entra tenant to take an app-only token for on the
// channel's behalf: its tenant, and only while that tenant is connected to
// the channel's customer. Every Graph path chooses the tenant here.
func (c Channel) GraphTenant() (string, error) {
	if c.Provider != ProviderMicrosoft365 || c.ProviderTenantID == "" || !c.TenantConnected {
		return "", ErrTenantNotConnected
	}
	return c.ProviderTenantID, nil
}

// Folder is a provider mail folder of an e-mail channel.
type Folder struct {
	ID                 int64
	CustomerID         int64
	ChannelID          int64
	ExternalFolderID   string
	DisplayName        string
	AutoRetrieveEmails bool
	// The provider subscription, when one exists.
	SubscriptionID         string
	SubscriptionExpiration *time.Time
	LastNotificationAt     *time.Time
	LastImportAt           *time.Time
	CreatedAt              time.Time
	// SkippedMessages counts the mails the folder's import skipped for good
	// (too big, refused by the provider, unreadable); LastSkipReason and
	// LastSkipAt describe the last one.
	SkippedMessages int64
	LastSkipReason  string
	LastSkipAt      *time.Time
}

// ChannelInput creates or replaces a channel.
type ChannelInput struct {
	Name               string
	Kind               string
	EmailAddress       string
	Provider           string
	ProviderTenantID   string
	AutoRetrieveEmails bool
	// Folders are the folders of a new e-mail channel; nil gives it the
	// inbox. Ignored by updates (folders have their own routes).
	Folders []FolderInput
}

// FolderInput creates or replaces a folder.
type FolderInput struct {
	ExternalFolderID   string
	DisplayName        string
	AutoRetrieveEmails bool
}

// ChannelFilter narrows a channel list; nil fields do not filter.
type ChannelFilter struct {
	Kind      *string
	IsDeleted *bool
}

// Target is a folder with what the provider callbacks and the subscription
// job need of its channel.
type Target struct {
	Folder  Folder
	Channel Channel
	// ClientState is the secret of the folder's subscription (the provider
	// echoes it in every notification); "" when it has none.
	ClientState string
}

// Retrieves reports whether a notification for the folder queues an import:
// both switches on and the channel live (spec section 3).
func (t Target) Retrieves() bool {
	return !t.Channel.IsDeleted && t.Channel.AutoRetrieveEmails && t.Folder.AutoRetrieveEmails
}

// Outcomes of a folder in a subscribe, unsubscribe or channel change.
const (
	OutcomeSubscribed   = "subscribed"   // a provider subscription was created
	OutcomeActive       = "active"       // it already had a live one
	OutcomeUnsubscribed = "unsubscribed" // its subscription was deleted at the provider
	OutcomeNone         = "none"         // it has none and needs none
	OutcomeSkipped      = "skipped"      // the channel's provider takes no subscriptions
	OutcomeFailed       = "failed"       // the provider refused or failed; the renewal job retries
)

// FolderOutcome is what happened to one folder's subscription.
type FolderOutcome struct {
	FolderID               int64
	ExternalFolderID       string
	AutoRetrieveEmails     bool
	Outcome                string
	SubscriptionID         string
	SubscriptionExpiration *time.Time
	Error                  string // why it failed, in the provider's words
}

// ToggleResult is the answer of a subscribe or unsubscribe: the channel as
// switched and each folder's outcome.
type ToggleResult struct {
	Channel Channel
	Folders []FolderOutcome
}
