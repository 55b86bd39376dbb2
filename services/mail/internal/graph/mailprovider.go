package graph

import (
	"context"
	"errors"
	"net/http"
	"time"

	"supportplatform.dev/services/mail/internal/mail"
)

// Settings are the GRAPH_* variables both mail binaries read (embedded in
// their Config).
type Settings struct {
	ClientID     string `env:"GRAPH_CLIENT_ID" default:"" desc:"application (client) id of the multi-tenant Entra app for Microsoft Graph; empty = no provider subscriptions (toggles report failed)"`
	ClientSecret string `env:"GRAPH_CLIENT_SECRET" default:"" desc:"client secret of the Entra app (never logged)"`
	TokenURL     string `env:"GRAPH_TOKEN_URL" default:"https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token" desc:"OAuth2 token endpoint; {tenant} is replaced by the channel's providerTenantID"`
	BaseURL      string `env:"GRAPH_BASE_URL" default:"https://graph.microsoft.com/v1.0" desc:"Microsoft Graph API base URL"`
	// CreateTimeout bounds a subscription create, which Graph holds while it
	// validates both notification URLs.
	CreateTimeout time.Duration `env:"GRAPH_SUBSCRIPTION_CREATE_TIMEOUT" default:"35s" desc:"time a subscription create may take (Graph validates the notification and lifecycle URLs during the call, up to 10 s each); must stay below REQUEST_TIMEOUT, which the subscribe toggle answers within"`
}

// Configured reports whether an app is configured.
func (s Settings) Configured() bool { return s.ClientID != "" || s.ClientSecret != "" }

// NewMailProvider returns the mail provider the subscription service uses:
// Graph through a Client made from s, or, when s configures no app, one that
// refuses every call with ErrNotConfigured (channels and callbacks work
// without an app; subscriptions cannot be made). hc should have no
// client-wide Timeout: each call bounds itself (DefaultTimeout, the create
// s.CreateTimeout).
func NewMailProvider(s Settings, hc *http.Client, now func() time.Time) (mail.Provider, error) {
	if !s.Configured() {
		return Unconfigured{}, nil
	}
	c, err := New(Config{ClientID: s.ClientID, ClientSecret: s.ClientSecret, TokenURL: s.TokenURL, BaseURL: s.BaseURL, HTTPClient: hc,
		CreateTimeout: s.CreateTimeout, Now: now})
	if err != nil {
		return nil, err
	}
	return mailProvider{c: c}, nil
}

// mailProvider adapts Client to mail.Provider: Graph's subscriptions become
// the domain's and its errors the domain's classes.
type mailProvider struct{ c *Client }

// toProvider converts Graph's subscription. Its expiry (100 ns steps) is
// cut to PostgreSQL's microseconds, never rounded up past Graph's, so the
// toggles report exactly what is stored.
func toProvider(s Subscription) mail.ProviderSubscription {
	return mail.ProviderSubscription{ID: s.ID, Resource: s.Resource, NotificationURL: s.NotificationURL,
		ClientState: s.ClientState, Expiration: s.ExpirationDateTime.Truncate(time.Microsecond)}
}

// classify maps Graph's answers to the domain's error classes; everything
// else (5xx without Retry-After, transport errors, refusals) stays as it is,
// a failure retried later.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case IsNotFound(err):
		return errors.Join(mail.ErrProviderNotFound, err)
	case IsThrottled(err):
		after, _ := RetryAfter(err)
		return &mail.ProviderThrottled{RetryAfter: after, Err: err}
	}
	return err
}

func (p mailProvider) Create(ctx context.Context, tenantID string, s mail.NewProviderSubscription) (mail.ProviderSubscription, error) {
	sub, err := p.c.CreateSubscription(ctx, tenantID, NewSubscription{Mailbox: s.Mailbox, FolderID: s.FolderID,
		NotificationURL: s.NotificationURL, LifecycleNotificationURL: s.LifecycleNotificationURL,
		ClientState: s.ClientState, Expiration: s.Expiration})
	if err != nil {
		if MaybeCreated(err) {
			return mail.ProviderSubscription{}, errors.Join(mail.ErrProviderMaybeCreated, classify(err))
		}
		return mail.ProviderSubscription{}, classify(err)
	}
	return toProvider(sub), nil
}

func (p mailProvider) ResolveMailbox(ctx context.Context, tenantID, address string) (mail.MailboxUser, error) {
	u, err := p.c.ResolveUser(ctx, tenantID, address)
	if err != nil {
		return mail.MailboxUser{}, classify(err)
	}
	return mail.MailboxUser{Address: address, ID: u.ID, UserPrincipalName: u.UserPrincipalName}, nil
}

func (p mailProvider) Renew(ctx context.Context, tenantID, id string, expiration time.Time) (mail.ProviderSubscription, error) {
	sub, err := p.c.RenewSubscription(ctx, tenantID, id, expiration)
	if err != nil {
		return mail.ProviderSubscription{}, classify(err)
	}
	return toProvider(sub), nil
}

func (p mailProvider) Delete(ctx context.Context, tenantID, id string) error {
	return classify(p.c.DeleteSubscription(ctx, tenantID, id))
}

func (p mailProvider) List(ctx context.Context, tenantID string) ([]mail.ProviderSubscription, error) {
	subs, err := p.c.ListSubscriptions(ctx, tenantID)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]mail.ProviderSubscription, len(subs))
	for i, s := range subs {
		out[i] = toProvider(s)
	}
	return out, nil
}
