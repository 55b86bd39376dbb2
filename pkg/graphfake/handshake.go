package graphfake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"
)

// handshakeTimeout is how long Graph waits for a validation answer.
const handshakeTimeout = 10 * time.Second

// maxHandshakeReply bounds how much of a validation answer is read; a correct one is the token.
const maxHandshakeReply = 64 << 10

// handshakeAll validates the notification URL and, when set, the lifecycle notification URL.
func (s *Server) handshakeAll(ctx context.Context, mode HandshakeMode, sub Subscription) *apiError {
	switch mode {
	case HandshakeSkip:
		return nil
	case HandshakeFail:
		return validationError("the fake was told to fail every validation")
	}
	if why := s.validateEndpoint(ctx, sub.NotificationURL); why != "" {
		s.log.Info("graphfake: validation handshake failed", "url", sub.NotificationURL, "reason", why)
		return validationError(why)
	}
	if sub.LifecycleNotificationURL != "" {
		if why := s.validateEndpoint(ctx, sub.LifecycleNotificationURL); why != "" {
			s.log.Info("graphfake: validation handshake failed", "url", sub.LifecycleNotificationURL, "reason", why)
			return validationError("lifecycleNotificationUrl: " + why)
		}
	}
	return nil
}

func validationError(why string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "ValidationError",
		message: "Subscription validation request failed. " + why}
}

// validateEndpoint makes Graph's validation request: POST {url}?validationToken=... with an empty
// text/plain body. The token is opaque text with spaces, colons and a non-ASCII letter, so a
// receiver that echoes it still encoded, trims it, or wraps it in JSON fails here as with Graph.
// It returns why the endpoint failed, in the words of Graph's error message, or "".
func (s *Server) validateEndpoint(ctx context.Context, endpoint string) string {
	token := fmt.Sprintf("Validation: Testing client application reachability for subscription Request-Id: %s ü", newGUID())
	u, err := url.Parse(endpoint)
	if err != nil {
		return "Invalid notification URL: " + err.Error()
	}
	// Appended rather than re-encoded, so that the receiver's own query stays as it wrote it.
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += "validationToken=" + url.QueryEscape(token)

	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), http.NoBody)
	if err != nil {
		return "Invalid notification URL: " + err.Error()
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := s.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "Subscription validation request timeout."
		}
		return "Notification endpoint could not be reached: " + err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHandshakeReply))
	if err != nil {
		return "Reading the validation response failed: " + err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("Notification endpoint must respond with 200 OK to validation request; it answered %d.", resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/plain" {
		return fmt.Sprintf("Response must be text/plain; it was %q.", resp.Header.Get("Content-Type"))
	}
	if string(body) != token {
		return fmt.Sprintf("Response must exactly match validationToken query parameter; expected %q, got %q.", token, truncate(string(body), 200))
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
