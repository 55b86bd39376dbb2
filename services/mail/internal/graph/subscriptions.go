package graph

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	"supportplatform.dev/services/mail/internal/mail"
)

// ChangeTypeCreated is the only change the mail service subscribes to: new messages in a folder.
const ChangeTypeCreated = "created"

// MaxClientState is Graph's limit on clientState, in characters.
const MaxClientState = 128

// maxListPages stops following @odata.nextLink from a server that never ends its list.
const maxListPages = 1000

// graphTime is how Graph writes a dateTimeOffset: UTC with seven fractional digits.
const graphTime = "2006-01-02T15:04:05.0000000Z"

// Subscription is a Graph subscription as Graph answered it. Store its ID and ExpirationDateTime:
// the expiry may differ from the one asked for.
type Subscription struct {
	ID, Resource, ChangeType, NotificationURL, LifecycleNotificationURL, ClientState string
	ExpirationDateTime                                                               time.Time
}

// NewSubscription asks for "created" notifications of one mail folder.
type NewSubscription struct {
	// Mailbox is the user's address or id; FolderID the folder's (immutable) id.
	Mailbox, FolderID string
	// NotificationURL receives the validation request and the notifications.
	NotificationURL string
	// LifecycleNotificationURL, optional, receives lifecycle events; it can only be set at creation.
	LifecycleNotificationURL string
	// ClientState is echoed in every notification; at most MaxClientState characters.
	ClientState string
	Expiration  time.Time
}

// Resource names a folder's messages as a subscription resource, spelled as
// mail.SubscriptionResource spells it (the service compares the two).
func Resource(mailbox, folderID string) string { return mail.SubscriptionResource(mailbox, folderID) }

// subscriptionJSON is the wire form of Graph's subscription resource, both ways.
type subscriptionJSON struct {
	ID                       string `json:"id,omitempty"`
	Resource                 string `json:"resource,omitempty"`
	ChangeType               string `json:"changeType,omitempty"`
	NotificationURL          string `json:"notificationUrl,omitempty"`
	LifecycleNotificationURL string `json:"lifecycleNotificationUrl,omitempty"`
	ClientState              string `json:"clientState,omitempty"`
	ExpirationDateTime       string `json:"expirationDateTime,omitempty"`
}

func (j subscriptionJSON) subscription() (Subscription, error) {
	if j.ID == "" {
		return Subscription{}, fmt.Errorf("reply has no subscription id")
	}
	exp, err := time.Parse(time.RFC3339Nano, j.ExpirationDateTime)
	if err != nil {
		return Subscription{}, fmt.Errorf("subscription %s: expirationDateTime: %w", j.ID, err)
	}
	return Subscription{
		ID:                       j.ID,
		Resource:                 j.Resource,
		ChangeType:               j.ChangeType,
		NotificationURL:          j.NotificationURL,
		LifecycleNotificationURL: j.LifecycleNotificationURL,
		ClientState:              j.ClientState,
		ExpirationDateTime:       exp.UTC(),
	}, nil
}

// formatTime writes an expiry the way Graph itself does, in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(graphTime) }

// CreateSubscription subscribes to new messages in s's folder. Graph validates the notification
// URL (and the lifecycle URL) during the call, so the receiver must already answer; a failed
// validation is a 400 Error with code "ValidationError". Graph makes a new subscription for every
// create, even for a resource that has one; a create that timed out or failed with a 5xx may
// have been made all the same (MaybeCreated): list the subscriptions to find it.
func (c *Client) CreateSubscription(ctx context.Context, tenantID string, s NewSubscription) (Subscription, error) {
	const op = "create subscription"
	if err := s.check(); err != nil {
		return Subscription{}, fmt.Errorf("graph: %s: %w", op, err)
	}
	in := subscriptionJSON{
		ChangeType:               ChangeTypeCreated,
		NotificationURL:          s.NotificationURL,
		LifecycleNotificationURL: s.LifecycleNotificationURL,
		Resource:                 Resource(s.Mailbox, s.FolderID),
		ExpirationDateTime:       formatTime(s.Expiration),
		ClientState:              s.ClientState,
	}
	return c.subscriptionCall(ctx, c.createTimeout, tenantID, op, http.MethodPost, c.baseURL+"/subscriptions", in)
}

func (s NewSubscription) check() error {
	switch {
	case s.Mailbox == "":
		return fmt.Errorf("%w: no mailbox", ErrInvalid)
	case s.FolderID == "":
		return fmt.Errorf("%w: no folder id", ErrInvalid)
	case s.Expiration.IsZero():
		return fmt.Errorf("%w: no expiration", ErrInvalid)
	}
	if n := utf8.RuneCountInString(s.ClientState); n > MaxClientState {
		return fmt.Errorf("%w: clientState has %d characters; Graph allows %d", ErrInvalid, n, MaxClientState)
	}
	if _, err := parseHTTPURL(s.NotificationURL); err != nil {
		return fmt.Errorf("%w: notification URL: %v", ErrInvalid, err)
	}
	if s.LifecycleNotificationURL != "" {
		if _, err := parseHTTPURL(s.LifecycleNotificationURL); err != nil {
			return fmt.Errorf("%w: lifecycle notification URL: %v", ErrInvalid, err)
		}
	}
	return nil
}

// RenewSubscription moves the subscription's expiry. A 404 (IsNotFound) means Graph has deleted
// it: create a new one and catch up on the folder.
func (c *Client) RenewSubscription(ctx context.Context, tenantID, id string, expiration time.Time) (Subscription, error) {
	const op = "renew subscription"
	if id == "" || expiration.IsZero() {
		return Subscription{}, fmt.Errorf("graph: %s: %w: subscription id and expiration are required", op, ErrInvalid)
	}
	in := subscriptionJSON{ExpirationDateTime: formatTime(expiration)}
	return c.subscriptionCall(ctx, c.callTimeout, tenantID, op, http.MethodPatch, c.subscriptionURL(id), in)
}

// GetSubscription reads one subscription; IsNotFound when it no longer exists.
func (c *Client) GetSubscription(ctx context.Context, tenantID, id string) (Subscription, error) {
	const op = "get subscription"
	if id == "" {
		return Subscription{}, fmt.Errorf("graph: %s: %w: no subscription id", op, ErrInvalid)
	}
	return c.subscriptionCall(ctx, c.callTimeout, tenantID, op, http.MethodGet, c.subscriptionURL(id), nil)
}

// DeleteSubscription deletes a subscription. One that is already gone is not an error: the
// caller wanted it gone.
func (c *Client) DeleteSubscription(ctx context.Context, tenantID, id string) error {
	const op = "delete subscription"
	if id == "" {
		return fmt.Errorf("graph: %s: %w: no subscription id", op, ErrInvalid)
	}
	err := c.call(ctx, c.callTimeout, tenantID, op, http.MethodDelete, c.subscriptionURL(id), nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// ListSubscriptions returns the app's subscriptions in the tenant, following every
// @odata.nextLink.
func (c *Client) ListSubscriptions(ctx context.Context, tenantID string) ([]Subscription, error) {
	const op = "list subscriptions"
	var all []Subscription
	next := c.baseURL + "/subscriptions"
	seen := map[string]bool{}
	for page := 0; next != ""; page++ {
		if page == maxListPages || seen[next] {
			return nil, fmt.Errorf("graph: %s: the server's @odata.nextLink does not end", op)
		}
		seen[next] = true
		var reply struct {
			Value    []subscriptionJSON `json:"value"`
			NextLink string             `json:"@odata.nextLink"`
		}
		if err := c.call(ctx, c.callTimeout, tenantID, op, http.MethodGet, next, nil, &reply); err != nil {
			return nil, err
		}
		for _, j := range reply.Value {
			s, err := j.subscription()
			if err != nil {
				return nil, fmt.Errorf("graph: %s: malformed reply: %w", op, err)
			}
			all = append(all, s)
		}
		if reply.NextLink != "" && !c.sameOrigin(reply.NextLink) {
			return nil, fmt.Errorf("graph: %s: @odata.nextLink %q leaves %s; not followed", op, reply.NextLink, c.base.Host)
		}
		next = reply.NextLink
	}
	return all, nil
}

func (c *Client) subscriptionURL(id string) string {
	return c.baseURL + "/subscriptions/" + url.PathEscape(id)
}

func (c *Client) subscriptionCall(ctx context.Context, timeout time.Duration, tenantID, op, method, rawURL string, in any) (Subscription, error) {
	var out subscriptionJSON
	if err := c.call(ctx, timeout, tenantID, op, method, rawURL, in, &out); err != nil {
		return Subscription{}, err
	}
	s, err := out.subscription()
	if err != nil {
		return Subscription{}, fmt.Errorf("graph: %s: malformed reply: %w", op, err)
	}
	return s, nil
}
