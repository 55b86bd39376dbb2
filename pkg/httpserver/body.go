package httpserver

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// DrainBytes bounds how much of a request body the server reads and throws
// away before an error answer: a body over MaxBodyBytes (413), or one refused
// before it was read (401, 404, 415...).
//
// Most HTTP clients write the whole body before they read the answer. If the
// server answered and closed the connection with unread bytes in its receive
// buffer, the kernel would reset the connection and the client would see it
// closed with no answer at all (net/http by itself discards only 256 KiB after
// the handler returns, then closes). So up to DrainBytes of the rest is
// consumed first: the client gets its problem and the connection stays
// usable. A longer rest, declared or not, is not worth the bandwidth: the
// answer says "Connection: close" and the connection ends after it (such a
// client may then see a reset). The gateway's staticproblem plugin uses the
// same bound.
const DrainBytes = 4 << 20

// bodyKey is the gin context key of the request's *limitedBody.
const bodyKey = "httpserver.body"

// limitedBody is http.MaxBytesReader without its side effects on the
// connection: past limit it fails with *http.MaxBytesError, and it keeps the
// underlying body so that an error answer can drain it (drainUnread).
type limitedBody struct {
	src      io.ReadCloser
	limit    int64
	n        int64 // bytes delivered so far
	started  bool  // Read was called: a "100 Continue" went out if asked for
	exceeded bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	b.started = true
	if b.exceeded {
		return 0, &http.MaxBytesError{Limit: b.limit}
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Read one byte more than allowed to tell "exactly limit" from "over".
	if room := b.limit - b.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.src.Read(p)
	if b.n+int64(n) > b.limit {
		n = int(b.limit - b.n)
		b.n = b.limit
		b.exceeded = true
		return n, &http.MaxBytesError{Limit: b.limit}
	}
	b.n += int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.src.Close() }

// drainUnread runs before every error answer: it reads and discards the rest
// of the request body, at most DrainBytes, so that a client still sending
// (a body over the limit, or one refused before it was read: 401, 415, 404)
// gets the answer. When the rest is larger, cannot be read, or was never asked
// for (Expect: 100-continue and nothing read yet: the client waits for the
// answer and need not send the body), the connection is closed after the
// answer.
func drainUnread(c *gin.Context) {
	v, ok := c.Get(bodyKey)
	if !ok {
		return
	}
	b := v.(*limitedBody)
	r := c.Request
	closeAfter := func() { c.Header("Connection", "close") }
	if !b.started && strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		closeAfter()
		return
	}
	if r.ContentLength > 0 && r.ContentLength-b.n > DrainBytes {
		closeAfter()
		return
	}
	n, err := io.CopyN(io.Discard, b.src, DrainBytes+1)
	if n > DrainBytes || (err != nil && !errors.Is(err, io.EOF)) {
		closeAfter()
	}
}
