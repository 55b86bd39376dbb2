package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"supportplatform.dev/pkg/httpretry"
)

// Unlike the subscription calls, every mail call (delta, message, attachments, reply, sendMail)
// retries by itself: the import worker makes hundreds of them per folder and Graph sheds load per
// mailbox, so throttling is routine there rather than a signal for the caller.

const (
	// DefaultMailboxConcurrency is Graph's limit of concurrent requests per app and mailbox.
	DefaultMailboxConcurrency = 4
	// DefaultMailRetries is how often a throttled mail call is repeated before it fails.
	DefaultMailRetries = 5
)

// maxMailResponseBytes bounds a mail call's JSON reply: a delta page of many messages or one
// message with a large HTML body is far more than a subscription, yet still bounded.
const maxMailResponseBytes = 16 << 20

// Backoff for a throttled mail call that came without Retry-After.
const (
	mailBackoffBase = time.Second
	mailBackoffMax  = 30 * time.Second
)

// MailboxLimiter bounds the requests per tenant and mailbox (key). Acquire waits, bounded by ctx,
// for a slot and returns the function that gives it back (safe to call more than once); a mail
// call holds its slot from before the request until its reply is read.
type MailboxLimiter interface {
	Acquire(ctx context.Context, key string) (release func(), err error)
}

// mailRequest is one mail call as the retry path sends it.
type mailRequest struct {
	op, method, url string
	// mailbox is the limiter's key (with the tenant), whatever form the URL names it by.
	mailbox string
	// body, when not nil, is sent as JSON.
	body any
	// prefer are preferences besides IdType="ImmutableId", which every call sends.
	prefer []string
	// accept replaces application/json (for $value downloads).
	accept string
}

// mailDo sends rq through the mailbox limiter with mail calls' retries and returns a 2xx response
// whose body the caller reads and closes, then calls release to free the mailbox slot. Errors are
// *Error (Graph's answer after the retries), *TokenError, ErrInvalid, or transport and context
// errors.
func (c *Client) mailDo(ctx context.Context, tenant string, rq mailRequest) (resp *http.Response, release func(), err error) {
	if strings.TrimSpace(rq.mailbox) == "" {
		return nil, nil, fmt.Errorf("graph: %s: %w: no mailbox", rq.op, ErrInvalid)
	}
	tt, err := c.tenantToken(tenant)
	if err != nil {
		return nil, nil, fmt.Errorf("graph: %s: %w", rq.op, err)
	}
	var raw []byte
	if rq.body != nil {
		if raw, err = json.Marshal(rq.body); err != nil {
			return nil, nil, fmt.Errorf("graph: %s: encode request: %w", rq.op, err)
		}
	}
	key := strings.ToLower(tenant) + "\x00" + strings.ToLower(rq.mailbox)
	policy := httpretry.Policy{
		MaxRetries: c.mailRetries,
		BaseDelay:  mailBackoffBase,
		MaxDelay:   mailBackoffMax,
		Sleep:      c.sleep,
		// Context deadlines are wall-clock time, whatever clock the client was given.
		Now: time.Now,
	}
	refreshed := false
	_, err = policy.Run(ctx, func(ctx context.Context) error {
		var aerr error
		resp, release, aerr = c.mailAttempt(ctx, tt, key, rq, raw, &refreshed)
		return mailRetryable(aerr)
	})
	if err != nil {
		return nil, nil, err
	}
	return resp, release, nil
}

// mailAttempt makes one attempt, holding a mailbox slot; a 401 is repeated at once with a new
// token, once per call (refreshed), because Graph refused a token that may have been revoked.
func (c *Client) mailAttempt(ctx context.Context, tt *tenantToken, key string, rq mailRequest, raw []byte, refreshed *bool) (*http.Response, func(), error) {
	release, err := c.mailboxes.Acquire(ctx, key)
	if err != nil {
		return nil, nil, fmt.Errorf("graph: %s: %w", rq.op, err)
	}
	for {
		access, err := tt.token(ctx)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("graph: %s: %w", rq.op, err)
		}
		var rd io.Reader
		if raw != nil {
			rd = bytes.NewReader(raw)
		}
		req, err := http.NewRequestWithContext(ctx, rq.method, rq.url, rd)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("graph: %s: %w", rq.op, err)
		}
		req.Header.Set("Authorization", "Bearer "+access)
		accept := rq.accept
		if accept == "" {
			accept = "application/json"
		}
		req.Header.Set("Accept", accept)
		req.Header.Set("Prefer", strings.Join(append([]string{`IdType="ImmutableId"`}, rq.prefer...), ", "))
		if raw != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("graph: %s: %w", rq.op, err)
		}
		if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
			return resp, release, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			tt.forget(access)
			if !*refreshed {
				*refreshed = true
				continue
			}
		}
		release()
		return nil, nil, newError(rq.op, resp, body, c.now())
	}
}

// mailRetryable marks what the mail path retries: 429 always (after Retry-After, else backoff),
// 503 only when Graph said when to come back. Everything else is the caller's to judge.
func mailRetryable(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	if e.Status == http.StatusTooManyRequests || (e.Status == http.StatusServiceUnavailable && e.HasRetryAfter) {
		return &httpretry.Retry{Err: err, After: e.RetryAfter, Requested: e.HasRetryAfter}
	}
	return err
}

// mailJSON makes a mail call and decodes its JSON reply into out (when not nil).
func (c *Client) mailJSON(ctx context.Context, tenant string, rq mailRequest, out any) error {
	resp, release, err := c.mailDo(ctx, tenant, rq)
	if err != nil {
		return err
	}
	defer release()
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxMailResponseBytes+1))
	if err != nil {
		return fmt.Errorf("graph: %s: read reply: %w", rq.op, err)
	}
	if len(raw) > maxMailResponseBytes {
		return fmt.Errorf("graph: %s: %w (%d bytes)", rq.op, ErrReplyTooLarge, maxMailResponseBytes)
	}
	if out == nil || len(raw) == 0 && resp.StatusCode != http.StatusOK {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("graph: %s: %w (status %d): %w", rq.op, ErrMalformedReply, resp.StatusCode, err)
	}
	return nil
}

// releaseOnClose frees the mailbox slot when the caller closes a streamed body: the download is
// a request in flight until then.
type releaseOnClose struct {
	io.ReadCloser
	release func()
}

func (r *releaseOnClose) Close() error {
	err := r.ReadCloser.Close()
	r.release()
	return err
}
