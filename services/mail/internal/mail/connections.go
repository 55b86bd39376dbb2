package mail

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
)

// Connection statuses.
const (
	ConnectionPending    = "pending"    // started; the Microsoft admin has not signed in yet
	ConnectionConsenting = "consenting" // signed in (TenantID verified); admin consent asked
	ConnectionConnected  = "connected"  // consent given: the tenant is the customer's
	ConnectionFailed     = "failed"     // the attempt ended (LastError); nothing was connected
)

// Phases of a connection state.
const (
	PhaseSignIn  = "signin"
	PhaseConsent = "consent"
)

// DefaultStateLifetime is how long a connection's state is accepted back.
const DefaultStateLifetime = 10 * time.Minute

// Bounds of the callback's query parameters (characters): Microsoft's
// codes are a few hundred to about two thousand characters, states ours.
const (
	maxStateLen       = 100
	maxCodeLen        = 4096
	maxErrorParamLen  = 100
	maxErrorDescLen   = 2000
	maxTenantParamLen = 100
	maxScopeLen       = 1000
	maxLoginHintLen   = 320
)

// ErrSignInRefused marks a sign-in the identity platform refused or whose
// id_token failed verification: the callback's 400.
var ErrSignInRefused = errors.New("the Microsoft 365 sign-in was refused")

// Connection is a customer's Microsoft 365 tenant connection (or an
// attempt at one).
type Connection struct {
	ID          int64
	CustomerID  int64
	Provider    string
	Status      string
	TenantID    string // the verified Entra tenant GUID; "" before the sign-in
	SignedInAs  string
	StartedBy   int64
	LastError   string
	CreatedAt   time.Time
	ConnectedAt *time.Time
}

// StartedConnection is a new connection with where to send the browser.
type StartedConnection struct {
	Connection
	AuthorizationURL string
}

// ConnectionState is a stored state taken back by the callback.
type ConnectionState struct {
	CustomerID, ConnectionID, AccountID int64
	Phase                               string
	CodeVerifier, Nonce, TenantID       string
}

// NewConnectionState is a state to store (by its hash).
type NewConnectionState struct {
	Hash []byte
	ConnectionState
	ExpiresAt time.Time
}

// SignedIn is the verified identity of the Microsoft admin.
type SignedIn struct {
	TenantID string // lower-case GUID
	Username string
}

// ConnectionStore keeps connections and their states. Every method taking
// a customer is scoped to it.
type ConnectionStore interface {
	// StartConnection adds a pending connection with its sign-in state.
	StartConnection(ctx context.Context, customerID, accountID int64, st NewConnectionState) (Connection, error)
	ListConnections(ctx context.Context, customerID int64, p paging.Page) ([]Connection, int, error)
	Connection(ctx context.Context, customerID, id int64) (Connection, error)
	// DeleteConnection removes a connection; Conflict while live
	// microsoft365 channels of the customer name its tenant.
	DeleteConnection(ctx context.Context, customerID, id int64) error
	// TakeState deletes and returns the unexpired state with the hash;
	// NotFound when there is none (unknown, used or expired).
	TakeState(ctx context.Context, hash []byte, now time.Time) (ConnectionState, error)
	// SignedIn records the verified tenant on a pending connection
	// (consenting) and stores the consent state. Conflict when the tenant
	// is connected (to another customer, or already to this one).
	SignedIn(ctx context.Context, st ConnectionState, who SignedIn, next NewConnectionState) error
	// Connect marks a consenting connection connected; Conflict when the
	// tenant was connected by another customer meanwhile.
	Connect(ctx context.Context, st ConnectionState, now time.Time) (Connection, error)
	// FailConnection ends an attempt that is not connected with reason.
	FailConnection(ctx context.Context, customerID, connectionID int64, reason string) error
}

// IdentityPlatform is the Microsoft identity platform as the connection
// flow uses it (package entra).
type IdentityPlatform interface {
	AuthorizeURL(state, nonce, codeChallenge, loginHint string) string
	ConsentURL(tenantID, state string) string
	// Redeem exchanges the code and verifies the id_token (nonce included).
	Redeem(ctx context.Context, code, codeVerifier, nonce string) (SignedIn, error)
}

// ConnectionService is the connection use cases.
type ConnectionService struct {
	store    ConnectionStore
	identity IdentityPlatform // nil: no app configured
	lifetime time.Duration
	now      func() time.Time
	log      *slog.Logger
}

// NewConnectionService returns the connection flow; identity nil refuses
// to start connections (no app configured). lifetime 0 uses
// DefaultStateLifetime.
func NewConnectionService(store ConnectionStore, identity IdentityPlatform, lifetime time.Duration, now func() time.Time, log *slog.Logger) *ConnectionService {
	if lifetime <= 0 {
		lifetime = DefaultStateLifetime
	}
	return &ConnectionService{store: store, identity: identity, lifetime: lifetime, now: now, log: log}
}

// ConnectionInput starts a connection.
type ConnectionInput struct {
	Provider  string
	LoginHint string
}

// random returns n random bytes, base64url without padding.
func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// StateHash is the stored form of a state.
func StateHash(state string) []byte {
	h := sha256.Sum256([]byte(state))
	return h[:]
}

// StartConnection begins connecting a Microsoft 365 tenant for the
// customer: a pending connection and the URL to send the browser to.
func (s *ConnectionService) StartConnection(ctx context.Context, customerID, accountID int64, in ConnectionInput) (StartedConnection, error) {
	var v apperr.Validation
	in.Provider = strings.ToLower(strings.TrimSpace(in.Provider))
	if in.Provider == "" {
		in.Provider = ProviderMicrosoft365
	}
	if in.Provider != ProviderMicrosoft365 {
		v.Add("provider", "must be microsoft365")
	}
	in.LoginHint = strings.TrimSpace(in.LoginHint)
	if len(in.LoginHint) > maxLoginHintLen || strings.ContainsAny(in.LoginHint, "\r\n\t ") {
		v.Add("loginHint", fmt.Sprintf("must be one account name of at most %d characters", maxLoginHintLen))
	}
	if !v.Empty() {
		return StartedConnection{}, v.Err()
	}
	if s.identity == nil {
		return StartedConnection{}, apperr.E(apperr.Unavailable, "no Microsoft 365 app is configured on this platform (GRAPH_CLIENT_ID, GRAPH_CLIENT_SECRET)")
	}
	// 256-bit state, 256-bit PKCE verifier (43 characters), 128-bit nonce.
	state, verifier, nonce := random(32), random(32), random(16)
	challenge := sha256.Sum256([]byte(verifier))
	c, err := s.store.StartConnection(ctx, customerID, accountID, NewConnectionState{Hash: StateHash(state),
		ConnectionState: ConnectionState{CustomerID: customerID, AccountID: accountID, Phase: PhaseSignIn,
			CodeVerifier: verifier, Nonce: nonce},
		ExpiresAt: s.now().Add(s.lifetime)})
	if err != nil {
		return StartedConnection{}, err
	}
	return StartedConnection{Connection: c,
		AuthorizationURL: s.identity.AuthorizeURL(state, nonce, base64.RawURLEncoding.EncodeToString(challenge[:]), in.LoginHint)}, nil
}

// ListConnections pages through the customer's connections.
func (s *ConnectionService) ListConnections(ctx context.Context, customerID int64, p paging.Page) ([]Connection, int, error) {
	return s.store.ListConnections(ctx, customerID, p)
}

// Connection returns one of the customer's connections.
func (s *ConnectionService) Connection(ctx context.Context, customerID, id int64) (Connection, error) {
	return s.store.Connection(ctx, customerID, id)
}

// DeleteConnection disconnects (or drops an attempt).
func (s *ConnectionService) DeleteConnection(ctx context.Context, customerID, id int64) error {
	return s.store.DeleteConnection(ctx, customerID, id)
}

// CallbackInput is the redirect's query: the sign-in's answer (code,
// state, or error, error_description) or the consent's (tenant,
// admin_consent, scope, state, or error, error_description).
type CallbackInput struct {
	Code, State, Error, ErrorDescription string
	Tenant, AdminConsent, Scope          string
}

// Validate bounds every parameter.
func (in CallbackInput) Validate() error {
	var v apperr.Validation
	for _, p := range []struct {
		name, val string
		max       int
	}{{"state", in.State, maxStateLen}, {"code", in.Code, maxCodeLen}, {"error", in.Error, maxErrorParamLen},
		{"error_description", in.ErrorDescription, maxErrorDescLen}, {"tenant", in.Tenant, maxTenantParamLen},
		{"admin_consent", in.AdminConsent, 10}, {"scope", in.Scope, maxScopeLen}} {
		if len(p.val) > p.max {
			v.Add(p.name, fmt.Sprintf("must be at most %d characters", p.max))
		}
	}
	if in.State == "" {
		v.Add("state", "is required")
	}
	if !v.Empty() {
		return v.Err()
	}
	return nil
}

// CallbackResult is where the callback ends: a redirect (to admin consent)
// or the connected connection. ConnectionID is the attempt's connection
// once the state is known, beside an error too (the attempt has failed),
// so that a browser can be shown which one.
type CallbackResult struct {
	Redirect     string
	Connection   *Connection
	ConnectionID int64
}

// Callback takes Microsoft's answer. The state is taken (single use)
// first; whatever fails after that ends the attempt (failed) without
// connecting anything.
func (s *ConnectionService) Callback(ctx context.Context, in CallbackInput) (CallbackResult, error) {
	if err := in.Validate(); err != nil {
		return CallbackResult{}, err
	}
	if s.identity == nil {
		return CallbackResult{}, apperr.E(apperr.Unavailable, "no Microsoft 365 app is configured on this platform")
	}
	st, err := s.store.TakeState(ctx, StateHash(in.State), s.now())
	if apperr.CodeOf(err) == apperr.NotFound {
		return CallbackResult{}, apperr.Field("state", "is unknown, used or expired; start the connection again",
			"this connection attempt is unknown, was already answered or has expired")
	}
	if err != nil {
		return CallbackResult{}, err
	}
	res, err := s.answer(ctx, st, in)
	if err != nil {
		reason := err.Error()
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Code != apperr.Internal {
			reason = ae.Message
		}
		if ferr := s.store.FailConnection(ctx, st.CustomerID, st.ConnectionID, clipText(reason, 1000)); ferr != nil {
			s.log.WarnContext(ctx, "connection attempt not marked failed", "connectionID", st.ConnectionID, "error", ferr.Error())
		}
	}
	res.ConnectionID = st.ConnectionID
	return res, err
}

func (s *ConnectionService) answer(ctx context.Context, st ConnectionState, in CallbackInput) (CallbackResult, error) {
	if in.Error != "" {
		what := "sign-in"
		if st.Phase == PhaseConsent {
			what = "admin consent"
		}
		return CallbackResult{}, apperr.E(apperr.Invalid, "the Microsoft 365 %s was not completed: %s: %s",
			what, in.Error, clipText(in.ErrorDescription, 500))
	}
	switch st.Phase {
	case PhaseSignIn:
		if in.Code == "" {
			return CallbackResult{}, apperr.Field("code", "is required in the sign-in's answer", "the sign-in answer has no code")
		}
		who, err := s.identity.Redeem(ctx, in.Code, st.CodeVerifier, st.Nonce)
		if errors.Is(err, ErrSignInRefused) {
			return CallbackResult{}, apperr.Wrap(apperr.Invalid, err, "%s", err.Error())
		}
		if err != nil {
			return CallbackResult{}, apperr.Wrap(apperr.Unavailable, err, "the Microsoft identity platform could not be reached; start the connection again")
		}
		state := random(32)
		next := NewConnectionState{Hash: StateHash(state), ConnectionState: ConnectionState{CustomerID: st.CustomerID,
			ConnectionID: st.ConnectionID, AccountID: st.AccountID, Phase: PhaseConsent, TenantID: who.TenantID},
			ExpiresAt: s.now().Add(s.lifetime)}
		if err := s.store.SignedIn(ctx, st, who, next); err != nil {
			return CallbackResult{}, err
		}
		return CallbackResult{Redirect: s.identity.ConsentURL(who.TenantID, state)}, nil
	case PhaseConsent:
		if !strings.EqualFold(in.AdminConsent, "True") {
			return CallbackResult{}, apperr.Field("admin_consent", "must be True", "admin consent was not given")
		}
		if !strings.EqualFold(strings.TrimSpace(in.Tenant), st.TenantID) {
			return CallbackResult{}, apperr.Field("tenant", "is not the tenant the Microsoft admin signed in to",
				"the consent answer names another tenant than the verified sign-in")
		}
		c, err := s.store.Connect(ctx, st, s.now())
		if err != nil {
			return CallbackResult{}, err
		}
		return CallbackResult{Connection: &c}, nil
	}
	return CallbackResult{}, apperr.E(apperr.Internal, "unknown state phase %q", st.Phase)
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
