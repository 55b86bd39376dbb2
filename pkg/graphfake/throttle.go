package graphfake

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Graph's limits per app and mailbox on Outlook resources (mail, mail folders, attachments,
// sendMail), whichever process of the app sends the requests.
const (
	// DefaultMailboxConcurrency: a fifth concurrent request is answered 429 MailboxConcurrency.
	DefaultMailboxConcurrency = 4
	// DefaultMailboxBudget requests per DefaultMailboxWindow; beyond, 429 ApplicationThrottled.
	DefaultMailboxBudget = 10000
	DefaultMailboxWindow = 10 * time.Minute
	// DefaultMailboxRetryAfter is the Retry-After of both answers.
	DefaultMailboxRetryAfter = time.Second
)

// MailboxLimits configure the fake's throttling of mailbox paths. The zero value is Graph's
// limits, on.
type MailboxLimits struct {
	// Off turns the throttling off.
	Off bool
	// Concurrency is how many requests per app and mailbox may be in flight; 0 uses
	// DefaultMailboxConcurrency.
	Concurrency int
	// Budget is how many requests per app and mailbox one Window takes (the window starts with
	// its first request); 0 uses DefaultMailboxBudget and DefaultMailboxWindow.
	Budget int
	Window time.Duration
	// RetryAfter is sent with both 429s (in seconds, fractional as Graph may send them); 0 uses
	// DefaultMailboxRetryAfter.
	RetryAfter time.Duration
}

func (l MailboxLimits) withDefaults() MailboxLimits {
	if l.Concurrency <= 0 {
		l.Concurrency = DefaultMailboxConcurrency
	}
	if l.Budget <= 0 {
		l.Budget = DefaultMailboxBudget
	}
	if l.Window <= 0 {
		l.Window = DefaultMailboxWindow
	}
	if l.RetryAfter <= 0 {
		l.RetryAfter = DefaultMailboxRetryAfter
	}
	return l
}

// MailboxThrottling counts the 429s the mailbox limits answered.
type MailboxThrottling struct {
	Concurrency, Budget int
}

type mailboxUseKey struct {
	app string
	box *mailbox
}

type mailboxUse struct {
	inFlight    int
	windowStart time.Time
	count       int
}

// throttleState is the fake's mailbox throttling (Server.throttle); guarded by Server.mu.
type throttleState struct {
	limits    MailboxLimits
	use       map[mailboxUseKey]*mailboxUse
	throttled MailboxThrottling
}

func newThrottleState(l MailboxLimits) *throttleState {
	return &throttleState{limits: l.withDefaults(), use: map[mailboxUseKey]*mailboxUse{}}
}

// SetMailboxLimits replaces the mailbox limits (and forgets the windows so far).
func (s *Server) SetMailboxLimits(l MailboxLimits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = newThrottleState(l)
}

// MailboxThrottled returns how many requests the mailbox limits answered 429, by limit.
func (s *Server) MailboxThrottled() MailboxThrottling {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.throttle.throttled
}

// mailboxPath reports the user segment of a path to an Outlook resource of a mailbox:
// /v1.0/users/{mb}/messages..., /mailFolders..., /sendMail.
func mailboxPath(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/v1.0/users/")
	if !ok {
		return "", false
	}
	mb, rest, ok := strings.Cut(rest, "/")
	if !ok || mb == "" {
		return "", false
	}
	first, _, _ := strings.Cut(rest, "/")
	switch strings.ToLower(first) {
	case "messages", "mailfolders", "sendmail":
		return mb, true
	}
	return "", false
}

// mailboxGate applies the mailbox limits to an authenticated request for a mailbox path, as Graph
// does before serving it. It answers the 429 itself (throttled true), or returns the function
// that ends the request's turn in flight (nil when the limits do not apply: another path, a
// token the endpoint refuses, an unknown user, throttling off).
func (s *Server) mailboxGate(w http.ResponseWriter, r *http.Request) (done func(), throttled bool) {
	user, ok := mailboxPath(r.URL.Path)
	if !ok {
		return nil, false
	}
	scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.throttle
	tok, ok := s.tokens[strings.TrimSpace(raw)]
	if st.limits.Off || !ok || !tok.expires.After(s.now()) {
		return nil, false
	}
	box, ok := s.resolveMailboxLocked(tok.tenant, user)
	if !ok {
		return nil, false
	}
	key := mailboxUseKey{app: tok.appID, box: box}
	u := st.use[key]
	if u == nil {
		u = &mailboxUse{}
		st.use[key] = u
	}
	now := s.now()
	if u.windowStart.IsZero() || !now.Before(u.windowStart.Add(st.limits.Window)) {
		u.windowStart, u.count = now, 0
	}
	code, msg := "", ""
	switch {
	case u.inFlight >= st.limits.Concurrency:
		st.throttled.Concurrency++
		code, msg = "MailboxConcurrency", "Application is over its MailboxConcurrency limit."
	case u.count >= st.limits.Budget:
		st.throttled.Budget++
		code, msg = "ApplicationThrottled", "Application is over its request limit for this mailbox."
	}
	if code != "" {
		s.calls[r.Method]++
		setRequestID(w, r)
		w.Header().Set("Retry-After", strconv.FormatFloat(st.limits.RetryAfter.Seconds(), 'f', -1, 64))
		writeError(w, http.StatusTooManyRequests, code, msg)
		return nil, true
	}
	u.inFlight++
	u.count++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		u.inFlight--
	}, false
}
