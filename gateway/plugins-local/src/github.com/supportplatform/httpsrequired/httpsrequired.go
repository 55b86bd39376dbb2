// Package httpsrequired is a Traefik middleware plugin, interpreted by
// Traefik's embedded Yaegi, that refuses a request with an RFC 9457 problem
// saying that HTTPS is required. It never calls the next handler, so a
// request it sees is never proxied, and it never redirects: a client that
// spoke plain HTTP may already have sent its token in clear, and a redirect
// would teach it that doing so works.
//
// Only the standard library is used: Yaegi loads no third-party packages.
package httpsrequired

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
)

// Config is the plugin configuration (the middleware's options in the
// dynamic configuration).
type Config struct {
	Type   string `json:"type,omitempty"`
	Title  string `json:"title,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// CreateConfig returns the defaults Traefik decodes the options onto.
func CreateConfig() *Config {
	return &Config{
		Type:   "https://supportplatform.dev/problems/https-required",
		Title:  "HTTPS required",
		Detail: "This API is served over HTTPS only.",
	}
}

type refuser struct {
	name   string
	config Config
}

// New builds the handler. next is deliberately dropped.
func New(ctx context.Context, next http.Handler, config *Config, name string) (http.Handler, error) {
	return &refuser{name: name, config: *config}, nil
}

func (r *refuser) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	requestID := req.Header.Get("X-Request-Id")
	if !validRequestID(requestID) {
		requestID = newRequestID()
	}
	body, err := json.Marshal(map[string]interface{}{
		"type":      r.config.Type,
		"title":     r.config.Title,
		"status":    http.StatusForbidden,
		"detail":    r.config.Detail,
		"instance":  req.URL.Path,
		"requestId": requestID,
	})
	if err != nil {
		http.Error(w, "HTTPS required", http.StatusForbidden)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Request-Id", requestID)
	// The body of the request is not read; closing keeps a client from
	// reusing a connection on which it is still sending.
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusForbidden)
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
