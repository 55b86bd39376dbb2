package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/redistest"
	"supportplatform.dev/services/live/internal/eventstream"
	"supportplatform.dev/services/live/internal/httpapi"
	"supportplatform.dev/services/live/internal/hub"
	"supportplatform.dev/services/live/internal/streamticket"
)

// tokens is the test's token verifier: a token is a name for a principal.
type tokens struct {
	mu sync.Mutex
	m  map[string]authn.Principal
}

func (v *tokens) Verify(_ context.Context, raw string) (authn.Principal, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.m[raw]
	if !ok || !p.ExpiresAt.After(time.Now()) {
		return authn.Principal{}, apperr.E(apperr.Unauthorized, "the access token is invalid")
	}
	return p, nil
}

// token registers a principal of customer that expires after ttl.
func (v *tokens) token(customer int64, ttl time.Duration) (string, authn.Principal) {
	v.mu.Lock()
	defer v.mu.Unlock()
	raw := "tok-" + randid.Hex(8)
	p := authn.Principal{CustomerID: customer, AccountID: customer*100 + 1, Role: authn.RoleAgent, TokenID: randid.Hex(8),
		IssuedAt: time.Now().Add(-time.Second), ExpiresAt: time.Now().Add(ttl)}
	v.m[raw] = p
	return raw, p
}

type env struct {
	t       *testing.T
	url     string
	tokens  *tokens
	harness *natsbus.Bus
	names   contracts.Names
	revoke  *authn.Revocations
	clock   *clock
	api     *httpapi.Handlers
	hub     *hub.Hub
	h2      *httptest.Server
}

type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// start runs the live API over a real NATS server (the live service's NATS
// user, with its permissions) and the real Redis.
func start(t *testing.T, lim hub.Limits, tune func(*httpapi.Handlers)) *env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	names := contracts.Names{Prefix: "live" + randid.Hex(4)}
	urls := natstest.StartWithUsers(t, names)
	harness, err := natsbus.Connect(urls[contracts.HarnessUser], contracts.HarnessUser, names, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { harness.NC.Close() })
	bus, err := natsbus.Connect(urls["live"], "live", names, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.NC.Close() })
	ctx := context.Background()
	if err := bus.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, tokens: &tokens{m: map[string]authn.Principal{}}, harness: harness, names: names, clock: &clock{}}
	// An event from before the service started.
	e.publish(1, contracts.EventTicketCreated, contracts.TicketChanged{TicketID: 1})

	h := hub.New(lim)
	e.hub = h
	src := eventstream.New(bus.JS, names, log)
	stop, err := src.Follow(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	rdb, prefix := redistest.Open(t, "live")
	e.revoke = authn.NewRevocations(rdb, prefix)
	srv, err := httpserver.New(httpserver.Options{Service: "live", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	e.api = httpapi.New(srv, h, e.tokens, e.revoke, streamticket.New(rdb, prefix, 30*time.Second, e.clock.now), src, eventstream.ErrGone)
	e.api.Now = e.clock.now
	// The streams' supervisor ends with the test.
	closing := make(chan struct{})
	e.api.Closing = closing
	t.Cleanup(func() { close(closing) })
	if tune != nil {
		tune(e.api)
	}
	e.api.Routes(srv.Engine, func(c *gin.Context) {
		p, err := e.tokens.Verify(c.Request.Context(), strings.TrimPrefix(c.GetHeader("Authorization"), "Bearer "))
		if err != nil {
			srv.Fail(c, err)
			c.Abort()
			return
		}
		c.Request = c.Request.WithContext(authn.WithPrincipal(c.Request.Context(), p))
	})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	e.url = ts.URL
	// The same over HTTP/2 (TLS), where the stream stays in its handler.
	h2 := httptest.NewUnstartedServer(srv.Handler())
	h2.EnableHTTP2 = true
	h2.StartTLS()
	t.Cleanup(h2.Close)
	e.h2 = h2
	return e
}

var defaults = hub.Limits{MaxStreams: 100, MaxStreamsPerCustomer: 10, Buffer: 16, Ring: 16}

// publish publishes an event the way the outbox relay does and returns its
// stream sequence.
func (e *env) publish(customer int64, typ string, data any) uint64 {
	e.t.Helper()
	m, err := outbox.Event(context.Background(), typ, customer, time.Now(), data)
	if err != nil {
		e.t.Fatal(err)
	}
	ack, err := e.harness.JS.Publish(context.Background(), e.names.Subject(m.Subject), m.Data, jetstream.WithMsgID(m.ID))
	if err != nil {
		e.t.Fatal(err)
	}
	return ack.Sequence
}

type frame struct{ id, event, data string }

// stream is an open event stream.
type stream struct {
	t      *testing.T
	resp   *http.Response
	frames chan frame
	// pings counts the heartbeat comments.
	pings atomic.Int64
}

// open opens the stream with the given request headers and query.
func (e *env) open(query string, header map[string]string) (*stream, *http.Response) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.url+"/api/live/events"+query, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		return nil, resp
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		e.t.Fatalf("content type %q", ct)
	}
	// Over HTTP/1.1 the service takes the connection over (and closes
	// it at the stream's end).
	if !resp.Close || resp.Header.Get("X-Request-Id") == "" {
		e.t.Fatalf("an HTTP/1.1 stream answered with %v", resp.Header)
	}
	s := &stream{t: e.t, resp: resp, frames: make(chan frame, 100)}
	e.t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(s.frames)
		sc := bufio.NewScanner(resp.Body)
		var f frame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.event != "" {
					s.frames <- f
				}
				f = frame{}
			case strings.HasPrefix(line, "id: "):
				f.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				f.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				f.data = line[6:]
			case line == ": ping":
				s.pings.Add(1)
			}
		}
	}()
	return s, resp
}

func (e *env) mustOpen(query string, header map[string]string) *stream {
	e.t.Helper()
	s, resp := e.open(query, header)
	if s == nil {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	return s
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// next is the stream's next event; it fails after a second.
func (s *stream) next() frame {
	s.t.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			s.t.Fatal("the stream ended")
		}
		return f
	case <-time.After(time.Second):
		s.t.Fatal("no event within 1 s")
	}
	return frame{}
}

// ended waits for the end of the stream, failing on any further event.
func (s *stream) ended() {
	s.t.Helper()
	select {
	case f, ok := <-s.frames:
		if ok {
			s.t.Fatalf("event %+v, want the end", f)
		}
	case <-time.After(2 * time.Second):
		s.t.Fatal("the stream did not end")
	}
}

func (s *stream) want(seq uint64, typ string) map[string]any {
	s.t.Helper()
	f := s.next()
	if f.id != strconv.FormatUint(seq, 10) || f.event != typ {
		s.t.Fatalf("got id %q event %q (%s), want %d %s", f.id, f.event, f.data, seq, typ)
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(f.data), &data); err != nil {
		s.t.Fatal(err)
	}
	if data["type"] != typ {
		s.t.Fatalf("data %s", f.data)
	}
	return data
}

// Every open stream of a customer gets the customer's events, as small
// JSON without texts or addresses; another customer's stream never does.
func TestFanOutToTheCustomersStreamsOnly(t *testing.T) {
	e := start(t, defaults, nil)
	tokA, _ := e.tokens.token(1, time.Hour)
	tokA2, _ := e.tokens.token(1, time.Hour)
	tokB, _ := e.tokens.token(2, time.Hour)
	a1, a2, b := e.mustOpen("", bearer(tokA)), e.mustOpen("", bearer(tokA2)), e.mustOpen("", bearer(tokB))

	seq := e.publish(1, contracts.EventReplySent, contracts.ReplySent{MessageID: 7, TicketID: 3, Text: "secret reply",
		Subject: "Re: order", To: contracts.MailAddress{Address: "enduser@example.com"}})
	for _, s := range []*stream{a1, a2} {
		data := s.want(seq, contracts.EventReplySent)
		if data["ticketID"] != float64(3) || data["messageID"] != float64(7) {
			t.Fatalf("data %v", data)
		}
		for _, k := range []string{"text", "to", "subject"} {
			if _, ok := data[k]; ok {
				t.Fatalf("%s forwarded: %v", k, data)
			}
		}
	}
	// B's first event is its own: A's never reached it.
	own := e.publish(2, contracts.EventTicketUpdated, contracts.TicketChanged{TicketID: 9, Status: "closed", PreviousStatus: "open", IsClosed: true})
	data := b.want(own, contracts.EventTicketUpdated)
	if data["status"] != "closed" || data["customerRepID"] != nil {
		t.Fatalf("data %v", data)
	}
	// Auth's and topics' events are not read at all.
	e.publish(1, contracts.EventPasswordResetRequested, contracts.PasswordResetRequested{AccountID: 101, Email: "a@example.com"})
	e.publish(1, contracts.EventTopicCreated, contracts.TopicChanged{TopicID: 1, Name: "x"})
	last := e.publish(1, contracts.EventMessageCreated, contracts.MessageChanged{MessageID: 8, TicketID: 3})
	a1.want(last, contracts.EventMessageCreated)
}

// A stream resumes after its Last-Event-ID: from the ring, from the stream
// when the ring no longer holds it, with a reset when the stream does not
// either.
func TestResumeWithLastEventID(t *testing.T) {
	e := start(t, hub.Limits{MaxStreams: 100, MaxStreamsPerCustomer: 10, Buffer: 16, Ring: 2}, nil)
	tok, _ := e.tokens.token(1, time.Hour)
	s := e.mustOpen("", bearer(tok))
	first := e.publish(1, contracts.EventTicketCreated, contracts.TicketChanged{TicketID: 2})
	s.want(first, contracts.EventTicketCreated)

	// Missed by the console that reconnects with the first id: the ring
	// (2 events) keeps only the last two. The stream still open shows when
	// the hub has them all.
	type sent struct {
		seq uint64
		typ string
	}
	var missed []sent
	for i := range 4 {
		missed = append(missed, sent{e.publish(1, contracts.EventMessageCreated, contracts.MessageChanged{MessageID: int64(10 + i), TicketID: 2}), contracts.EventMessageCreated})
		e.publish(2, contracts.EventTicketCreated, contracts.TicketChanged{TicketID: 50})
		s.want(missed[i].seq, contracts.EventMessageCreated)
	}
	s.resp.Body.Close()
	lastID := strconv.FormatUint(first, 10)
	// The header (an EventSource's reconnect) and the parameter (a new
	// EventSource with a new ticket) resume alike.
	for _, tc := range []struct {
		name string
		open func() *stream
	}{
		{"header", func() *stream {
			return e.mustOpen("", map[string]string{"Authorization": "Bearer " + tok, "Last-Event-ID": lastID})
		}},
		{"parameter", func() *stream { return e.mustOpen("?lastEventId="+lastID, bearer(tok)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.open()
			r.t = t
			for _, m := range missed {
				r.want(m.seq, m.typ)
			}
			live := e.publish(1, contracts.EventTicketDeleted, contracts.TicketChanged{TicketID: 2})
			r.want(live, contracts.EventTicketDeleted)
			missed = append(missed, sent{live, contracts.EventTicketDeleted})
		})
	}

	// The events after the id are gone from the stream: reset, then the
	// live events.
	st, err := e.harness.JS.Stream(context.Background(), e.names.Stream(contracts.StreamEvents))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := e.mustOpen("?lastEventId="+lastID, bearer(tok))
	if f := r.next(); f.event != "reset" || f.id != "" {
		t.Fatalf("got %+v, want a reset", f)
	}
	live := e.publish(1, contracts.EventTicketCreated, contracts.TicketChanged{TicketID: 3})
	r.want(live, contracts.EventTicketCreated)
}

func TestLastEventIDIsStrict(t *testing.T) {
	e := start(t, defaults, nil)
	tok, _ := e.tokens.token(1, time.Hour)
	for _, v := range []string{"0", "-1", "+5", "05", "1.5", "abc", "1,2", "99999999999999999999999"} {
		_, resp := e.open("", map[string]string{"Authorization": "Bearer " + tok, "Last-Event-ID": v})
		if resp == nil || resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("Last-Event-ID %q: %v", v, resp.Status)
		}
	}
	_, resp := e.open("?lastEventId=4", map[string]string{"Authorization": "Bearer " + tok, "Last-Event-ID": "5"})
	if resp.StatusCode != 400 {
		t.Errorf("header and parameter differ: %s", resp.Status)
	}
}

// A stream ticket opens one stream, once, while it lasts.
func TestTicketIsSingleUseAndExpires(t *testing.T) {
	e := start(t, defaults, nil)
	tok, _ := e.tokens.token(1, time.Hour)
	newTicket := func() string {
		req, _ := http.NewRequest("POST", e.url+"/api/live/tickets", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Ticket    string    `json:"ticket"`
			ExpiresAt time.Time `json:"expiresAt"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 201 || len(body.Ticket) != 43 {
			t.Fatalf("ticket: %d %+v %v", resp.StatusCode, body, err)
		}
		return body.Ticket
	}
	if resp, err := http.Post(e.url+"/api/live/tickets", "", nil); err != nil || resp.StatusCode != 401 {
		t.Fatalf("a ticket without a token: %v %v", resp.Status, err)
	}
	ticket := newTicket()
	s := e.mustOpen("?ticket="+ticket, nil)
	seq := e.publish(1, contracts.EventTicketCreated, contracts.TicketChanged{TicketID: 4})
	s.want(seq, contracts.EventTicketCreated)
	if _, resp := e.open("?ticket="+ticket, nil); resp.StatusCode != 401 {
		t.Fatalf("second use: %s", resp.Status)
	}
	// Both ways at once is ambiguous.
	if _, resp := e.open("?ticket="+newTicket(), bearer(tok)); resp.StatusCode != 400 {
		t.Fatalf("ticket and header: %s", resp.Status)
	}
	old := newTicket()
	e.clock.advance(31 * time.Second)
	if _, resp := e.open("?ticket="+old, nil); resp.StatusCode != 401 {
		t.Fatalf("expired ticket: %s", resp.Status)
	}
	for _, bad := range []string{"x", strings.Repeat("A", 43) + "=", ""} {
		if _, resp := e.open("?ticket="+bad, nil); resp.StatusCode != 401 {
			t.Fatalf("ticket %q: %s", bad, resp.Status)
		}
	}
}

// The stream ends with an `expired` event when its token expires, and when
// it is revoked.
func TestTokenExpiryAndRevocationCloseTheStream(t *testing.T) {
	e := start(t, defaults, func(h *httpapi.Handlers) { h.Heartbeat = 20 * time.Millisecond })
	tok, _ := e.tokens.token(1, time.Hour)
	// The stream's clock is 100 ms before the token's end (the verifier,
	// on its own clock, still takes it).
	e.clock.advance(time.Hour - 100*time.Millisecond)
	s := e.mustOpen("", bearer(tok))
	if f := s.next(); f.event != "expired" || !strings.Contains(f.data, `"expired"`) {
		t.Fatalf("got %+v", f)
	}
	s.ended()

	tok2, p2 := e.tokens.token(1, time.Hour)
	r := e.mustOpen("", bearer(tok2))
	if err := e.revoke.RevokeToken(context.Background(), p2.TokenID, p2.ExpiresAt, time.Now()); err != nil {
		t.Fatal(err)
	}
	if f := r.next(); f.event != "expired" || !strings.Contains(f.data, "revoked") {
		t.Fatalf("got %+v", f)
	}
	r.ended()
}

// Every heartbeat sends a comment; the stream ends with `reconnect` before
// its request's time budget runs out.
func TestHeartbeatAndTimeBudget(t *testing.T) {
	e := start(t, defaults, func(h *httpapi.Handlers) { h.Heartbeat = 20 * time.Millisecond })
	tok, _ := e.tokens.token(1, 2*time.Hour)
	s := e.mustOpen("", bearer(tok))
	deadline := time.Now().Add(5 * time.Second)
	for s.pings.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d pings in 5 s at a 20 ms heartbeat", s.pings.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	seq := e.publish(1, contracts.EventTicketCreated, contracts.TicketChanged{TicketID: 6})
	s.want(seq, contracts.EventTicketCreated)
	// The request's budget is the server's default (a minute); the
	// stream ends 2 s before it.
	e.clock.advance(httpserver.DefaultRequestTimeout - time.Second)
	if f := s.next(); f.event != "reconnect" {
		t.Fatalf("got %+v, want reconnect", f)
	}
	s.ended()
}

// An idle stream on a connection taken over holds no goroutine: neither
// the server's connection goroutine nor one of its own (10,000 idle
// streams on a replica).
func TestIdleStreamsHoldNoGoroutine(t *testing.T) {
	e := start(t, hub.Limits{MaxStreams: 100, MaxStreamsPerCustomer: 100, Buffer: 16, Ring: 16}, nil)
	const n = 40
	count := func() int {
		buf := make([]byte, 1<<22)
		dump := string(buf[:runtime.Stack(buf, true)])
		held := 0
		for _, g := range strings.Split(dump, "\n\n") {
			if strings.Contains(g, "live/internal/httpapi.") || strings.Contains(g, "net/http.(*conn).serve") {
				held++
			}
		}
		return held
	}
	before := count()
	var streams []*stream
	for range n {
		tok, _ := e.tokens.token(1, time.Hour)
		streams = append(streams, e.mustOpen("", bearer(tok)))
	}
	// Each got its start; then an event, so that every stream has
	// written since it was opened.
	seq := e.publish(1, contracts.EventTicketCreated, contracts.TicketChanged{TicketID: 7})
	for _, s := range streams {
		s.want(seq, contracts.EventTicketCreated)
	}
	// The goroutines that wrote the event end on their own (the
	// supervisor of the streams' deadlines stays).
	deadline := time.Now().Add(5 * time.Second)
	for count() > before+1+n/10 {
		if time.Now().After(deadline) {
			t.Fatalf("%d server goroutines with %d idle streams open, %d before", count(), n, before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A console that closed its side of the connection is noticed at the
// stream's next heartbeat, though the ping could still be written: the
// stream ends and frees its place.
func TestStreamOfAClosedConnectionEnds(t *testing.T) {
	e := start(t, defaults, func(h *httpapi.Handlers) { h.Heartbeat = 20 * time.Millisecond })
	tok, _ := e.tokens.token(1, time.Hour)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /api/live/events HTTP/1.1\r\nHost: live\r\nAuthorization: Bearer "+tok+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	if status, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("status %q %v", status, err)
	}
	if e.hub.Streams() != 1 {
		t.Fatalf("%d streams open", e.hub.Streams())
	}
	// Sending nothing more, but reading on.
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatalf("the stream did not end: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.hub.Streams() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open after the console went away", e.hub.Streams())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A console that reads nothing is dropped once its connection is full and
// LIVE_BUFFER events wait for it; the customer's other stream gets every
// event meanwhile, and publishing never waits for the slow one.
func TestSlowStreamIsDroppedWithoutHoldingUpOthers(t *testing.T) {
	e := start(t, defaults, func(h *httpapi.Handlers) { h.WriteTimeout = 300 * time.Millisecond })
	var drops atomic.Int64
	e.hub.OnDrop(func() { drops.Add(1) })
	tok, _ := e.tokens.token(1, time.Hour)
	fast := e.mustOpen("", bearer(tok))
	// The slow console: a small receive buffer, and it never reads.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	slow, err := d.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "GET /api/live/events HTTP/1.1\r\nHost: live\r\nAuthorization: Bearer "+tok+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.hub.Streams() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open", e.hub.Streams())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// 32 KB events, each taken by the fast console before the next; the
	// slow one's connection fills (a few MB at most) and its events wait.
	pad := strings.Repeat("x", 32<<10)
	const n = 400
	for i := range n {
		seq := uint64(1000 + i)
		e.hub.Publish(hub.Event{Seq: seq, CustomerID: 1, Type: contracts.EventTicketUpdated,
			Data: []byte(`{"type":"ticket.updated","pad":"` + pad + `"}`)})
		if f := fast.next(); f.id != strconv.FormatUint(seq, 10) {
			t.Fatalf("event %d: the fast stream got %q, want %d", i, f.id, seq)
		}
	}
	if drops.Load() != 1 || e.hub.Streams() != 1 {
		t.Fatalf("%d drops, %d streams open; want the slow stream dropped", drops.Load(), e.hub.Streams())
	}
	// The fast one goes on.
	e.hub.Publish(hub.Event{Seq: 2000, CustomerID: 1, Type: contracts.EventTicketCreated, Data: []byte(`{"type":"ticket.created"}`)})
	fast.want(2000, contracts.EventTicketCreated)
	// The slow one's connection was closed.
	_ = slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, slow); err != nil {
		t.Fatalf("the slow stream's connection: %v", err)
	}
}

func TestTooManyStreamsIs429(t *testing.T) {
	e := start(t, hub.Limits{MaxStreams: 100, MaxStreamsPerCustomer: 1, Buffer: 16, Ring: 16}, nil)
	tok, _ := e.tokens.token(1, time.Hour)
	e.mustOpen("", bearer(tok))
	_, resp := e.open("", bearer(tok))
	if resp.StatusCode != 429 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("second stream: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}

// The events of the three filters (three consumers) reach a stream in
// sequence order, so that its last id is a safe place to resume from:
// nothing before it can come later.
func TestEventsArriveInSequenceOrder(t *testing.T) {
	e := start(t, hub.Limits{MaxStreams: 100, MaxStreamsPerCustomer: 10, Buffer: 512, Ring: 512}, nil)
	tok, _ := e.tokens.token(1, time.Hour)
	s := e.mustOpen("", bearer(tok))
	types := []string{contracts.EventTicketUpdated, contracts.EventReplyDelivered, contracts.EventEndUserUpdated, contracts.EventMessageCreated}
	const n = 200
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range n / 4 {
				m, err := outbox.Event(context.Background(), types[(w+i)%len(types)], 1, time.Now(), map[string]int{"ticketID": i})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := e.harness.JS.PublishAsync(e.names.Subject(m.Subject), m.Data); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-e.harness.JS.PublishAsyncComplete():
	case <-time.After(10 * time.Second):
		t.Fatal("publishes not acknowledged")
	}
	var last uint64
	for range n {
		f := s.next()
		id, err := strconv.ParseUint(f.id, 10, 64)
		if err != nil || id <= last {
			t.Fatalf("event %q after %d", f.id, last)
		}
		last = id
	}
}

// Over HTTP/2 the stream is served in its handler: the same events.
func TestStreamOverHTTP2(t *testing.T) {
	e := start(t, defaults, nil)
	tok, _ := e.tokens.token(1, time.Hour)
	req, err := http.NewRequestWithContext(t.Context(), "GET", e.h2.URL+"/api/live/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := e.h2.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Fatalf("%s %d", resp.Proto, resp.StatusCode)
	}
	seq := e.publish(1, contracts.EventTicketCreated, contracts.TicketChanged{TicketID: 5})
	want := "id: " + strconv.FormatUint(seq, 10)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			if l == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %q within 1 s", want)
		}
	}
}
