package graphfake

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// graphTime is how Graph writes a dateTimeOffset: UTC with seven fractional digits.
const graphTime = "2006-01-02T15:04:05.0000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(graphTime) }

type graphError struct {
	Error graphErrorBody `json:"error"`
}

type graphErrorBody struct {
	Code       string     `json:"code"`
	Message    string     `json:"message"`
	InnerError innerError `json:"innerError"`
}

type innerError struct {
	Date            string `json:"date"`
	RequestID       string `json:"request-id"`
	ClientRequestID string `json:"client-request-id"`
}

// setRequestID sets the ids Graph puts on every response; support tickets quote them, and error
// bodies repeat them.
func setRequestID(w http.ResponseWriter, r *http.Request) {
	id := newGUID()
	w.Header().Set("request-id", id)
	client := r.Header.Get("client-request-id")
	if client == "" {
		client = id
	}
	w.Header().Set("client-request-id", client)
}

// writeError writes Graph's error shape: {"error":{"code","message","innerError":{...}}}.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, graphError{Error: graphErrorBody{
		Code:    code,
		Message: message,
		InnerError: innerError{
			Date:            time.Now().UTC().Format("2006-01-02T15:04:05"),
			RequestID:       w.Header().Get("request-id"),
			ClientRequestID: w.Header().Get("client-request-id"),
		},
	}})
}

func writeFault(w http.ResponseWriter, f fault) {
	if f.status == http.StatusTooManyRequests {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		writeError(w, f.status, "TooManyRequests", "Too many requests. Retry after the period given in the Retry-After header.")
		return
	}
	writeError(w, f.status, errorCode(f.status), http.StatusText(f.status)+" (injected fault).")
}

// errorCode names a status as Graph's error codes do.
func errorCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusUnauthorized:
		return "InvalidAuthenticationToken"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "ResourceNotFound"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusTooManyRequests:
		return "TooManyRequests"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	case http.StatusGatewayTimeout:
		return "GatewayTimeout"
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return strings.ReplaceAll(http.StatusText(status), " ", "")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to tell it
}

func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// newMessageID looks like an immutable Outlook id: URL-safe base64 with '-' and '_', case-sensitive,
// long. Receivers that lower-case, trim or mis-escape ids fail against it as against Graph.
func newMessageID() string {
	b := make([]byte, 36)
	_, _ = rand.Read(b)
	return "AAkALgAAAAAAHYQDEapmEc2byACqAC-EWg0A" + base64.RawURLEncoding.EncodeToString(b)
}

func newETag() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return `W/"CQAAABYAAAB` + base64.StdEncoding.EncodeToString(b) + `"`
}
