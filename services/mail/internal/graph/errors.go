package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"supportplatform.dev/pkg/httpretry"
)

// A mail call's reply that arrived but cannot be used. Asking again gets the same reply: the
// import skips the mail (see Status for Graph's refusals).
var (
	// ErrReplyTooLarge: the reply exceeds the mail calls' cap (16 MiB), as a mail with a huge body
	// does.
	ErrReplyTooLarge = errors.New("reply larger than the mail calls' cap")
	// ErrMalformedReply: the reply is not the JSON of the resource asked for.
	ErrMalformedReply = errors.New("malformed reply")
)

// Error is a Graph reply other than 2xx, read from Graph's {"error":{"code","message"}} body.
type Error struct {
	// Op names the call ("renew subscription").
	Op     string
	Status int
	// Code and Message are Graph's; Message is shortened when long.
	Code, Message string
	// RequestID is Graph's request-id, which Microsoft support asks for.
	RequestID string
	// RetryAfter is the server's requested delay when HasRetryAfter; Graph sends it with 429
	// (seconds, possibly fractional such as 2.128) and sometimes with 503.
	RetryAfter    time.Duration
	HasRetryAfter bool
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "graph: %s: status %d", e.Op, e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.HasRetryAfter {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	if e.RequestID != "" {
		b.WriteString(" [request-id " + e.RequestID + "]")
	}
	return b.String()
}

func newError(op string, resp *http.Response, raw []byte, now time.Time) *Error {
	e := &Error{Op: op, Status: resp.StatusCode, RequestID: resp.Header.Get("request-id")}
	e.RetryAfter, e.HasRetryAfter = httpretry.RetryAfter(resp.Header, now)
	var body struct {
		Error struct {
			Code       string `json:"code"`
			Message    string `json:"message"`
			InnerError struct {
				RequestID string `json:"request-id"`
			} `json:"innerError"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && (body.Error.Code != "" || body.Error.Message != "") {
		e.Code, e.Message = body.Error.Code, shorten(body.Error.Message)
		if e.RequestID == "" {
			e.RequestID = body.Error.InnerError.RequestID
		}
		return e
	}
	// Not Graph speaking: a proxy or load balancer. Its text still helps.
	e.Message = shorten(strings.TrimSpace(string(raw)))
	return e
}

func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// TokenError is a failure to get a tenant's access token from Entra: wrong credentials, an
// unknown tenant, an app without admin consent in the tenant, or the endpoint out of reach. Its
// text never contains the client secret.
type TokenError struct {
	TenantID string
	// Status is the token endpoint's HTTP status, 0 when no reply arrived.
	Status int
	// Code and Description are OAuth's error and error_description (Entra's start with AADSTS).
	Code, Description string
	RetryAfter        time.Duration
	HasRetryAfter     bool
	// Err is the transport failure when no reply arrived (context errors included).
	Err error
}

func (e *TokenError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "token for tenant %s", e.TenantID)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Description != "" {
		b.WriteString(": " + e.Description)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *TokenError) Unwrap() error { return e.Err }

// newTokenError describes an oauth2 failure without the request's secret, should any server or
// proxy echo the form back.
func newTokenError(tenant, secret string, err error, now time.Time) *TokenError {
	te := &TokenError{TenantID: tenant}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		te.Code, te.Description = re.ErrorCode, re.ErrorDescription
		if re.Response != nil {
			te.Status = re.Response.StatusCode
			te.RetryAfter, te.HasRetryAfter = httpretry.RetryAfter(re.Response.Header, now)
		}
		if te.Code == "" && te.Description == "" {
			te.Description = strings.TrimSpace(string(re.Body))
		}
		te.Description = shorten(redact(te.Description, secret))
		return te
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		te.Err = err
		return te
	}
	te.Err = errors.New(redact(err.Error(), secret))
	return te
}

func redact(s, secret string) string {
	for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret)} {
		if form != "" {
			s = strings.ReplaceAll(s, form, "[redacted]")
		}
	}
	return s
}

// IsNotFound reports whether Graph answered 404: for a subscription, that it no longer exists
// (deleted, or expired unrenewed) and must be created anew.
func IsNotFound(err error) bool { return status(err) == http.StatusNotFound }

// MaybeCreated reports whether a failed create may still have made its subscription at Graph:
// no answer came in time (a timeout or a broken connection), or Graph failed with a 5xx while it
// may have gone on. A 4xx, a 429 or a refused token made nothing.
func MaybeCreated(err error) bool {
	if err == nil {
		return false
	}
	if st := status(err); st != 0 {
		return st >= 500
	}
	var te *TokenError
	if errors.As(err, &te) || errors.Is(err, ErrInvalid) {
		return false
	}
	var ue *url.Error
	return errors.As(err, &ue) || errors.Is(err, context.DeadlineExceeded)
}

// IsThrottled reports whether Graph or the token endpoint shed the call: 429, or a 5xx that a
// later attempt may not meet (httpretry.Transient; 501 and 505 are not). Retry after RetryAfter
// when given, else back off.
func IsThrottled(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return httpretry.Transient(e.Status)
	}
	var te *TokenError
	if errors.As(err, &te) {
		return te.Status != 0 && httpretry.Transient(te.Status)
	}
	return false
}

// RetryAfter returns the delay the server asked for with the failed call, if it asked.
func RetryAfter(err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter, e.HasRetryAfter
	}
	var te *TokenError
	if errors.As(err, &te) {
		return te.RetryAfter, te.HasRetryAfter
	}
	return 0, false
}

// Retryable adapts a call's error to httpretry.Policy.Run: throttling, transient server errors and
// transport failures come back as *httpretry.Retry (carrying Retry-After when Graph sent one);
// anything else, and nil, unchanged. For example:
//
//	_, err := policy.Run(ctx, func(ctx context.Context) error {
//		sub, err = client.RenewSubscription(ctx, tenant, id, exp)
//		return graph.Retryable(err)
//	})
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	if IsThrottled(err) {
		after, ok := RetryAfter(err)
		return &httpretry.Retry{Err: err, After: after, Requested: ok}
	}
	// A cancelled or expired caller's context is among these; Policy.Run stops on it by itself.
	var ue *url.Error
	if errors.As(err, &ue) {
		return &httpretry.Retry{Err: err}
	}
	var te *TokenError
	if errors.As(err, &te) && te.Status == 0 && te.Err != nil {
		return &httpretry.Retry{Err: err}
	}
	return err
}

// Status is Graph's HTTP status of a failed call, 0 when no reply came (transport, token or
// argument errors).
func Status(err error) int { return status(err) }

func status(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}
