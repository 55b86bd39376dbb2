// Package auth is the authentication domain: logins with throttling, the
// current customer, logout, password reset and account management.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/ratelimit"
)

// Customer is a tenant.
type Customer struct {
	ID        int64
	Name      string
	CreatedAt time.Time
}

// Account is a login identity of a customer.
type Account struct {
	ID                int64
	CustomerID        int64
	Email             string
	Name              string
	Role              string
	PasswordHash      string
	PasswordChangedAt time.Time
	CreatedAt         time.Time
}

// Store is the persistence the domain needs.
type Store interface {
	AccountByEmail(ctx context.Context, email string) (Account, error)
	Account(ctx context.Context, customerID, accountID int64) (Account, Customer, error)
	CustomerExists(ctx context.Context, customerID int64) (bool, error)
	CreatePasswordReset(ctx context.Context, accountID int64, tokenHash []byte, created, expires time.Time) error
	ResetPassword(ctx context.Context, tokenHash []byte, now time.Time, newHash string) (Account, error)
	CreateAccount(ctx context.Context, a Account) (Account, error)
	ListAccounts(ctx context.Context, customerID int64, offset, limit int) ([]Account, int, error)
	Bootstrap(ctx context.Context, customerName string, a Account) (Customer, Account, error)
}

// Events is where the domain announces what mail senders and other services
// must know.
type Events interface {
	PasswordResetRequested(ctx context.Context, customerID int64, a Account, token string, expires time.Time) error
	PasswordChanged(ctx context.Context, customerID, accountID int64) error
}

// Revoker voids tokens.
type Revoker interface {
	RevokeToken(ctx context.Context, jti string, until, now time.Time) error
	RevokeAccountBefore(ctx context.Context, accountID int64, t time.Time) error
}

// Limits throttle failed logins.
type Limits struct {
	ByEmail *ratelimit.Limiter
	ByIP    *ratelimit.Limiter
}

// ResetTTL is how long a password-reset token is valid.
const ResetTTL = 30 * time.Minute

// Password length bounds (characters).
const (
	MinPasswordLen = 10
	MaxPasswordLen = 256
)

// Service implements the use cases.
type Service struct {
	store   Store
	signer  *Signer
	events  Events
	revoker Revoker
	limits  Limits
	log     *slog.Logger
	now     func() time.Time
	// dummyHash makes a login for an unknown e-mail cost the same as one
	// with a wrong password, so timing does not reveal which accounts exist.
	dummyHash string
}

// NewService builds the service.
func NewService(store Store, signer *Signer, events Events, revoker Revoker, limits Limits, log *slog.Logger, now func() time.Time) (*Service, error) {
	dummy, err := HashPassword("not-a-real-password-" + strconv.FormatInt(now().UnixNano(), 10))
	if err != nil {
		return nil, err
	}
	return &Service{store: store, signer: signer, events: events, revoker: revoker, limits: limits, log: log, now: now, dummyHash: dummy}, nil
}

// Signer exposes the key set for the JWKS endpoint.
func (s *Service) Signer() *Signer { return s.signer }

var errBadCredentials = apperr.E(apperr.Unauthorized, "the e-mail address or password is wrong")

// Login checks credentials and issues a token. Failures are throttled per
// e-mail address and per client IP.
func (s *Service) Login(ctx context.Context, email, password, clientIP string) (Token, error) {
	var v apperr.Validation
	email = strings.TrimSpace(email)
	v.Check(email != "", "email", "is required")
	v.Check(password != "", "password", "is required")
	v.Check(utf8.RuneCountInString(email) <= 320, "email", "is too long")
	v.Check(utf8.RuneCountInString(password) <= MaxPasswordLen, "password", "is too long")
	if err := v.Err(); err != nil {
		return Token{}, err
	}
	emailKey := "login:email:" + strings.ToLower(email)
	ipKey := "login:ip:" + clientIP
	for _, c := range []struct {
		l   *ratelimit.Limiter
		key string
	}{{s.limits.ByEmail, emailKey}, {s.limits.ByIP, ipKey}} {
		r, err := c.l.Peek(ctx, c.key)
		if err != nil {
			return Token{}, apperr.Wrap(apperr.Unavailable, err, "login is temporarily unavailable")
		}
		if !r.Allowed {
			return Token{}, &apperr.Error{Code: apperr.RateLimited, Message: "too many failed logins; try again later",
				RetryAfterSeconds: retrySeconds(r.RetryAfter)}
		}
	}
	a, err := s.store.AccountByEmail(ctx, email)
	hash := a.PasswordHash
	if err != nil {
		if !apperr.Is(err, apperr.NotFound) {
			return Token{}, err
		}
		hash = s.dummyHash
	}
	ok, herr := CheckPassword(hash, password)
	if herr != nil {
		return Token{}, apperr.Wrap(apperr.Internal, herr, "")
	}
	if err != nil || !ok {
		for _, c := range []struct {
			l   *ratelimit.Limiter
			key string
		}{{s.limits.ByEmail, emailKey}, {s.limits.ByIP, ipKey}} {
			if _, herr := c.l.Hit(ctx, c.key); herr != nil {
				s.log.WarnContext(ctx, "login throttle count failed", "error", herr.Error())
			}
		}
		return Token{}, errBadCredentials
	}
	if err := s.limits.ByEmail.Reset(ctx, emailKey); err != nil {
		s.log.WarnContext(ctx, "login throttle reset failed", "error", err.Error())
	}
	t, err := s.signer.Sign(a, s.now())
	if err != nil {
		return Token{}, apperr.Wrap(apperr.Internal, err, "")
	}
	return t, nil
}

func retrySeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// Me returns the caller's customer and account.
func (s *Service) Me(ctx context.Context, p authn.Principal) (Customer, Account, error) {
	a, c, err := s.store.Account(ctx, p.CustomerID, p.AccountID)
	if apperr.Is(err, apperr.NotFound) {
		// The token is valid but its account or customer is gone.
		return Customer{}, Account{}, apperr.E(apperr.NotFound, "the customer of this token no longer exists")
	}
	return c, a, err
}

// Logout revokes the presented token until its expiry.
func (s *Service) Logout(ctx context.Context, p authn.Principal) error {
	if err := s.revoker.RevokeToken(ctx, p.TokenID, p.ExpiresAt, s.now()); err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "logout is temporarily unavailable")
	}
	return nil
}

// ForgotPassword issues a reset token when the address belongs to an
// account. The caller learns nothing either way.
func (s *Service) ForgotPassword(ctx context.Context, email string) error {
	email = strings.TrimSpace(email)
	if err := validateEmail(email); err != nil {
		return err
	}
	a, err := s.store.AccountByEmail(ctx, email)
	if apperr.Is(err, apperr.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return apperr.Wrap(apperr.Internal, err, "")
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	now := s.now()
	exp := now.Add(ResetTTL)
	if err := s.store.CreatePasswordReset(ctx, a.ID, hashToken(token), now, exp); err != nil {
		return err
	}
	return s.events.PasswordResetRequested(ctx, a.CustomerID, a, token, exp)
}

// ResetPassword sets a new password with a reset token; the token is spent
// and every access token issued before is refused from then on.
func (s *Service) ResetPassword(ctx context.Context, token, newPassword string) error {
	var v apperr.Validation
	v.Check(strings.TrimSpace(token) != "", "token", "is required")
	checkPassword(&v, "newPassword", newPassword)
	if err := v.Err(); err != nil {
		return err
	}
	hash, err := HashPassword(newPassword)
	if err != nil {
		return apperr.Wrap(apperr.Internal, err, "")
	}
	now := s.now()
	a, err := s.store.ResetPassword(ctx, hashToken(token), now, hash)
	if apperr.Is(err, apperr.NotFound) {
		return &apperr.Error{Code: apperr.Invalid, Message: "the reset token is invalid, used or expired",
			Fields: map[string]string{"token": "is invalid, used or expired"}}
	}
	if err != nil {
		return err
	}
	if err := s.revoker.RevokeAccountBefore(ctx, a.ID, now); err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "the password was changed but old tokens could not be revoked; retry")
	}
	if err := s.events.PasswordChanged(ctx, a.CustomerID, a.ID); err != nil {
		s.log.WarnContext(ctx, "password changed event not published", "error", err.Error())
	}
	return nil
}

// NewAccount is the input of CreateAccount.
type NewAccount struct {
	Email, Name, Role, Password string
}

// CreateAccount adds an account (for example one per integration) to the
// caller's customer. Admins only.
func (s *Service) CreateAccount(ctx context.Context, p authn.Principal, in NewAccount) (Account, error) {
	if p.Role != authn.RoleAdmin {
		return Account{}, apperr.E(apperr.Forbidden, "only admins can create accounts")
	}
	var v apperr.Validation
	in.Email, in.Name = strings.TrimSpace(in.Email), strings.TrimSpace(in.Name)
	if err := validateEmail(in.Email); err != nil {
		v.Add("email", "must be a valid e-mail address")
	}
	v.Check(utf8.RuneCountInString(in.Name) <= 200, "name", "must be at most 200 characters")
	v.Check(in.Role == authn.RoleAdmin || in.Role == authn.RoleAgent || in.Role == authn.RoleIntegration,
		"role", "must be admin, agent or integration")
	checkPassword(&v, "password", in.Password)
	if err := v.Err(); err != nil {
		return Account{}, err
	}
	hash, err := HashPassword(in.Password)
	if err != nil {
		return Account{}, apperr.Wrap(apperr.Internal, err, "")
	}
	return s.store.CreateAccount(ctx, Account{CustomerID: p.CustomerID, Email: in.Email, Name: in.Name, Role: in.Role, PasswordHash: hash})
}

// ListAccounts pages through the caller's customer's accounts. Admins only.
func (s *Service) ListAccounts(ctx context.Context, p authn.Principal, offset, limit int) ([]Account, int, error) {
	if p.Role != authn.RoleAdmin {
		return nil, 0, apperr.E(apperr.Forbidden, "only admins can list accounts")
	}
	return s.store.ListAccounts(ctx, p.CustomerID, offset, limit)
}

// GetAccount returns one account of the caller's customer. Admins only;
// another customer's account is not found.
func (s *Service) GetAccount(ctx context.Context, p authn.Principal, accountID int64) (Account, error) {
	if p.Role != authn.RoleAdmin {
		return Account{}, apperr.E(apperr.Forbidden, "only admins can read accounts")
	}
	a, _, err := s.store.Account(ctx, p.CustomerID, accountID)
	return a, err
}

// CustomerExists answers other services (translation's "customer not found").
func (s *Service) CustomerExists(ctx context.Context, customerID int64) (bool, error) {
	return s.store.CustomerExists(ctx, customerID)
}

// Bootstrap creates or updates a customer with an admin account; used to
// seed a deployment. Idempotent.
func (s *Service) Bootstrap(ctx context.Context, customerName, email, name, password string) (Customer, Account, error) {
	var v apperr.Validation
	v.Check(strings.TrimSpace(customerName) != "", "customer", "is required")
	if err := validateEmail(email); err != nil {
		v.Add("email", "must be a valid e-mail address")
	}
	checkPassword(&v, "password", password)
	if err := v.Err(); err != nil {
		return Customer{}, Account{}, err
	}
	hash, err := HashPassword(password)
	if err != nil {
		return Customer{}, Account{}, err
	}
	c, a, err := s.store.Bootstrap(ctx, strings.TrimSpace(customerName),
		Account{Email: strings.TrimSpace(email), Name: strings.TrimSpace(name), Role: authn.RoleAdmin, PasswordHash: hash})
	if err != nil {
		return c, a, err
	}
	// A re-seeded password voids the tokens issued with the old one.
	if err := s.revoker.RevokeAccountBefore(ctx, a.ID, s.now()); err != nil {
		return c, a, err
	}
	return c, a, nil
}

func validateEmail(email string) error {
	if email == "" {
		return &apperr.Error{Code: apperr.Invalid, Message: "the request has invalid fields", Fields: map[string]string{"email": "is required"}}
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || len(email) > 320 {
		return &apperr.Error{Code: apperr.Invalid, Message: "the request has invalid fields", Fields: map[string]string{"email": "must be a valid e-mail address"}}
	}
	return nil
}

func checkPassword(v *apperr.Validation, field, pw string) {
	n := utf8.RuneCountInString(pw)
	v.Check(n >= MinPasswordLen, field, "must be at least 10 characters")
	v.Check(n <= MaxPasswordLen, field, "must be at most 256 characters")
}

func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
