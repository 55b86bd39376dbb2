// Package idempotency makes POST routes safe to retry: a client sends an
// Idempotency-Key header, and a request repeated with the same key and the
// same body gets the first answer again instead of creating a second record.
//
// The policy, per (service, customer of the token, method and route, key):
//
//   - the first request claims the key atomically in Redis (SET NX) with an
//     in-progress marker that expires after PendingTTL, runs, and stores its
//     answer (status, Location and Content-Type, body, and the SHA-256 of the
//     request body) for TTL;
//   - a replay with the same body gets the stored answer byte for byte, with
//     the header Idempotent-Replayed: true; 4xx answers are stored and
//     replayed too (a bad request stays bad);
//   - the same key with another body is a 422 problem, while the first runs
//     or after;
//   - a replay while the first request still runs is a 409 problem;
//   - a 5xx answer is not stored: the marker is removed at once so the client
//     can retry; if the process dies instead, the marker expires after
//     PendingTTL.
//
// Requests without the header run as usual. When Redis cannot be reached a
// request with the header is refused (503) rather than run unprotected.
package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/randid"
)

// Header is the request header that carries the key.
const Header = "Idempotency-Key"

// ReplayedHeader marks an answer that is a stored one.
const ReplayedHeader = "Idempotent-Replayed"

// MaxKeyLen bounds the key (bytes of printable ASCII).
const MaxKeyLen = 255

// Defaults of Options.
const (
	DefaultTTL        = 24 * time.Hour
	DefaultPendingTTL = time.Minute
)

// Options configure the middleware.
type Options struct {
	Redis *redis.Client
	// Prefix is the deployment's REDIS_PREFIX.
	Prefix string
	// Service names the service in the keys.
	Service string
	// TTL is how long an answer is kept (DefaultTTL when zero).
	TTL time.Duration
	// PendingTTL is how long the in-progress marker outlives a process that
	// died while running the request (DefaultPendingTTL when zero). It must
	// be longer than a request may run.
	PendingTTL time.Duration
	// Fail writes a problem answer (httpserver.Server.Fail).
	Fail func(*gin.Context, error)
}

// record is what Redis holds under a key.
type record struct {
	// Token is set while the first request runs: it identifies the claim,
	// so that only its owner replaces or removes it.
	Token       string `json:"token,omitempty"`
	BodySHA256  string `json:"bodySha256"`
	Status      int    `json:"status,omitempty"`
	Location    string `json:"location,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Body        []byte `json:"body,omitempty"`
}

// replaceOwn sets KEYS[1] to ARGV[2] for ARGV[3] ms, or deletes it when
// ARGV[2] is empty, only while it still holds the claim ARGV[1].
var replaceOwn = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then return redis.call('DEL', KEYS[1]) end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`)

// Middleware returns the Gin middleware for the routes it is added to,
// after the token middleware (the key is scoped to the token's customer).
func Middleware(o Options) gin.HandlerFunc {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.PendingTTL <= 0 {
		o.PendingTTL = DefaultPendingTTL
	}
	return func(c *gin.Context) {
		key := c.GetHeader(Header)
		if key == "" && len(c.Request.Header.Values(Header)) == 0 {
			c.Next()
			return
		}
		if err := o.serve(c, key); err != nil {
			o.Fail(c, err)
		}
	}
}

// CheckKey validates a key: 1 to 255 printable ASCII characters.
func CheckKey(key string) error {
	ok := key != "" && len(key) <= MaxKeyLen
	for i := 0; ok && i < len(key); i++ {
		ok = key[i] >= 0x20 && key[i] <= 0x7e
	}
	if !ok {
		return apperr.Field(Header, "must be 1 to 255 printable ASCII characters",
			"the Idempotency-Key header is invalid")
	}
	return nil
}

func (o Options) serve(c *gin.Context, key string) error {
	if len(c.Request.Header.Values(Header)) > 1 {
		return apperr.Field(Header, "must be given at most once", "the Idempotency-Key header is invalid")
	}
	if err := CheckKey(key); err != nil {
		return err
	}
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return err
	}
	body, err := readBody(c.Request)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	keySum := sha256.Sum256([]byte(key))
	rkey := o.Prefix + "idem:" + o.Service + ":" + strconv.FormatInt(p.CustomerID, 10) + ":" +
		c.Request.Method + ":" + c.FullPath() + ":" + hex.EncodeToString(keySum[:])
	ctx := c.Request.Context()
	// The stored record may expire between a failed claim and the read:
	// then the claim is tried again.
	for range 3 {
		claim := record{Token: randid.Hex(16), BodySHA256: hash}
		pending, _ := json.Marshal(claim)
		ok, err := o.Redis.SetNX(ctx, rkey, pending, o.PendingTTL).Result()
		if err != nil {
			return unavailable(err)
		}
		if ok {
			c.Request.Body = io.NopCloser(bytes.NewReader(body))
			return o.run(c, rkey, string(pending))
		}
		raw, err := o.Redis.Get(ctx, rkey).Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return unavailable(err)
		}
		var rec record
		if err := json.Unmarshal(raw, &rec); err != nil {
			return apperr.Wrap(apperr.Internal, err, "")
		}
		switch {
		case rec.BodySHA256 != hash:
			return &apperr.Error{Code: apperr.Unprocessable,
				Message: "this Idempotency-Key was already used with another request body; use a new key for a new request",
				Fields:  map[string]string{Header: "was used for a request with another body"}}
		case rec.Token != "":
			return apperr.E(apperr.Conflict, "a request with this Idempotency-Key is still being processed; retry later")
		}
		replay(c, rec)
		return nil
	}
	return apperr.E(apperr.Conflict, "a request with this Idempotency-Key is still being processed; retry later")
}

// run serves the request, recording its answer, and then stores the answer
// (below 500) or gives the key up (500 and above).
func (o Options) run(c *gin.Context, rkey, pending string) error {
	w := &recorder{ResponseWriter: c.Writer}
	c.Writer = w
	// The request's context may have ended (timeout): the bookkeeping still
	// has to happen.
	bookkeeping := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(c.Request.Context()), 5*time.Second)
	}
	release := func() {
		ctx, cancel := bookkeeping()
		defer cancel()
		_ = replaceOwn.Run(ctx, o.Redis, []string{rkey}, pending, "", 0).Err()
	}
	defer func() {
		// A panicking handler (answered 500 by the server's recovery) gives
		// the key up like any 5xx.
		if r := recover(); r != nil {
			c.Writer = w.ResponseWriter
			release()
			panic(r)
		}
	}()
	c.Next()
	c.Writer = w.ResponseWriter
	status := w.Status()
	if status >= 500 {
		release()
		return nil
	}
	ctx, cancel := bookkeeping()
	defer cancel()
	var claim record
	_ = json.Unmarshal([]byte(pending), &claim)
	done, err := json.Marshal(record{BodySHA256: claim.BodySHA256, Status: status,
		Location: w.Header().Get("Location"), ContentType: w.Header().Get("Content-Type"), Body: w.body.Bytes()})
	if err != nil {
		return nil
	}
	// The answer has been sent; if it cannot be stored, the claim expires
	// and a retry runs again, which is all that can be done now.
	_ = replaceOwn.Run(ctx, o.Redis, []string{rkey}, pending, string(done), o.TTL.Milliseconds()).Err()
	return nil
}

func replay(c *gin.Context, rec record) {
	if rec.Location != "" {
		c.Header("Location", rec.Location)
	}
	if rec.ContentType != "" {
		c.Header("Content-Type", rec.ContentType)
	}
	c.Header(ReplayedHeader, "true")
	c.Status(rec.Status)
	if len(rec.Body) > 0 && bodyAllowed(rec.Status) {
		_, _ = c.Writer.Write(rec.Body)
	}
	c.Abort()
}

func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified && status >= 200
}

func unavailable(err error) error {
	return apperr.Wrap(apperr.Unavailable, err, "idempotency keys cannot be checked right now; retry later")
}

// readBody reads the whole request body (bounded by the server's body
// limit) so that it can be hashed and then read again by the handler.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apperr.E(apperr.TooLarge, "the request body exceeds %d bytes", mbe.Limit)
		}
		return nil, apperr.Wrap(apperr.Invalid, err, "the request body could not be read")
	}
	return body, nil
}

// recorder keeps a copy of what the handler writes.
type recorder struct {
	gin.ResponseWriter
	body bytes.Buffer
}

func (w *recorder) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *recorder) WriteString(s string) (int, error) {
	w.body.WriteString(s)
	return w.ResponseWriter.WriteString(s)
}
