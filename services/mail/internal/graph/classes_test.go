package graph

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"supportplatform.dev/services/mail/internal/importer"
	"supportplatform.dev/services/mail/internal/replier"
)

// Which of Graph's failures skip one mail (and why), and which stay
// unclassed and fail the import's round.
func TestImportClass(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		class error // nil: unclassed
	}{
		{"bad request", &Error{Op: "get message", Status: http.StatusBadRequest, Code: "ErrorInvalidIdMalformed"}, importer.ErrRefused},
		{"unprocessable", &Error{Op: "get message", Status: http.StatusUnprocessableEntity}, importer.ErrRefused},
		{"gone", &Error{Op: "get message", Status: http.StatusNotFound, Code: "ErrorItemNotFound"}, importer.ErrNotFound},
		{"reply over the cap", fmt.Errorf("graph: get message: %w (16 bytes)", ErrReplyTooLarge), importer.ErrReplyTooLarge},
		{"malformed reply", fmt.Errorf("graph: get message: %w (status 200): eof", ErrMalformedReply), importer.ErrMalformedReply},
		{"sync state lost", fmt.Errorf("%w: %w", ErrSyncStateNotFound, &Error{Status: http.StatusGone}), importer.ErrSyncStateNotFound},
		{"throttled", &Error{Op: "get message", Status: http.StatusTooManyRequests}, nil},
		{"token refused", &Error{Op: "get message", Status: http.StatusUnauthorized}, nil},
		{"access denied to the mailbox", &Error{Op: "get message", Status: http.StatusForbidden}, nil},
		{"request timeout", &Error{Op: "get message", Status: http.StatusRequestTimeout}, nil},
		{"server error", &Error{Op: "get message", Status: http.StatusBadGateway}, nil},
		{"network", context.DeadlineExceeded, nil},
	}
	classes := []error{importer.ErrRefused, importer.ErrNotFound, importer.ErrReplyTooLarge, importer.ErrMalformedReply, importer.ErrSyncStateNotFound}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := importClass(tc.err)
			if !errors.Is(got, tc.err) || got.Error() != tc.err.Error() {
				t.Fatalf("importClass(%v) = %v: the cause is lost", tc.err, got)
			}
			for _, c := range classes {
				if errors.Is(got, c) != (c == tc.class) {
					t.Fatalf("importClass(%v): errors.Is(%v) = %v", tc.err, c, !(c == tc.class))
				}
			}
		})
	}
}

// Which of Graph's failures the replier retries, and the wait Graph asked
// for.
func TestReplyClass(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		class     error // nil: unclassed
		transient bool
		after     time.Duration
	}{
		{"429", &Error{Status: 429, Code: "TooManyRequests", RetryAfter: 7500 * time.Millisecond, HasRetryAfter: true}, replier.ErrThrottled, true, 7500 * time.Millisecond},
		{"503", &Error{Status: 503}, replier.ErrThrottled, true, 0},
		{"501", &Error{Status: 501}, replier.ErrRefused, false, 0},
		{"400", &Error{Status: 400, Code: "ErrorInvalidRecipients"}, replier.ErrRefused, false, 0},
		{"401", &Error{Status: 401, Code: "InvalidAuthenticationToken"}, replier.ErrRefused, false, 0},
		{"404", &Error{Status: 404, Code: "ErrorItemNotFound"}, replier.ErrNotFound, false, 0},
		{"token refused", &TokenError{Status: 401, Code: "invalid_client"}, replier.ErrRefused, false, 0},
		{"token endpoint down", &TokenError{Err: errors.New("dial tcp: refused")}, nil, true, 0},
		{"token endpoint 503", &TokenError{Status: 503}, replier.ErrThrottled, true, 0},
		{"transport", &url.Error{Op: "Post", URL: "u", Err: errors.New("EOF")}, nil, true, 0},
		{"deadline", context.DeadlineExceeded, nil, true, 0},
		{"not configured", ErrNotConfigured, nil, true, 0},
	}
	classes := []error{replier.ErrThrottled, replier.ErrRefused, replier.ErrNotFound}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := replyClass(tc.err)
			if !errors.Is(got, tc.err) || got.Error() != tc.err.Error() {
				t.Fatalf("replyClass(%v) = %v: the cause is lost", tc.err, got)
			}
			for _, c := range classes {
				if errors.Is(got, c) != (c == tc.class) {
					t.Fatalf("replyClass(%v): errors.Is(%v) = %v", tc.err, c, !(c == tc.class))
				}
			}
			if replier.Transient(got) != tc.transient {
				t.Fatalf("Transient(replyClass(%v)) = %v", tc.err, !tc.transient)
			}
			var se *replier.SendError
			if errors.As(got, &se) && se.RetryAfter != tc.after {
				t.Fatalf("RetryAfter %v, want %v", se.RetryAfter, tc.after)
			}
		})
	}
}
