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
}

// CreateConfig returns the defaults Traefik decodes the options onto.
func CreateConfig() *Config {
	return &Config{
		Status:          http.StatusForbidden,
		CloseConnection: true,
		Type:            "https://supportplatform.dev/problems/https-required",
		Title:           "HTTPS required",
		Detail:          "This API is served over HTTPS only.",
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
	return &responder{name: name, config: *config}, nil
}

func (r *responder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
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
	if r.config.CloseConnection {
		// The body of the request is not read; closing keeps a client from
		// reusing a connection on which it is still sending.
		h.Set("Connection", "close")
	}
	w.WriteHeader(r.config.Status)
	_, _ = w.Write(body)
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
