package httpapi

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/services/live/internal/hub"
	"supportplatform.dev/services/live/internal/timers"
)

// events is the stream. Over HTTP/1.1 (the gateway's connection to the
// service) the connection is taken over once the stream is set up, and an
// idle stream then holds no goroutine at all: no net/http buffers, no
// background reader, no handler stack, no runtime timer. What it has to
// send (events from the hub, a heartbeat, its end) starts a goroutine that
// writes it and ends; its deadlines are entries in one heap (package
// timers). Other protocols (HTTP/2) are served in the handler.
func (h *Handlers) events(c *gin.Context) error {
	p, err := h.principal(c)
	if err != nil {
		return err
	}
	after, err := lastEventID(c)
	if err != nil {
		return err
	}
	h.started.Do(func() { go h.supervise() })
	ctx := c.Request.Context()
	// running: nothing may drain the stream before it is set up.
	st := &stream{h: h, p: p, after: after, running: true, ctx: context.Background(), end: h.Now().Add(h.MaxLife)}
	st.timer.Fn = st.onTimer
	sub, resume, err := h.hub.Subscribe(p.CustomerID, after, st.kick)
	if err != nil {
		return err
	}
	st.sub = sub
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
			st.out = out
			h.streams.Add(1)
			if st.open(replay, reset) {
				st.close()
			}
			return nil
		}
	}
	// In the handler: the stream is drained here, woken through a channel.
	st.ctx = ctx
	st.wake = make(chan struct{}, 1)
	st.out = &writerSink{w: c.Writer, rc: http.NewResponseController(c.Writer), timeout: h.WriteTimeout}
	c.Status(http.StatusOK)
	defer st.stop()
	if st.open(replay, reset) {
		return nil
	}
	for {
		select {
		case <-st.wake:
			if st.drain() {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// Wait waits until every stream on a connection taken over has ended
// (they end at Closing).
func (h *Handlers) Wait() { h.streams.Wait() }

// stream is one open stream: about 300 bytes, plus its hub subscription
// and its connection.
type stream struct {
	h   *Handlers
	p   authn.Principal
	sub *hub.Sub
	out sink
	// ctx bounds the revocation checks (the request's in the handler).
	ctx context.Context
	// wake: the handler's, which drains the stream (HTTP/2); nil: a
	// goroutine is started for each drain (a connection taken over).
	wake chan struct{}
	// after is the last id sent (or the console's resume point): what the
	// console has. Only the draining goroutine touches it, and the
	// deadlines below.
	after uint64
	// end is the end of the stream's time budget; beat its next heartbeat.
	end, beat time.Time
	timer     timers.Timer

	mu sync.Mutex
	// running: one goroutine drains the stream (or it is being set up, or
	// it is over); kicks then only leave their mark.
	running bool
	// fired: a deadline passed.
	fired bool
}

// kick is the hub's wake-up: events to take, or a state to act on.
func (st *stream) kick() { st.poke(false) }

// onTimer runs on the timers' goroutine.
func (st *stream) onTimer() { st.poke(true) }

// poke makes sure a goroutine drains the stream; it never waits.
func (st *stream) poke(fired bool) {
	st.mu.Lock()
	st.fired = st.fired || fired
	start := !st.running
	st.running = true
	st.mu.Unlock()
	if !start {
		return
	}
	if st.wake != nil {
		// One slot; running keeps a second send from coming before the
		// handler took this one.
		st.wake <- struct{}{}
		return
	}
	go st.run()
}

// run drains a stream on a connection taken over, and closes it when it is
// over.
func (st *stream) run() {
	if st.drain() {
		st.close()
	}
}

// close ends a stream on a connection taken over.
func (st *stream) close() {
	st.stop()
	st.out.(*connSink).finish()
	st.h.streams.Done()
}

// stop unregisters the stream.
func (st *stream) stop() {
	st.h.timers.Stop(&st.timer)
	st.sub.Close()
}

// open sends the stream's start (the reconnect delay, what it missed) and
// schedules its deadlines; true: the stream is over.
func (st *stream) open(replay []hub.Event, reset bool) bool {
	// retry: how long an EventSource waits before it reconnects.
	var b []byte
	b = append(b, "retry: 2000\n\n"...)
	if reset {
		b = frame(b, 0, "reset", `{"reason":"the events after the last id received are no longer retained; reload"}`)
	}
	for _, e := range replay {
		if e.Seq > st.after {
			b = frame(b, e.Seq, e.Type, e.Data)
			st.after = e.Seq
		}
	}
	if err := st.out.write(b); err != nil {
		return true
	}
	// The first heartbeat comes after half to all of the interval:
	// streams opened together (the consoles of a replica that went away
	// reconnecting) do not all check their tokens in the same instant.
	hb := st.h.Heartbeat
	st.beat = st.h.Now().Add(hb/2 + rand.N(hb/2+1))
	st.schedule()
	// Whatever came since the subscription (or a shutdown).
	return st.drain()
}

// schedule sets the stream's timer to its next deadline.
func (st *stream) schedule() {
	next := st.beat
	for _, t := range []time.Time{st.p.ExpiresAt, st.end} {
		if t.Before(next) {
			next = t
		}
	}
	st.h.timers.Schedule(&st.timer, next)
}

// drain sends what the stream has to send until nothing is left (false)
// or the stream is over (true: it is not drained again). Only the
// goroutine that set running calls it.
func (st *stream) drain() bool {
	for {
		st.mu.Lock()
		events, state := st.sub.Take()
		fired := st.fired
		st.fired = false
		if len(events) == 0 && state == hub.Open && !fired {
			st.running = false
			st.mu.Unlock()
			return false
		}
		st.mu.Unlock()
		if !st.send(events, state, fired) {
			return true
		}
	}
}

// send writes events, and what a state or a passed deadline calls for,
// in one write; false: the stream is over.
func (st *stream) send(events []hub.Event, state hub.State, fired bool) bool {
	if state == hub.Dropped {
		// Too slow: it fell more than LIVE_BUFFER events behind. The
		// console reconnects and resumes from its last id.
		return false
	}
	var b []byte
	for _, e := range events {
		// The console has what precedes its id (it may come from a
		// replica further on), and a replayed event may also be the
		// ring's.
		if e.Seq > st.after {
			b = frame(b, e.Seq, e.Type, e.Data)
			st.after = e.Seq
		}
	}
	last := func(typ, data string) bool {
		_ = st.out.write(frame(b, 0, typ, data))
		return false
	}
	if state == hub.Closed {
		return last("reconnect", `{}`)
	}
	if fired {
		now := st.h.Now()
		switch {
		case !now.Before(st.p.ExpiresAt):
			return last("expired", `{"reason":"expired"}`)
		case !now.Before(st.end):
			return last("reconnect", `{}`)
		case !now.Before(st.beat):
			// A console that went away, at the latest here. (A write
			// to a connection closed by its peer may still succeed.)
			if st.out.gone() {
				return false
			}
			ctx, cancel := context.WithTimeout(st.ctx, 2*time.Second)
			revoked, err := st.h.revocations.Revoked(ctx, st.p.TokenID, st.p.AccountID, st.p.IssuedAt)
			cancel()
			if err == nil && revoked {
				return last("expired", `{"reason":"revoked"}`)
			}
			b = append(b, ": ping\n\n"...)
			st.beat = now.Add(st.h.Heartbeat)
		}
		st.schedule()
	}
	if len(b) == 0 {
		return true
	}
	return st.out.write(b) == nil
}

// frame appends one SSE event; id 0: none (control events).
func frame[D string | []byte](b []byte, id uint64, typ string, data D) []byte {
	if id > 0 {
		b = append(b, "id: "...)
		b = strconv.AppendUint(b, id, 10)
		b = append(b, '\n')
	}
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// sink is where a stream's frames go, each at once.
type sink interface {
	write(b []byte) error
	// gone reports whether the client closed its side.
	gone() bool
}

// writerSink writes to the handler's ResponseWriter.
type writerSink struct {
	w       gin.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// gone: the handler's request context ends when the client goes away.
func (s *writerSink) gone() bool { return false }

func (s *writerSink) write(b []byte) error {
	// Not every ResponseWriter supports deadlines (tests' recorders):
	// the server's write timeout bounds those.
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
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
	b := []byte("HTTP/1.1 200 OK\r\n")
	h.Set("Transfer-Encoding", "chunked")
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	w := &appendWriter{b: b}
	if err := h.Write(w); err != nil {
		return err
	}
	return s.raw(append(w.b, "\r\n"...))
}

func (s *connSink) gone() bool { return peerClosed(s.conn) }

func (s *connSink) write(b []byte) error {
	chunk := make([]byte, 0, len(b)+16)
	chunk = strconv.AppendInt(chunk, int64(len(b)), 16)
	chunk = append(chunk, "\r\n"...)
	chunk = append(chunk, b...)
	return s.raw(append(chunk, "\r\n"...))
}

func (s *connSink) raw(b []byte) error {
	_ = s.conn.SetWriteDeadline(time.Now().Add(s.timeout))
	_, err := s.conn.Write(b)
	return err
}

// finish ends the answer (the last chunk) and closes the connection.
func (s *connSink) finish() {
	_ = s.raw([]byte("0\r\n\r\n"))
	_ = s.conn.Close()
}

// appendWriter is an io.Writer appending to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

var _ io.Writer = (*appendWriter)(nil)
