// Package httpapi is the live service's HTTP API: stream tickets and the
// Server-Sent Events stream of a customer's events.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/live/internal/hub"
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
	// down: the server's graceful shutdown waits for its handlers.
	Closing <-chan struct{}
}

// New returns the handlers.
func New(s *httpserver.Server, h *hub.Hub, v Verifier, r Revocations, t Tickets, rp Replayer, errGone error) *Handlers {
	return &Handlers{s: s, hub: h, verifier: v, revocations: r, tickets: t, replayer: rp, ErrGone: errGone,
		Heartbeat: 15 * time.Second, WriteTimeout: 10 * time.Second, Now: time.Now}
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

// events is the stream.
func (h *Handlers) events(c *gin.Context) error {
	p, err := h.principal(c)
	if err != nil {
		return err
	}
	after, err := lastEventID(c)
	if err != nil {
		return err
	}
	sub, resume, err := h.hub.Subscribe(p.CustomerID, after)
	if err != nil {
		return err
	}
	defer sub.Close()
	ctx := c.Request.Context()
	var replay []hub.Event
	reset := false
	if resume.StreamFrom > 0 {
		replay, err = h.replayer.Replay(ctx, p.CustomerID, resume.StreamFrom, resume.StreamTo)
		if errors.Is(err, h.ErrGone) {
			reset, err = true, nil
		}
		if err != nil {
			return err
		}
	}
	if !reset {
		replay = append(replay, resume.Ring...)
	}

	w := &writer{c: c, rc: http.NewResponseController(c.Writer), timeout: h.WriteTimeout}
	c.Header("Content-Type", "text/event-stream; charset=utf-8")
	c.Header("Cache-Control", "no-cache, no-store, no-transform")
	// Proxies that buffer by default (nginx) pass the stream through.
	c.Header("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	// retry: how long an EventSource waits before it reconnects.
	if err := w.write("retry: 2000\n\n"); err != nil {
		return nil
	}
	if reset {
		if err := w.event(0, "reset", `{"reason":"the events after the last id received are no longer retained; reload"}`); err != nil {
			return nil
		}
	}
	replayed := make(map[uint64]bool, len(replay))
	for _, e := range replay {
		if err := w.event(e.Seq, e.Type, string(e.Data)); err != nil {
			return nil
		}
		replayed[e.Seq] = true
	}

	expiry := time.NewTimer(p.ExpiresAt.Sub(h.Now()))
	defer expiry.Stop()
	// The stream ends before the request's time budget (REQUEST_TIMEOUT),
	// so that neither this server's nor the gateway's write timeout cuts
	// it: the console reconnects with its last id.
	var budget <-chan time.Time
	if d, ok := ctx.Deadline(); ok {
		t := time.NewTimer(time.Until(d) - 2*time.Second)
		defer t.Stop()
		budget = t.C
	}
	heartbeat := time.NewTicker(h.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-sub.Wake():
			for _, e := range sub.Take() {
				// The console has what precedes its id (it may come
				// from a replica further on), and a replayed event
				// may also be the ring's.
				if e.Seq <= after || replayed[e.Seq] {
					continue
				}
				if err := w.event(e.Seq, e.Type, string(e.Data)); err != nil {
					return nil
				}
			}
		case <-sub.Dropped():
			// Too slow: it fell more than LIVE_BUFFER events behind. The
			// console reconnects and resumes from its last id.
			return nil
		case <-expiry.C:
			_ = w.event(0, "expired", `{"reason":"expired"}`)
			return nil
		case <-budget:
			_ = w.event(0, "reconnect", `{}`)
			return nil
		case <-h.Closing:
			_ = w.event(0, "reconnect", `{}`)
			return nil
		case <-heartbeat.C:
			revoked, err := h.revocations.Revoked(ctx, p.TokenID, p.AccountID, p.IssuedAt)
			if err == nil && revoked {
				_ = w.event(0, "expired", `{"reason":"revoked"}`)
				return nil
			}
			if err := w.write(": ping\n\n"); err != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// writer writes SSE frames, each flushed at once and bounded in time.
type writer struct {
	c       *gin.Context
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *writer) write(s string) error {
	// Not every ResponseWriter supports deadlines (tests' recorders):
	// the server's write timeout bounds those.
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	if _, err := w.c.Writer.WriteString(s); err != nil {
		return err
	}
	return w.rc.Flush()
}

func (w *writer) event(id uint64, typ, data string) error {
	var b strings.Builder
	if id > 0 {
		fmt.Fprintf(&b, "id: %d\n", id)
	}
	fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, data)
	return w.write(b.String())
}
