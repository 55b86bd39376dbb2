// Package httpapi is the live service's HTTP API: stream tickets and the
// Server-Sent Events stream of a customer's events.
package httpapi

import (
	"context"
	"errors"
	"io"
	"net"
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

	streams sync.WaitGroup
}

// New returns the handlers.
func New(s *httpserver.Server, h *hub.Hub, v Verifier, r Revocations, t Tickets, rp Replayer, errGone error) *Handlers {
	return &Handlers{s: s, hub: h, verifier: v, revocations: r, tickets: t, replayer: rp, ErrGone: errGone,
		Heartbeat: 15 * time.Second, WriteTimeout: 10 * time.Second, Now: time.Now, MaxLife: time.Hour}
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

// events is the stream. Over HTTP/1.1 (the gateway's connection to the
// service) the connection is taken over once the stream is set up, and the
// stream runs on a goroutine of its own: it then holds no net/http buffers,
// no background reader and no deep handler stack, which is most of what an
// idle stream would otherwise cost (10,000 of them on a replica). Other
// protocols are served in the handler.
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
	ctx := c.Request.Context()
	var replay []hub.Event
	reset := false
	if resume.StreamFrom > 0 {
		replay, err = h.replayer.Replay(ctx, p.CustomerID, resume.StreamFrom, resume.StreamTo)
		if errors.Is(err, h.ErrGone) {
			reset, err = true, nil
		}
		if err != nil {
			sub.Close()
			return err
		}
	}
	if !reset {
		replay = append(replay, resume.Ring...)
	}
	st := &stream{h: h, p: p, sub: sub, after: after, replay: replay, reset: reset, end: h.Now().Add(h.MaxLife)}
	// The stream ends before the request's time budget (REQUEST_TIMEOUT),
	// so that neither this server's nor the gateway's write timeout cuts
	// it: the console reconnects with its last id.
	if d, ok := ctx.Deadline(); ok {
		st.end = h.Now().Add(time.Until(d) - 2*time.Second)
	}

	header := c.Writer.Header()
	header.Set("Content-Type", "text/event-stream; charset=utf-8")
	header.Set("Cache-Control", "no-cache, no-store, no-transform")
	// Proxies that buffer by default (nginx) pass the stream through.
	header.Set("X-Accel-Buffering", "no")
	if hj, ok := c.Writer.(http.Hijacker); ok && c.Request.ProtoMajor == 1 {
		conn, _, err := hj.Hijack()
		if err == nil {
			out := &connSink{conn: conn, timeout: h.WriteTimeout}
			if err := out.start(header); err != nil {
				_ = conn.Close()
				sub.Close()
				return nil
			}
			h.streams.Add(1)
			go func() {
				defer h.streams.Done()
				defer sub.Close()
				st.run(context.Background(), out)
				out.finish()
			}()
			return nil
		}
	}
	defer sub.Close()
	c.Status(http.StatusOK)
	st.run(ctx, &writerSink{w: c.Writer, rc: http.NewResponseController(c.Writer), timeout: h.WriteTimeout})
	return nil
}

// Wait waits until every stream that runs on a goroutine of its own has
// ended (they end at Closing).
func (h *Handlers) Wait() { h.streams.Wait() }

// stream is one open stream.
type stream struct {
	h      *Handlers
	p      authn.Principal
	sub    *hub.Sub
	after  uint64
	replay []hub.Event
	reset  bool
	end    time.Time
}

// sink is where a stream's frames go, each at once.
type sink interface{ write(s string) error }

func (st *stream) run(ctx context.Context, out sink) {
	h := st.h
	event := func(id uint64, typ, data string) error {
		var b strings.Builder
		frame(&b, id, typ, data)
		return out.write(b.String())
	}
	// retry: how long an EventSource waits before it reconnects.
	if err := out.write("retry: 2000\n\n"); err != nil {
		return
	}
	if st.reset {
		if err := event(0, "reset", `{"reason":"the events after the last id received are no longer retained; reload"}`); err != nil {
			return
		}
	}
	var replayed map[uint64]bool
	for _, e := range st.replay {
		if err := event(e.Seq, e.Type, string(e.Data)); err != nil {
			return
		}
		if replayed == nil {
			replayed = map[uint64]bool{}
		}
		replayed[e.Seq] = true
	}
	st.replay = nil

	expiry := time.NewTimer(st.p.ExpiresAt.Sub(h.Now()))
	defer expiry.Stop()
	budget := time.NewTimer(st.end.Sub(h.Now()))
	defer budget.Stop()
	heartbeat := time.NewTicker(h.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-st.sub.Wake():
			// Everything taken goes out in one write.
			var b strings.Builder
			for _, e := range st.sub.Take() {
				// The console has what precedes its id (it may come
				// from a replica further on), and a replayed event
				// may also be the ring's.
				if e.Seq <= st.after || replayed[e.Seq] {
					continue
				}
				frame(&b, e.Seq, e.Type, string(e.Data))
			}
			if b.Len() > 0 {
				if err := out.write(b.String()); err != nil {
					return
				}
			}
		case <-st.sub.Dropped():
			// Too slow: it fell more than LIVE_BUFFER events behind. The
			// console reconnects and resumes from its last id.
			return
		case <-expiry.C:
			_ = event(0, "expired", `{"reason":"expired"}`)
			return
		case <-budget.C:
			_ = event(0, "reconnect", `{}`)
			return
		case <-h.Closing:
			_ = event(0, "reconnect", `{}`)
			return
		case <-heartbeat.C:
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			revoked, err := h.revocations.Revoked(rctx, st.p.TokenID, st.p.AccountID, st.p.IssuedAt)
			cancel()
			if err == nil && revoked {
				_ = event(0, "expired", `{"reason":"revoked"}`)
				return
			}
			// A client that went away shows here at the latest.
			if err := out.write(": ping\n\n"); err != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// frame appends one SSE event; id 0: none (control events).
func frame(b *strings.Builder, id uint64, typ, data string) {
	if id > 0 {
		b.WriteString("id: ")
		b.WriteString(strconv.FormatUint(id, 10))
		b.WriteByte('\n')
	}
	b.WriteString("event: ")
	b.WriteString(typ)
	b.WriteString("\ndata: ")
	b.WriteString(data)
	b.WriteString("\n\n")
}

// writerSink writes to the handler's ResponseWriter.
type writerSink struct {
	w       gin.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (s *writerSink) write(str string) error {
	// Not every ResponseWriter supports deadlines (tests' recorders):
	// the server's write timeout bounds those.
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.WriteString(str); err != nil {
		return err
	}
	return s.rc.Flush()
}

// connSink writes an HTTP/1.1 chunked answer to a taken-over connection,
// each frame in one chunk and one write, bounded in time.
type connSink struct {
	conn    net.Conn
	timeout time.Duration
}

// start writes the status line and header.
func (s *connSink) start(h http.Header) error {
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\n")
	h.Set("Transfer-Encoding", "chunked")
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if err := h.Write(&b); err != nil {
		return err
	}
	b.WriteString("\r\n")
	return s.raw(b.String())
}

func (s *connSink) write(str string) error {
	return s.raw(strconv.FormatInt(int64(len(str)), 16) + "\r\n" + str + "\r\n")
}

func (s *connSink) raw(str string) error {
	_ = s.conn.SetWriteDeadline(time.Now().Add(s.timeout))
	_, err := io.WriteString(s.conn, str)
	return err
}

// finish ends the answer (the last chunk) and closes the connection.
func (s *connSink) finish() {
	_ = s.raw("0\r\n\r\n")
	_ = s.conn.Close()
}
