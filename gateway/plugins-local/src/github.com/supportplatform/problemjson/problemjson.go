// Package problemjson is a Traefik middleware plugin, interpreted by
// Traefik's embedded Yaegi, that gives the errors Traefik produces itself the
// same RFC 9457 application/problem+json shape as every service error. Traefik
// answers a rate-limited request or an unreachable backend with a bare or
// text/plain body; the services always label their errors
// application/problem+json, so exactly the unlabelled and text/plain error
// answers are rewritten. Headers such as Retry-After are kept.
//
// (Traefik's errors middleware cannot do this: it drops the original headers
// and would also replace the services' own problem answers.)
//
// Only the standard library is used: Yaegi loads no third-party packages.
package problemjson

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Config is the plugin configuration.
type Config struct {
	TypeBase string `json:"typeBase,omitempty"`
	// LogPathHeader names the request header that carries the redacted
	// path for the access log (logpath.go); empty: none.
	LogPathHeader string `json:"logPathHeader,omitempty"`
}

// CreateConfig returns the defaults Traefik decodes the options onto.
func CreateConfig() *Config {
	return &Config{TypeBase: "https://supportplatform.dev/problems/"}
}

type handler struct {
	next          http.Handler
	typeBase      string
	logPathHeader string
}

// New builds the middleware.
func New(ctx context.Context, next http.Handler, config *Config, name string) (http.Handler, error) {
	return &handler{next: next, typeBase: config.TypeBase, logPathHeader: config.LogPathHeader}, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	setLogPath(req, h.logPathHeader)
	h.next.ServeHTTP(&writer{ResponseWriter: w, req: req, typeBase: h.typeBase}, req)
}

// writer rewrites a text/plain error status as it is written.
type writer struct {
	http.ResponseWriter
	req         *http.Request
	typeBase    string
	wroteHeader bool
	swallow     bool
}

func (w *writer) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code < 200 {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.wroteHeader = true
	h := w.Header()
	ct := h.Get("Content-Type")
	if code < 400 || (ct != "" && !strings.HasPrefix(ct, "text/plain")) {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	body := problemBody(w.typeBase, code, w.req.URL.Path, h.Get("Retry-After"))
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.swallow = true
	w.ResponseWriter.WriteHeader(code)
	_, _ = w.ResponseWriter.Write(body)
}

func (w *writer) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush keeps streaming answers streaming.
func (w *writer) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func problemBody(typeBase string, code int, path, retryAfter string) []byte {
	kind, detail := "gateway_error", "the gateway could not complete the request"
	switch code {
	case http.StatusTooManyRequests:
		kind = "rate_limited"
		detail = "too many requests from this client"
		if retryAfter != "" {
			detail += "; retry after " + retryAfter + " seconds"
		}
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		kind = "unavailable"
		detail = "the service behind the gateway is unavailable; retry later"
	}
	body, err := json.Marshal(map[string]interface{}{
		"type":     typeBase + kind,
		"title":    http.StatusText(code),
		"status":   code,
		"detail":   detail,
		"instance": path,
	})
	if err != nil {
		return []byte(`{"title":"error","status":` + strconv.Itoa(code) + `}`)
	}
	return body
}
