// Package staticproblem is a Traefik middleware plugin, interpreted by
// Traefik's embedded Yaegi, that answers every request it sees with one fixed
// RFC 9457 problem and never calls the next handler. The gateway uses it
// twice: on the plain-HTTP entrypoint (403 "HTTPS required": never proxied,
// never redirected, because a client that spoke plain HTTP may already have
// sent its token in clear and a redirect would teach it that this works), and
// as the TLS entrypoint's catch-all for paths no service owns (404), so that
// no answer of the gateway is Traefik's bare text.
//
// Only the standard library is used: Yaegi loads no third-party packages.
package staticproblem

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Config is the plugin configuration (the middleware's options in the
// dynamic configuration).
type Config struct {
	Status int    `json:"status,omitempty"`
	Type   string `json:"type,omitempty"`
	Title  string `json:"title,omitempty"`
	Detail string `json:"detail,omitempty"`
	// CloseConnection ends the connection after the answer: right for a
	// refused plain-HTTP request whose body is not read, wrong for a 404.
	CloseConnection bool `json:"closeConnection,omitempty"`
	// DrainBytes bounds how much of the request body is read and discarded
	// before the answer. Most clients send the whole body before they read;
	// answering a body left unread would end in a reset connection and the
	// client would see no answer at all. A longer body closes the connection
	// after the answer. Same bound as the services (httpserver.DrainBytes).
	DrainBytes int64 `json:"drainBytes,omitempty"`
	// LogPathHeader names the request header that carries the redacted
	// path for the access log (logpath.go); empty: none.
	LogPathHeader string `json:"logPathHeader,omitempty"`
}

// DefaultDrainBytes is the DrainBytes used when none is configured.
const DefaultDrainBytes = 4 << 20

// CreateConfig returns the defaults Traefik decodes the options onto.
func CreateConfig() *Config {
	return &Config{
		Status:          http.StatusForbidden,
		CloseConnection: true,
		Type:            "https://supportplatform.dev/problems/https-required",
		Title:           "HTTPS required",
		Detail:          "This API is served over HTTPS only.",
		DrainBytes:      DefaultDrainBytes,
	}
}

type responder struct {
	name   string
	config Config
}

// New builds the handler. next is deliberately dropped.
func New(ctx context.Context, next http.Handler, config *Config, name string) (http.Handler, error) {
	if config.Status < 400 || config.Status > 599 {
		return nil, fmt.Errorf("staticproblem %s: status %d is not an error status", name, config.Status)
	}
	if config.DrainBytes < 0 {
		return nil, fmt.Errorf("staticproblem %s: drainBytes %d is negative", name, config.DrainBytes)
	}
	return &responder{name: name, config: *config}, nil
}

func (r *responder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	setLogPath(req, r.config.LogPathHeader)
	requestID := req.Header.Get("X-Request-Id")
	if !validRequestID(requestID) {
		requestID = newRequestID()
	}
	body, err := json.Marshal(map[string]interface{}{
		"type":      r.config.Type,
		"title":     r.config.Title,
		"status":    r.config.Status,
		"detail":    r.config.Detail,
		"instance":  req.URL.Path,
		"requestId": requestID,
	})
	if err != nil {
		http.Error(w, r.config.Title, r.config.Status)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Request-Id", requestID)
	if !r.drain(req) || r.config.CloseConnection {
		h.Set("Connection", "close")
	}
	w.WriteHeader(r.config.Status)
	_, _ = w.Write(body)
}

// drain reads and discards the request body, at most DrainBytes, and reports
// whether all of it was read (the connection can then serve another request).
// A client that sent "Expect: 100-continue" waits for the answer before
// sending its body: it is not asked for it.
func (r *responder) drain(req *http.Request) bool {
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		return false
	}
	if req.ContentLength > r.config.DrainBytes {
		return false
	}
	n, err := io.CopyN(io.Discard, req.Body, r.config.DrainBytes+1)
	return n <= r.config.DrainBytes && (err == nil || err == io.EOF)
}

// validRequestID accepts the ids a client may choose: short, printable,
// without characters that would need escaping in a header or a log line.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	return strings.IndexFunc(id, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':')
	}) < 0
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
