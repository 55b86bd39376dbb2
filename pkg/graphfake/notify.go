package graphfake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"supportplatform.dev/pkg/randid"
)

// Lifecycle events Graph posts to a subscription's lifecycleNotificationUrl.
const (
	LifecycleReauthorizationRequired = "reauthorizationRequired"
	LifecycleSubscriptionRemoved     = "subscriptionRemoved"
	LifecycleMissed                  = "missed"
)

// ErrNoSubscription is returned when a notification names a subscription that is not live.
var ErrNoSubscription = errors.New("graphfake: no such live subscription")

// Notification is one item of a notification POST.
type Notification struct {
	SubscriptionID string
	// MessageID is the new message's id; empty makes a fresh one. Repeat an id to send the
	// duplicates Graph sends for one change.
	MessageID string
	// Resource replaces the item's resource, which otherwise names the message as Graph does,
	// Users/{userGuid}/Messages/{id}: for testing a receiver's handling of other shapes.
	Resource string
	// Forge sends a clientState other than the subscription's, as a forged notification would.
	Forge bool
}

type notificationBody struct {
	Value []notificationItem `json:"value"`
}

// notificationItem follows the example in Graph's documentation for Outlook messages; lifecycle
// items carry lifecycleEvent and no change type or resource data.
type notificationItem struct {
	SubscriptionID                 string        `json:"subscriptionId"`
	SubscriptionExpirationDateTime string        `json:"subscriptionExpirationDateTime"`
	ChangeType                     string        `json:"changeType,omitempty"`
	Resource                       string        `json:"resource,omitempty"`
	ResourceData                   *resourceData `json:"resourceData,omitempty"`
	ClientState                    *string       `json:"clientState"`
	TenantID                       string        `json:"tenantId"`
	LifecycleEvent                 string        `json:"lifecycleEvent,omitempty"`
}

type resourceData struct {
	ODataType string `json:"@odata.type"`
	ODataID   string `json:"@odata.id"`
	ODataETag string `json:"@odata.etag"`
	ID        string `json:"id"`
}

// Notify posts one notification with n "created" items, each for a new message, to the
// subscription's notificationUrl, and returns the status the receiver answered.
func (s *Server) Notify(ctx context.Context, subID string, n int) (int, error) {
	if n < 1 {
		return 0, errors.New("graphfake: Notify needs at least one item")
	}
	return s.NotifyBatch(ctx, repeatNew(subID, n)...)
}

// NotifyBatch posts the items in one notification, as Graph batches changes of several
// subscriptions, and returns the status the receiver answered. All items' subscriptions must share
// a notificationUrl.
func (s *Server) NotifyBatch(ctx context.Context, items ...Notification) (int, error) {
	if len(items) == 0 {
		return 0, errors.New("graphfake: NotifyBatch needs at least one item")
	}
	var (
		body   notificationBody
		target string
	)
	s.mu.Lock()
	for _, it := range items {
		st := s.lookupLocked(it.SubscriptionID)
		if st == nil {
			s.mu.Unlock()
			return 0, fmt.Errorf("%w: %q", ErrNoSubscription, it.SubscriptionID)
		}
		if target != "" && st.NotificationURL != target {
			s.mu.Unlock()
			return 0, fmt.Errorf("graphfake: one notification goes to one URL; %q and %q differ", target, st.NotificationURL)
		}
		target = st.NotificationURL
		msgID := it.MessageID
		if msgID == "" {
			msgID = newMessageID()
		}
		resource := "Users/" + st.UserID + "/Messages/" + msgID
		odataID := resource
		if it.Resource != "" {
			resource = it.Resource
		}
		body.Value = append(body.Value, notificationItem{
			SubscriptionID:                 st.ID,
			SubscriptionExpirationDateTime: formatTime(st.ExpirationDateTime),
			ChangeType:                     "created",
			Resource:                       resource,
			ResourceData: &resourceData{
				ODataType: "#Microsoft.Graph.Message",
				ODataID:   odataID,
				ODataETag: newETag(),
				ID:        msgID,
			},
			ClientState: clientState(st, it.Forge),
			TenantID:    st.TenantID,
		})
	}
	s.mu.Unlock()
	return s.post(ctx, target, body)
}

// NotifyLifecycle posts a lifecycle event for the subscription to its lifecycleNotificationUrl, or
// to its notificationUrl when it has none, and returns the status the receiver answered.
// subscriptionRemoved removes the subscription first, as Graph has when it says so.
func (s *Server) NotifyLifecycle(ctx context.Context, subID, event string) (int, error) {
	if !validLifecycleEvent(event) {
		return 0, fmt.Errorf("graphfake: unknown lifecycle event %q", event)
	}
	s.mu.Lock()
	st := s.lookupLocked(subID)
	if st == nil {
		s.mu.Unlock()
		return 0, fmt.Errorf("%w: %q", ErrNoSubscription, subID)
	}
	if event == LifecycleSubscriptionRemoved {
		delete(s.subs, subID)
	}
	target := st.LifecycleNotificationURL
	if target == "" {
		target = st.NotificationURL
	}
	item := notificationItem{
		SubscriptionID:                 st.ID,
		SubscriptionExpirationDateTime: formatTime(st.ExpirationDateTime),
		ClientState:                    clientState(st, false),
		TenantID:                       st.TenantID,
		LifecycleEvent:                 event,
	}
	s.mu.Unlock()
	return s.post(ctx, target, notificationBody{Value: []notificationItem{item}})
}

func validLifecycleEvent(event string) bool {
	switch event {
	case LifecycleReauthorizationRequired, LifecycleSubscriptionRemoved, LifecycleMissed:
		return true
	}
	return false
}

// Graph sends "clientState": null for a subscription created without one.
func clientState(st *stored, forge bool) *string {
	if forge {
		cs := "forged-" + randid.Hex(8)
		return &cs
	}
	if st.ClientState == "" {
		return nil
	}
	cs := st.ClientState
	return &cs
}

func (s *Server) post(ctx context.Context, target string, body notificationBody) (int, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, fmt.Errorf("graphfake: encode notification: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(raw))
	if err != nil {
		return 0, fmt.Errorf("graphfake: notification request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := s.http.Do(req)
	if err != nil {
		s.log.Info("graphfake: notification not delivered", "url", target, "error", err)
		return 0, fmt.Errorf("graphfake: post notification: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	s.log.Debug("graphfake: notification delivered", "url", target, "items", len(body.Value), "status", resp.StatusCode)
	return resp.StatusCode, nil
}
