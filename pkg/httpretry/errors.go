package httpretry

import (
	"fmt"
	"strings"
)

// UpstreamError is a failure of a provider's HTTP API or of the way to it: a
// non-2xx status, a timeout or a transport error, after the retries.
type UpstreamError struct {
	// Provider names the client ("openai", "libretranslate") in messages.
	Provider string
	// StatusCode is the last HTTP status, 0 when no response arrived.
	StatusCode int
	// Message is the provider's own error text, if it sent one.
	Message  string
	Attempts int
	Err      error
}

func (e *UpstreamError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider + ": upstream failure")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": status %d", e.StatusCode)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	fmt.Fprintf(&b, " (after %d attempt(s))", e.Attempts)
	return b.String()
}

func (e *UpstreamError) Unwrap() error { return e.Err }

// MalformedReplyError is a 2xx reply that does not have the documented shape.
// It is never retried: asking again would get the same answer.
type MalformedReplyError struct {
	Provider string
	Reason   string
	Err      error
}

func (e *MalformedReplyError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: malformed reply: %s: %v", e.Provider, e.Reason, e.Err)
	}
	return e.Provider + ": malformed reply: " + e.Reason
}

func (e *MalformedReplyError) Unwrap() error { return e.Err }
