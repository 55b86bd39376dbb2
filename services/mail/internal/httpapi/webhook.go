package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/mail/internal/mail"
)

// Webhook processes the provider's notifications (mail.Notifier).
type Webhook interface {
	Notify(ctx context.Context, items []mail.Notification) (mail.NotifyResult, error)
}

const (
	// maxValidationToken bounds the echoed token (bytes); the provider's are
	// far shorter.
	maxValidationToken = 1024
	// maxNotifications bounds the items of one POST.
	maxNotifications = 1000
	// notifyBudget is what one POST may take: the provider wants an answer
	// within 3 s (and counts slow answers against the endpoint), so the
	// domain gets less and a POST that runs out is a 503 it retries.
	notifyBudget = 2500 * time.Millisecond
)

// validationToken finds the validationToken query parameter: as the
// provider spells it, else in any case. present is false without one.
func validationToken(q url.Values) (token string, present bool) {
	if vs, ok := q["validationToken"]; ok && len(vs) > 0 {
		return vs[0], true
	}
	for k, vs := range q {
		if strings.EqualFold(k, "validationToken") && len(vs) > 0 {
			return vs[0], true
		}
	}
	return "", false
}

// echoToken answers the validation handshake: 200 text/plain with the
// decoded token exactly as sent (not trimmed, not JSON).
func echoToken(c *gin.Context, token string) error {
	switch {
	case token == "":
		return apperr.Field("validationToken", "must not be empty", "the validation token is empty")
	case !utf8.ValidString(token):
		return apperr.Field("validationToken", "must be valid UTF-8", "the validation token is not valid UTF-8")
	case len(token) > maxValidationToken:
		return apperr.Field("validationToken", fmt.Sprintf("must be at most %d bytes", maxValidationToken),
			"the validation token is too long")
	}
	// The body is not needed; reading it (bounded by the server's limit)
	// keeps the connection usable for the provider.
	_, _ = io.Copy(io.Discard, c.Request.Body)
	c.Header("X-Content-Type-Options", "nosniff")
	c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(token))
	return nil
}

// webhookValidate is GET /api/ProviderWebhook: only the handshake.
func (h *Handlers) webhookValidate(c *gin.Context) error {
	token, ok := validationToken(c.Request.URL.Query())
	if !ok {
		return apperr.Field("validationToken", "is required", "the validationToken query parameter is required")
	}
	return echoToken(c, token)
}

// notificationsRequest is the provider's POST body. Unknown fields (the
// provider adds @odata.type, encryptedContent...) are ignored.
type notificationsRequest struct {
	Value *[]notificationRequest `json:"value"`
}

type notificationRequest struct {
	SubscriptionID                 string               `json:"subscriptionId"`
	SubscriptionExpirationDateTime string               `json:"subscriptionExpirationDateTime"`
	ClientState                    string               `json:"clientState"`
	ChangeType                     string               `json:"changeType"`
	Resource                       string               `json:"resource"`
	ResourceData                   *resourceDataRequest `json:"resourceData"`
	TenantID                       string               `json:"tenantId"`
	LifecycleEvent                 string               `json:"lifecycleEvent"`
}

type resourceDataRequest struct {
	ID string `json:"id"`
}

func (r notificationRequest) notification() mail.Notification {
	n := mail.Notification{SubscriptionID: r.SubscriptionID, ClientState: r.ClientState, ChangeType: r.ChangeType,
		Resource: r.Resource, TenantID: r.TenantID, LifecycleEvent: r.LifecycleEvent}
	if r.ResourceData != nil {
		n.ResourceID = r.ResourceData.ID
	}
	// An unreadable expiry is no reason to refuse the item: it is not used
	// to find the folder.
	if t, err := time.Parse(time.RFC3339Nano, r.SubscriptionExpirationDateTime); err == nil {
		n.SubscriptionExpiration = t.UTC()
	}
	return n
}

// readBody reads a request's body into one buffer of its announced length
// (io.ReadAll grows from 512 bytes, copying a notification's ~700 twice);
// a body without a length, or a long one, grows as it is read.
func readBody(r *http.Request) ([]byte, error) {
	n := r.ContentLength
	if n <= 0 || n > 64<<10 {
		return io.ReadAll(r.Body)
	}
	b := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
	_, err := b.ReadFrom(r.Body)
	return b.Bytes(), err
}

type notifyResponse struct {
	Received int `json:"received"`
	Queued   int `json:"queued"`
	Handled  int `json:"handled"`
	Parked   int `json:"parked"`
	Dropped  int `json:"dropped"`
}

// webhookNotify is POST /api/ProviderWebhook: the handshake when
// validationToken is present, else the notifications. The content type is
// not checked (the provider sends application/json, its handshake
// text/plain). 200 means every import to queue is durably queued; items
// that queue nothing (forged, unknown, switched off) are still 200, since a
// 4xx would make the provider retry for hours. 503 asks it to retry.
func (h *Handlers) webhookNotify(c *gin.Context) error {
	if token, ok := validationToken(c.Request.URL.Query()); ok {
		return echoToken(c, token)
	}
	body, err := readBody(c.Request)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apperr.E(apperr.TooLarge, "the request body exceeds %d bytes", mbe.Limit)
		}
		return apperr.Wrap(apperr.Invalid, err, "the request body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		// Spec: an empty body gives 200; it is answered like an empty
		// value array, so every 200 of a POST without a token is JSON.
		c.JSON(http.StatusOK, notifyResponse{})
		return nil
	}
	var req notificationsRequest
	if err := httpserver.DecodeJSON(body, &req); err != nil {
		return err
	}
	switch {
	case req.Value == nil:
		return apperr.Field("value", "is required: an array of notifications", "the body must be {\"value\": [...]}")
	case len(*req.Value) > maxNotifications:
		return apperr.Field("value", fmt.Sprintf("must have at most %d items", maxNotifications), "too many notifications in one request")
	}
	items := make([]mail.Notification, len(*req.Value))
	for i, r := range *req.Value {
		items[i] = r.notification()
	}
	var res mail.NotifyResult
	if len(items) > 0 {
		if h.webhook == nil {
			return apperr.E(apperr.Unavailable, "notifications cannot be processed now")
		}
		ctx, cancel := context.WithTimeout(c.Request.Context(), notifyBudget)
		defer cancel()
		res, err = h.webhook.Notify(ctx, items)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return apperr.Wrap(apperr.Unavailable, err, "the notifications could not be queued in time; send them again")
			}
			return err
		}
	}
	c.JSON(http.StatusOK, notifyResponse{Received: len(items), Queued: res.Queued, Handled: res.Handled,
		Parked: res.Parked, Dropped: res.Dropped})
	return nil
}
