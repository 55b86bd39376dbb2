package graphfake

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultMaxLifetime is the longest subscription lifetime accepted: Graph's documented maximum for
// Outlook messages when the mail service was written. Later documentation says 10,080 minutes;
// the fake keeps the stricter bound so that code asking for too much fails here first.
const DefaultMaxLifetime = 4230 * time.Minute

// DefaultListPageSize is how many subscriptions one list page carries before an @odata.nextLink.
const DefaultListPageSize = 100

// Options configure a Server. The zero value accepts no client: set ClientID and ClientSecret.
type Options struct {
	// ClientID and ClientSecret are the app's credentials the token endpoint accepts.
	ClientID, ClientSecret string
	// Tenants, when not empty, are the only tenant ids the token endpoint knows; others get Entra's
	// "tenant not found". Empty: every tenant id is known.
	Tenants []string
	// Now is the clock for token and subscription expiry; nil uses time.Now.
	Now func() time.Time
	// HTTPClient makes the validation handshakes and posts notifications; tests pass one that
	// trusts the receiver's certificate. nil uses a client without a timeout (each request has its
	// own deadline). Redirects are never followed.
	HTTPClient *http.Client
	// MaxLifetime bounds expirationDateTime ahead of now; 0 uses DefaultMaxLifetime.
	MaxLifetime time.Duration
	// ListPageSize is the page size of GET /v1.0/subscriptions; 0 uses DefaultListPageSize.
	ListPageSize int
	// NotificationDuplicates is how many times Deliver notifies each subscription of a new mail;
	// 0 uses DefaultNotificationDuplicates.
	NotificationDuplicates int
	// AttachmentPageSize, when positive, pages attachment lists with @odata.nextLink.
	AttachmentPageSize int
	// AllowHTTPNotificationURL accepts http:// notification and lifecycle URLs, which Graph
	// refuses (400): only for a test or dev stack that says so explicitly.
	AllowHTTPNotificationURL bool
	// Log receives the fake's diagnostics (failed handshakes, deliveries); nil discards them.
	Log *slog.Logger
	// RequireConsent makes the client_credentials grant refuse a tenant where no admin consented
	// (identity.go), as Entra does; off, every tenant gets tokens.
	RequireConsent bool
	// RedirectURIs, when not empty, are the only redirect URIs the sign-in and consent pages
	// accept (the app registration's); empty accepts any absolute http(s) URI.
	RedirectURIs []string
	// MailboxLimits are Graph's per app and mailbox limits on mail paths (throttle.go); the zero
	// value enforces Graph's own, as the real service does.
	MailboxLimits MailboxLimits
}

// Subscription is a snapshot of one live subscription.
type Subscription struct {
	ID                       string    `json:"id"`
	TenantID                 string    `json:"tenantId"`
	ApplicationID            string    `json:"applicationId"`
	Resource                 string    `json:"resource"`
	ChangeType               string    `json:"changeType"`
	NotificationURL          string    `json:"notificationUrl"`
	LifecycleNotificationURL string    `json:"lifecycleNotificationUrl,omitempty"`
	ClientState              string    `json:"clientState,omitempty"`
	ExpirationDateTime       time.Time `json:"expirationDateTime"`
	// Mailbox and FolderID are parsed from Resource. UserID is the GUID the fake's notifications
	// name the mailbox by, as Graph names the user rather than the address the creator used.
	Mailbox  string `json:"mailbox"`
	FolderID string `json:"folderId"`
	UserID   string `json:"userId"`
}

// HandshakeMode says how a create treats the validation handshake.
type HandshakeMode int

const (
	// HandshakeValidate posts the validation request and requires the correct echo, as Graph does.
	HandshakeValidate HandshakeMode = iota
	// HandshakeSkip creates without contacting the endpoint, for tests with no receiver.
	HandshakeSkip
	// HandshakeFail answers every create with Graph's ValidationError without contacting the endpoint.
	HandshakeFail
)

// Server is the fake. It is an http.Handler and safe for concurrent use.
type Server struct {
	clientID, clientSecret string
	tenants                map[string]bool
	now                    func() time.Time
	http                   *http.Client
	maxLifetime            time.Duration
	pageSize               int
	log                    *slog.Logger
	mux                    *http.ServeMux

	mu             sync.Mutex
	tokens         map[string]accessToken // by access token
	tokenRequests  map[string]int         // by tenant
	calls          map[string]int         // subscription API calls by method
	subs           map[string]*stored     // by id
	seq            int64
	users          map[string]string // user GUID by tenant and lower-cased mailbox
	faults         []fault
	handshake      HandshakeMode
	createDelay    time.Duration
	notifyOnCreate int
	mail           mailState // mailboxes, delta links, sent mail (mailbox.go)
	id             *identity // the identity platform (identity.go)

	attachmentPageSize int
	allowHTTP          bool
	throttle           *throttleState // mailbox limits (throttle.go)
}

type stored struct {
	Subscription
	renewals int    // successful PATCHes
	seq      int64  // creation order, for stable list pages
	tls      string // latestSupportedTlsVersion
}

type fault struct {
	status     int
	retryAfter string
}

// New returns a fake Graph configured by o.
func New(o Options) *Server {
	s := &Server{
		clientID:      o.ClientID,
		clientSecret:  o.ClientSecret,
		now:           o.Now,
		maxLifetime:   o.MaxLifetime,
		pageSize:      o.ListPageSize,
		log:           o.Log,
		tokens:        map[string]accessToken{},
		tokenRequests: map[string]int{},
		calls:         map[string]int{},
		subs:          map[string]*stored{},
		users:         map[string]string{},
		mail:          newMailState(o.NotificationDuplicates),
		id:            newIdentity(o),

		attachmentPageSize: o.AttachmentPageSize,
		allowHTTP:          o.AllowHTTPNotificationURL,
		throttle:           newThrottleState(o.MailboxLimits),
	}
	if len(o.Tenants) > 0 {
		s.tenants = map[string]bool{}
		for _, t := range o.Tenants {
			s.tenants[strings.ToLower(t)] = true
		}
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxLifetime <= 0 {
		s.maxLifetime = DefaultMaxLifetime
	}
	if s.pageSize <= 0 {
		s.pageSize = DefaultListPageSize
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	// A copy, so that refusing redirects does not change the caller's client.
	hc := http.Client{}
	if o.HTTPClient != nil {
		hc = *o.HTTPClient
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	s.http = &hc
	s.mux = s.routes()
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	done, throttled := s.mailboxGate(w, r)
	if throttled {
		return
	}
	if done != nil {
		defer done()
	}
	s.mux.ServeHTTP(w, r)
}

// Throttle makes the next n API calls (subscriptions and mail) answer 429 with Graph's TooManyRequests body
// and, unless retryAfter is empty, that Retry-After header (Graph sends seconds, e.g. "2.128").
func (s *Server) Throttle(n int, retryAfter string) {
	s.addFaults(n, fault{status: http.StatusTooManyRequests, retryAfter: retryAfter})
}

// FailNext makes the next n API calls (subscriptions and mail) answer status with a Graph error body. Faults
// queue in the order they were added.
func (s *Server) FailNext(n, status int) { s.addFaults(n, fault{status: status}) }

func (s *Server) addFaults(n int, f fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, f)
	}
}

// takeFault pops the next queued fault, if any.
func (s *Server) takeFault() (fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) == 0 {
		return fault{}, false
	}
	f := s.faults[0]
	s.faults = s.faults[1:]
	return f, true
}

// SetHandshake sets how following creates treat the validation handshake.
func (s *Server) SetHandshake(m HandshakeMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handshake = m
}

// SetCreateDelay makes each following create take d more after its validation handshake, as
// Graph's creates can take 20 s and more. The subscription is made whether or not the client
// still waits: a client that gave up leaves an orphan behind, to be found by listing.
func (s *Server) SetCreateDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.createDelay = d
}

// SetNotifyOnCreate makes each following create post n "created" notifications for the new
// subscription before it answers 201. Graph can deliver a notification before its creator has
// stored the new id; this makes that race happen every time.
func (s *Server) SetNotifyOnCreate(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notifyOnCreate = n
}

// Expire removes a subscription as Graph does with one that was not renewed in time. It reports
// whether the subscription existed.
func (s *Server) Expire(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.subs[id]
	delete(s.subs, id)
	return ok
}

// Subscriptions returns the live subscriptions of every tenant in creation order.
func (s *Server) Subscriptions() []Subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	all := make([]*stored, 0, len(s.subs))
	for _, st := range s.subs {
		all = append(all, st)
	}
	slices.SortFunc(all, func(a, b *stored) int { return int(a.seq - b.seq) })
	out := make([]Subscription, len(all))
	for i, st := range all {
		out[i] = st.Subscription
	}
	return out
}

// Renewals returns how many times the subscription id was renewed (successful PATCHes), while
// it is stored.
func (s *Server) Renewals(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.subs[id]; ok {
		return st.renewals
	}
	return 0
}

// Calls returns how many API calls (under /v1.0, subscriptions and mail) used method, including the ones
// answered with an error or a fault.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[strings.ToUpper(method)]
}

// TokenRequests returns how many token requests named tenant, successful or not.
func (s *Server) TokenRequests(tenant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenRequests[tenant]
}

// RevokeTokens invalidates every access token issued for tenant, as a consent change or a
// revocation does: Graph answers 401 until the client gets a new one.
func (s *Server) RevokeTokens(tenant string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.tokens {
		if strings.EqualFold(t.tenant, tenant) {
			delete(s.tokens, k)
		}
	}
}

// pruneLocked drops expired subscriptions; Graph deletes them, so they must not resurface.
func (s *Server) pruneLocked() {
	now := s.now()
	for id, st := range s.subs {
		if !st.ExpirationDateTime.After(now) {
			delete(s.subs, id)
		}
	}
}

// handleFakeCreateDelay serves POST /_fake/createdelay?d=30s (SetCreateDelay; d=0 ends it).
func (s *Server) handleFakeCreateDelay(w http.ResponseWriter, r *http.Request) {
	d, err := time.ParseDuration(r.URL.Query().Get("d"))
	if err != nil || d < 0 || d > 10*time.Minute {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "d must be a duration from 0 to 10m"})
		return
	}
	s.SetCreateDelay(d)
	w.WriteHeader(http.StatusNoContent)
}
