// Package httpapi is the live service's HTTP API: stream tickets and the
// Server-Sent Events stream of a customer's events.
package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/live/internal/hub"
	"supportplatform.dev/services/live/internal/timers"
)

// Verifier checks bearer tokens (authn.Verifier).
type Verifier interface {
	Verify(ctx context.Context, raw string) (authn.Principal, error)
}

// Revocations is the token revocation list (authn.Revocations).
type Revocations interface {
	Revoked(ctx context.Context, jti string, accountID int64, issuedAt time.Time) (bool, error)
}

// Tickets issues and redeems stream tickets (streamticket.Store).
type Tickets interface {
	Issue(ctx context.Context, p authn.Principal) (string, time.Time, error)
	Redeem(ctx context.Context, ticket string) (authn.Principal, error)
}

// Replayer reads a range of the EVENTS stream (eventstream.Source).
type Replayer interface {
	Replay(ctx context.Context, customerID int64, from, to uint64) ([]hub.Event, error)
}

// Handlers serve the routes.
type Handlers struct {
	s           *httpserver.Server
	hub         *hub.Hub
	verifier    Verifier
	revocations Revocations
	tickets     Tickets
	replayer    Replayer
	// Heartbeat is the interval of the keep-alive comments, and of the
	// revocation check of the stream's token.
	Heartbeat time.Duration
	// WriteTimeout bounds one write to a stream: a client that reads
	// nothing for that long is cut off.
	WriteTimeout time.Duration
	// Now is the clock of the token expiry.
	Now func() time.Time
	// ErrGone is what Replayer returns for a range no longer retained.
	ErrGone error
	// Closing ends every stream (event reconnect) when the service shuts
	// down: the server's graceful shutdown waits for its handlers, and
	// Wait for the streams on connections taken over.
	Closing <-chan struct{}
	// MaxLife bounds a stream whose request has no deadline.
	MaxLife time.Duration

	// timers holds every stream's next deadline (heartbeat, token expiry,
	// end of its time budget); run from the first stream on.
	timers  *timers.Set
	started sync.Once
	streams sync.WaitGroup
}

// New returns the handlers.
func New(s *httpserver.Server, h *hub.Hub, v Verifier, r Revocations, t Tickets, rp Replayer, errGone error) *Handlers {
	hs := &Handlers{s: s, hub: h, verifier: v, revocations: r, tickets: t, replayer: rp, ErrGone: errGone,
		Heartbeat: 15 * time.Second, WriteTimeout: 10 * time.Second, Now: time.Now, MaxLife: time.Hour}
	// Now may be set after New.
	hs.timers = timers.New(func() time.Time { return hs.Now() })
	return hs
}

// supervise fires the streams' deadlines and, at Closing, tells every
// stream to end (event reconnect).
func (h *Handlers) supervise() {
	h.timers.Run(h.Closing)
	h.hub.Close()
}

type ticketResponse struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func (h *Handlers) createTicket(c *gin.Context) error {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return err
	}
	t, exp, err := h.tickets.Issue(c.Request.Context(), p)
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, ticketResponse{Ticket: t, ExpiresAt: exp.UTC()})
	return nil
}

// principal authenticates a stream request: a bearer token, or a stream
// ticket in the query (never both).
func (h *Handlers) principal(c *gin.Context) (authn.Principal, error) {
	ctx := c.Request.Context()
	header := c.GetHeader("Authorization")
	ticket, hasTicket := queryValue(c, "ticket")
	switch {
	case header != "" && hasTicket:
		return authn.Principal{}, apperr.E(apperr.Invalid, "send either an Authorization header or a ticket, not both")
	case hasTicket:
		p, err := h.tickets.Redeem(ctx, ticket)
		if err != nil {
			return authn.Principal{}, err
		}
		revoked, err := h.revocations.Revoked(ctx, p.TokenID, p.AccountID, p.IssuedAt)
		if err != nil {
			return authn.Principal{}, apperr.Wrap(apperr.Unavailable, err, "token verification is temporarily unavailable")
		}
		if revoked {
			return authn.Principal{}, apperr.E(apperr.Unauthorized, "the access token has been revoked; log in again")
		}
		return p, nil
	}
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		c.Header("WWW-Authenticate", `Bearer realm="api"`)
		return authn.Principal{}, apperr.E(apperr.Unauthorized, "an Authorization: Bearer <token> header or a stream ticket (?ticket=, from POST /api/live/tickets) is required")
	}
	return h.verifier.Verify(ctx, strings.TrimSpace(tok))
}

// queryValue is a query parameter matched ignoring case, as every
// service reads them.
func queryValue(c *gin.Context, name string) (string, bool) {
	for k, vs := range c.Request.URL.Query() {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[len(vs)-1], true
		}
	}
	return "", false
}

// lastEventID is where a stream resumes: the Last-Event-ID header (an
// EventSource's own reconnect) or the lastEventId parameter (a console
// that opens a new EventSource with a new ticket). 0: none. Anything but
// a positive decimal sequence is a 400.
func lastEventID(c *gin.Context) (uint64, error) {
	v := c.GetHeader("Last-Event-ID")
	field := "Last-Event-ID"
	if q, ok := queryValue(c, "lastEventId"); ok {
		if v != "" && v != q {
			return 0, apperr.Field("lastEventId", "differs from the Last-Event-ID header", "the stream's resume point is ambiguous")
		}
		v, field = q, "lastEventId"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 || v[0] < '1' || v[0] > '9' {
		return 0, apperr.Field(field, "must be the id of an event received (a positive integer)", "the stream's resume point is invalid")
	}
	return n, nil
}
