// Package webfiles serves files embedded in a binary (the API reference page,
// the agent console): each prepared once at start with its content type,
// Cache-Control, ETag and compressed forms, then answered with
// Accept-Encoding negotiation, If-None-Match and HEAD by http.ServeContent.
// Which files exist and under which routes stays with each service.
package webfiles

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// File is one served file.
type File struct {
	ContentType string
	Cache       string // Cache-Control
	Body        []byte
	// ETag is strong, of Body, unquoted; "-<encoding>" is appended for an
	// encoded form.
	ETag string
	// Encoded holds the compressed forms by Content-Encoding ("br", "gzip").
	Encoded map[string][]byte
}

// encodings a file may be compressed in, by preference: the first one the
// file has and the client accepts is sent.
var encodings = []string{"br", "gzip"}

// New returns the file of body with its ETag (a hash of body) and no
// compressed form.
func New(contentType, cache string, body []byte) *File {
	sum := sha256.Sum256(body)
	return &File{ContentType: contentType, Cache: cache, Body: body, ETag: hex.EncodeToString(sum[:8]), Encoded: map[string][]byte{}}
}

// Gzip adds the gzip form of f, compressed now, unless f is an image or
// small or the form would save less than a tenth: then it does not pay.
func (f *File) Gzip() {
	if strings.HasPrefix(f.ContentType, "image/") || len(f.Body) < 1024 {
		return
	}
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.DefaultCompression)
	_, _ = w.Write(f.Body)
	_ = w.Close()
	if z.Len() < len(f.Body)*9/10 {
		f.Encoded["gzip"] = z.Bytes()
	}
}

// Serve writes f in the first compressed form the client accepts;
// http.ServeContent answers If-None-Match (304), HEAD and ranges.
func Serve(w http.ResponseWriter, r *http.Request, f *File) {
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Cache-Control", f.Cache)
	body, etag := f.Body, f.ETag
	if len(f.Encoded) > 0 {
		h.Add("Vary", "Accept-Encoding")
		accept := r.Header.Get("Accept-Encoding")
		for _, name := range encodings {
			if b, ok := f.Encoded[name]; ok && Accepts(accept, name) {
				body, etag = b, f.ETag+"-"+name
				h.Set("Content-Encoding", name)
				break
			}
		}
	}
	h.Set("ETag", `"`+etag+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// Accepts reports whether an Accept-Encoding header value allows coding:
// named, or covered by *, with a quality above zero.
func Accepts(header, coding string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		allowed := qualityAboveZero(params)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case coding:
			return allowed
		case "*":
			star = allowed
		}
	}
	return star
}

func qualityAboveZero(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q > 0
		}
	}
	return true
}

// SecurityHeaders is the middleware both sites put on every response: the
// given Content-Security-Policy, no sniffing, no referrer, no framing, no
// cross-origin opener or embedding.
func SecurityHeaders(csp string) gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		c.Next()
	}
}
