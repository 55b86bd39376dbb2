// Package auth is the authentication domain: logins with throttling, the
// current customer, logout, password reset and account management.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
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
	// Available says whether the account's person takes tickets now; the
	// account sets it itself.
	Available bool
	// Language is the ISO 639-1 language of the account's mail; empty:
	// English.
	Language string
}

// Store is the persistence the domain needs. It writes the domain's events
// (pkg/outbox) in the transaction of the change they announce.
type Store interface {
	AccountByEmail(ctx context.Context, email string) (Account, error)
	// Account is an enabled account of a live customer, with that customer,
	// without its password (PasswordHash and PasswordChangedAt are zero):
	// the callers show or check the account, none logs in with it.
	Account(ctx context.Context, customerID, accountID int64) (Account, Customer, error)
	CustomerExists(ctx context.Context, customerID int64) (bool, error)
	// RequestPasswordReset stores r and its password-reset-requested event
	// when email belongs to an enabled account of a live customer. It runs
	// the same statements and returns nil when it does not, so neither the
	// answer nor its timing tells whether the address exists.
	RequestPasswordReset(ctx context.Context, email string, r PasswordReset) error
	// ResetPassword spends a valid reset token, sets the password and
	// records the password-changed event, in one transaction.
	ResetPassword(ctx context.Context, tokenHash []byte, now time.Time, newHash string) (Account, error)
	CreateAccount(ctx context.Context, a Account) (Account, error)
	ListAccounts(ctx context.Context, customerID int64, offset, limit int) ([]Account, int, error)
	// SetAvailability sets an enabled account's availability; not found
	// when the account is not the customer's or is disabled.
	SetAvailability(ctx context.Context, customerID, accountID int64, available bool, now time.Time) error
	// DisableAccount disables an enabled account of the customer (it can
	// no longer log in, is listed nowhere and takes no tickets); not found
	// when the account is not the customer's or is disabled already.
	DisableAccount(ctx context.Context, customerID, accountID int64, now time.Time) error
	// AccountsOf returns enabled accounts of a live customer by id, or with
	// no ids every admin and agent account, ordered by id.
	AccountsOf(ctx context.Context, customerID int64, accountIDs []int64) ([]Account, error)
	Bootstrap(ctx context.Context, customerName string, a Account) (Customer, Account, error)
}

// PasswordReset is a requested reset: the raw token goes to the account's
// owner only in the mailed Link (queued with the reset, cleared from the
// queue once the mail is settled); the reset itself keeps the token's hash.
type PasswordReset struct {
	TokenHash []byte
	Link      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Mailer is told when a mail was queued, so it is sent without waiting for
// the next poll.
type Mailer interface {
	Wake()
}

// Revoker voids tokens.
type Revoker interface {
	RevokeToken(ctx context.Context, jti string, until, now time.Time) error
	RevokeAccountBefore(ctx context.Context, accountID int64, t time.Time) error
}

// Limits are the Redis counters that throttle logins and account creation.
type Limits struct {
	LoginByEmailIP *ratelimit.Attempts // failed logins per (e-mail address, client IP)
	LoginByIP      *ratelimit.Attempts // failed logins per client IP
	// LoginBackoff slows the logins of one address from every IP down
	// after a few attempts, never stopping them.
	LoginBackoff  *ratelimit.Backoff
	CreateAccount *ratelimit.Limiter // account creations per customer
	ResetByEmail  *ratelimit.Limiter // password-reset requests per e-mail address, known or not
}

// ResetTTL is how long a password-reset token is valid.
const ResetTTL = 30 * time.Minute

// Password length bounds (characters).
const (
	MinPasswordLen = 10
	MaxPasswordLen = 256
)

// Text bounds (characters).
const (
	maxEmailLen = 320
	maxNameLen  = 200
	maxTokenLen = 256
)

// Deps are what the service is built from.
type Deps struct {
	Store   Store
	Signer  *Signer
	Revoker Revoker
	Limits  Limits
	Log     *slog.Logger
	Now     func() time.Time
	// CheckPassword verifies a password against its stored hash; nil means
	// the package's CheckPassword (tests count the calls).
	CheckPassword func(hash, password string) (bool, error)
	// ResetURL is the page of the reset link; the mail links to it with
	// "#token=<token>" appended (a fragment never reaches a server's logs
	// or a Referer header).
	ResetURL string
	// Mailer, when set, is woken after a mail was queued.
	Mailer Mailer
}

// Service implements the use cases.
type Service struct {
	store         Store
	signer        *Signer
	revoker       Revoker
	limits        Limits
	log           *slog.Logger
	now           func() time.Time
	checkPassword func(hash, password string) (bool, error)
	resetURL      string
	mailer        Mailer
	// dummyHash makes a login for an unknown e-mail cost the same as one
	// with a wrong password, so timing does not reveal which accounts exist.
	dummyHash string
}

// NewService builds the service.
func NewService(d Deps) (*Service, error) {
	if d.Store == nil || d.Signer == nil || d.Revoker == nil || d.Log == nil || d.Now == nil ||
		d.Limits.LoginByEmailIP == nil || d.Limits.LoginByIP == nil || d.Limits.LoginBackoff == nil || d.Limits.CreateAccount == nil || d.Limits.ResetByEmail == nil {
		return nil, errors.New("auth: NewService needs every dependency")
	}
	dummy, err := HashPassword("not-a-real-password-" + strconv.FormatInt(d.Now().UnixNano(), 10))
	if err != nil {
		return nil, err
	}
	check := d.CheckPassword
	if check == nil {
		check = CheckPassword
	}
	return &Service{store: d.Store, signer: d.Signer, revoker: d.Revoker, limits: d.Limits, log: d.Log, now: d.Now,
		checkPassword: check, resetURL: d.ResetURL, mailer: d.Mailer, dummyHash: dummy}, nil
}

// Signer exposes the key set for the JWKS endpoint.
func (s *Service) Signer() *Signer { return s.signer }

var errBadCredentials = apperr.E(apperr.Unauthorized, "the e-mail address or password is wrong")

// Login checks credentials and issues a token. Failed logins are throttled
// three ways, so that guessing is slow but nobody is locked out of their
// own account by someone else's guesses:
//
//   - per (e-mail address, client IP) (ratelimit.Attempts): a client that
//     got an address's password wrong too often gets 429 for that address;
//     the owner signing in from another IP is not affected;
//   - per client IP (ratelimit.Attempts), across addresses;
//   - per address from every IP (ratelimit.Backoff): after a few attempts
//     each further one waits a delay that doubles up to a maximum, so
//     guesses spread over many IPs are slowed down too, while whoever waits
//     out the delay (Retry-After) gets an attempt: a slowdown, never a
//     lockout.
//
// Each attempt is begun on every counter before the password is looked
// at, and the attempts under way count against the limits, so parallel
// attempts cannot all pass a limit that only a few had room under, and an
// attempt over a limit costs no password hashing. A wrong password counts
// as a failure; the right one clears the address's counters; an attempt
// that could not be decided (the database is down) counts on none. An
// outcome that could not reach Redis (it went down meanwhile) is recorded
// before the next login begins, so an outage locks nobody out.
func (s *Service) Login(ctx context.Context, email, password, clientIP string) (Token, error) {
	var v apperr.Validation
	email = strings.TrimSpace(email)
	v.Check(email != "", "email", "is required")
	checkText(&v, "email", email, maxEmailLen)
	v.Check(password != "", "password", "is required")
	v.Check(utf8.RuneCountInString(password) <= MaxPasswordLen, "password", "is too long")
	if err := v.Err(); err != nil {
		return Token{}, err
	}
	att, err := s.beginLogin(ctx, strings.ToLower(email), clientIP)
	if err != nil {
		return Token{}, err
	}
	a, err := s.store.AccountByEmail(ctx, email)
	hash := a.PasswordHash
	if err != nil {
		if !apperr.Is(err, apperr.NotFound) {
			// Not a failed login but none at all (the database is
			// down): the attempt must not count, or an outage would lock
			// every address that kept trying out once it is over.
			s.endLogin(ctx, att, loginUndecided)
			return Token{}, err
		}
		hash = s.dummyHash
	}
	ok, herr := s.checkPassword(hash, password)
	if herr != nil {
		s.endLogin(ctx, att, loginUndecided)
		return Token{}, apperr.Wrap(apperr.Internal, herr, "")
	}
	if err != nil || !ok {
		s.endLogin(ctx, att, loginFailed)
		return Token{}, errBadCredentials
	}
	s.endLogin(ctx, att, loginSucceeded)
	t, err := s.signer.Sign(a, s.now())
	if err != nil {
		return Token{}, apperr.Wrap(apperr.Internal, err, "")
	}
	return t, nil
}

// LoginPending is how long a login attempt whose end was never recorded
// (Redis went down before it) counts against the limits: far longer than a
// login takes.
const LoginPending = 20 * time.Second

// loginAttempt is a login begun on the counters.
type loginAttempt struct {
	pair, ip   ratelimit.Attempt
	backoffKey string // set once the address's backoff counted the attempt
}

type loginOutcome int

const (
	loginUndecided loginOutcome = iota
	loginFailed
	loginSucceeded
)

// loginKey names a counter by a hash of its parts: the keys have one size
// whatever the client sends (addresses are up to 320 characters), and
// Redis holds no addresses in clear.
func loginKey(kind string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "login:" + kind + ":" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18])
}

// beginLogin begins the attempt on the (address, IP) and IP counters and
// then on the address's backoff, and refuses it when any of them does,
// with the longest wait. The backoff comes last, so an attempt refused by
// the others takes no turn from the address.
func (s *Service) beginLogin(ctx context.Context, email, ip string) (loginAttempt, error) {
	var att loginAttempt
	var wait time.Duration
	unavailable := func(err error) (loginAttempt, error) {
		s.endLogin(ctx, att, loginUndecided)
		return loginAttempt{}, apperr.Wrap(apperr.Unavailable, err, "login is temporarily unavailable")
	}
	for _, c := range []struct {
		l   *ratelimit.Attempts
		key string
		at  *ratelimit.Attempt
	}{{s.limits.LoginByEmailIP, loginKey("pair", email, ip), &att.pair}, {s.limits.LoginByIP, "login:ip:" + ip, &att.ip}} {
		at, r, err := c.l.Begin(ctx, c.key)
		if err != nil {
			return unavailable(err)
		}
		*c.at = at
		if !r.Allowed && r.RetryAfter > wait {
			wait = r.RetryAfter
		}
	}
	if wait == 0 {
		key := loginKey("address", email)
		r, err := s.limits.LoginBackoff.Begin(ctx, key, s.now())
		if err != nil {
			return unavailable(err)
		}
		if r.Allowed {
			att.backoffKey = key
		} else {
			wait = r.RetryAfter
		}
	}
	if wait > 0 {
		s.endLogin(ctx, att, loginUndecided)
		return loginAttempt{}, &apperr.Error{Code: apperr.RateLimited, Message: "too many failed logins; try again later",
			RetryAfterSeconds: retrySeconds(wait)}
	}
	return att, nil
}

// endLogin records the attempt's outcome on the counters. What Redis does
// not take (it went down meanwhile) is recorded before the next login of
// this process begins; an attempt of a process that died expires after
// LoginPending.
func (s *Service) endLogin(ctx context.Context, att loginAttempt, o loginOutcome) {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	l := s.limits
	switch o {
	case loginFailed:
		// The backoff counted the attempt when it began.
		errs = append(errs, l.LoginByEmailIP.Failed(ctx, att.pair), l.LoginByIP.Failed(ctx, att.ip))
	case loginSucceeded:
		errs = append(errs, l.LoginByEmailIP.Clear(ctx, att.pair), l.LoginByIP.Done(ctx, att.ip))
		if att.backoffKey != "" {
			errs = append(errs, l.LoginBackoff.Clear(ctx, att.backoffKey))
		}
	default:
		errs = append(errs, l.LoginByEmailIP.Done(ctx, att.pair), l.LoginByIP.Done(ctx, att.ip))
		if att.backoffKey != "" {
			errs = append(errs, l.LoginBackoff.Undo(ctx, att.backoffKey))
		}
	}
	if err := errors.Join(errs...); err != nil {
		s.log.WarnContext(ctx, "login throttle: the attempt's outcome is recorded later", "error", err.Error())
	}
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
// account. The caller learns nothing either way: the token is made and
// hashed and the store runs the same statements whether or not the address
// exists, and the event goes out through the outbox, so a NATS outage does
// not turn the known addresses' answers into errors.
func (s *Service) ForgotPassword(ctx context.Context, email string) error {
	var v apperr.Validation
	email = strings.TrimSpace(email)
	checkEmail(&v, "email", email)
	if err := v.Err(); err != nil {
		return err
	}
	// Counted per address whether or not it belongs to an account, so the
	// limit says nothing about which addresses exist; it keeps one caller
	// from flooding a mailbox with reset mails.
	r, err := s.limits.ResetByEmail.Hit(ctx, "reset:email:"+strings.ToLower(email))
	if err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "password reset is temporarily unavailable")
	}
	if !r.Allowed {
		return &apperr.Error{Code: apperr.RateLimited, Message: "too many password resets requested for this address; try again later",
			RetryAfterSeconds: retrySeconds(r.RetryAfter)}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return apperr.Wrap(apperr.Internal, err, "")
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	now := s.now()
	err = s.store.RequestPasswordReset(ctx, email, PasswordReset{TokenHash: hashToken(token),
		Link: s.resetURL + "#token=" + token, CreatedAt: now, ExpiresAt: now.Add(ResetTTL)})
	if err != nil {
		return err
	}
	// Woken for unknown addresses too: the wake-up is asynchronous and
	// costs the same either way.
	s.wakeMailer()
	return nil
}

func (s *Service) wakeMailer() {
	if s.mailer != nil {
		s.mailer.Wake()
	}
}

// ResetPassword sets a new password with a reset token; the token is spent
// and every access token issued before is refused from then on.
func (s *Service) ResetPassword(ctx context.Context, token, newPassword string) error {
	var v apperr.Validation
	v.Check(strings.TrimSpace(token) != "", "token", "is required")
	checkText(&v, "token", token, maxTokenLen)
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
		return apperr.Field("token", "is invalid, used or expired", "the reset token is invalid, used or expired")
	}
	if err != nil {
		return err
	}
	s.wakeMailer()
	if err := s.revoker.RevokeAccountBefore(ctx, a.ID, now); err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "the password was changed but old tokens could not be revoked; retry")
	}
	return nil
}

// NewAccount is the input of CreateAccount.
type NewAccount struct {
	Email, Name, Role, Password string
	Language                    string // optional, ISO 639-1
}

// CreateAccount adds an account (for example one per integration) to the
// caller's customer. Admins only. E-mail addresses are global login
// identities, so an address taken by any customer is refused with the same
// answer, and creations are counted per customer so the answers cannot be
// used to probe many addresses.
func (s *Service) CreateAccount(ctx context.Context, p authn.Principal, in NewAccount) (Account, error) {
	if p.Role != authn.RoleAdmin {
		return Account{}, apperr.E(apperr.Forbidden, "only admins can create accounts")
	}
	var v apperr.Validation
	in.Email, in.Name = strings.TrimSpace(in.Email), strings.TrimSpace(in.Name)
	checkEmail(&v, "email", in.Email)
	checkText(&v, "name", in.Name, maxNameLen)
	v.Check(in.Role == authn.RoleAdmin || in.Role == authn.RoleAgent || in.Role == authn.RoleIntegration,
		"role", "must be admin, agent or integration")
	checkPassword(&v, "password", in.Password)
	in.Language = checkLanguage(&v, "language", in.Language)
	if err := v.Err(); err != nil {
		return Account{}, err
	}
	r, err := s.limits.CreateAccount.Hit(ctx, "accounts:create:"+strconv.FormatInt(p.CustomerID, 10))
	if err != nil {
		return Account{}, apperr.Wrap(apperr.Unavailable, err, "account creation is temporarily unavailable")
	}
	if !r.Allowed {
		return Account{}, &apperr.Error{Code: apperr.RateLimited, Message: "too many accounts created; try again later",
			RetryAfterSeconds: retrySeconds(r.RetryAfter)}
	}
	hash, err := HashPassword(in.Password)
	if err != nil {
		return Account{}, apperr.Wrap(apperr.Internal, err, "")
	}
	return s.store.CreateAccount(ctx, Account{CustomerID: p.CustomerID, Email: in.Email, Name: in.Name, Role: in.Role,
		PasswordHash: hash, Language: in.Language})
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

// DeleteAccount deletes an account of the caller's customer. Admins only;
// the caller's own account is refused (conflict: another admin deletes it),
// so a customer always keeps an admin. The account is disabled, not erased:
// its id stays meaningful where tickets and events name it, and its e-mail
// address stays taken. Its tokens are refused from then on: revoked before
// the account is disabled (a failure changes nothing) and again after, for
// a login that raced the change.
func (s *Service) DeleteAccount(ctx context.Context, p authn.Principal, accountID int64) error {
	if p.Role != authn.RoleAdmin {
		return apperr.E(apperr.Forbidden, "only admins can delete accounts")
	}
	if accountID == p.AccountID {
		return apperr.E(apperr.Conflict, "you cannot delete your own account; another admin can")
	}
	// Only an account of the caller's customer is revoked (nothing is
	// learnt or changed of another customer's).
	if _, _, err := s.store.Account(ctx, p.CustomerID, accountID); err != nil {
		return err
	}
	now := s.now()
	if err := s.revoker.RevokeAccountBefore(ctx, accountID, now); err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "the account could not be deleted now; try again")
	}
	if err := s.store.DisableAccount(ctx, p.CustomerID, accountID, now); err != nil {
		return err
	}
	if err := s.revoker.RevokeAccountBefore(ctx, accountID, s.now()); err != nil {
		s.log.WarnContext(ctx, "deleted account: second revocation failed", "accountID", accountID, "error", err.Error())
	}
	return nil
}

// SetAvailability sets whether the caller's own account takes tickets. Any
// role may: an integration account's value is simply never consulted.
func (s *Service) SetAvailability(ctx context.Context, p authn.Principal, available bool) error {
	err := s.store.SetAvailability(ctx, p.CustomerID, p.AccountID, available, s.now())
	if apperr.Is(err, apperr.NotFound) {
		// The token is valid but its account is gone or disabled.
		return apperr.E(apperr.NotFound, "the account of this token no longer exists")
	}
	return err
}

// AccountsOf answers other services (tickets: whether an agent is
// available, whether an assignee is an agent or admin of the customer).
// Ids that are not the customer's are left out, not refused, so the caller
// learns nothing about other customers.
func (s *Service) AccountsOf(ctx context.Context, customerID int64, accountIDs []int64) ([]Account, error) {
	var v apperr.Validation
	v.Check(customerID > 0, "customerID", "must be a positive integer")
	v.Check(len(accountIDs) <= contracts.MaxAccountIDs, "accountIDs", fmt.Sprintf("must hold at most %d ids", contracts.MaxAccountIDs))
	if err := v.Err(); err != nil {
		return nil, err
	}
	return s.store.AccountsOf(ctx, customerID, accountIDs)
}

// CustomerExists answers other services (translation's "customer not found").
func (s *Service) CustomerExists(ctx context.Context, customerID int64) (bool, error) {
	return s.store.CustomerExists(ctx, customerID)
}

// Bootstrap creates or updates a customer with an admin account; used to
// seed a deployment. Idempotent. language (ISO 639-1, optional) is the
// admin's mail language; empty keeps the account's.
func (s *Service) Bootstrap(ctx context.Context, customerName, email, name, password, language string) (Customer, Account, error) {
	var v apperr.Validation
	customerName, email, name = strings.TrimSpace(customerName), strings.TrimSpace(email), strings.TrimSpace(name)
	v.Check(customerName != "", "customer", "is required")
	checkText(&v, "customer", customerName, maxNameLen)
	checkEmail(&v, "email", email)
	checkText(&v, "name", name, maxNameLen)
	checkPassword(&v, "password", password)
	lang := checkLanguage(&v, "language", language)
	if err := v.Err(); err != nil {
		return Customer{}, Account{}, err
	}
	hash, err := HashPassword(password)
	if err != nil {
		return Customer{}, Account{}, err
	}
	c, a, err := s.store.Bootstrap(ctx, customerName, Account{Email: email, Name: name, Role: authn.RoleAdmin, PasswordHash: hash, Language: lang})
	if err != nil {
		return c, a, err
	}
	// A re-seeded password voids the tokens issued with the old one.
	if err := s.revoker.RevokeAccountBefore(ctx, a.ID, s.now()); err != nil {
		return c, a, err
	}
	return c, a, nil
}

// checkText refuses what must not reach PostgreSQL text or a login
// identity: invalid UTF-8, NUL and other control characters, and more than
// max characters.
func checkText(v *apperr.Validation, field, s string, max int) {
	switch {
	case !utf8.ValidString(s):
		v.Add(field, "must be valid UTF-8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		v.Add(field, "must not contain control characters")
	case utf8.RuneCountInString(s) > max:
		v.Add(field, fmt.Sprintf("must be at most %d characters", max))
	}
}

// checkEmail accepts a bare address (no display name, no comments).
func checkEmail(v *apperr.Validation, field, email string) {
	var ev apperr.Validation
	ev.Check(email != "", field, "is required")
	checkText(&ev, field, email, maxEmailLen)
	if ev.Empty() {
		addr, err := mail.ParseAddress(email)
		ev.Check(err == nil && addr.Address == email, field, "must be a valid e-mail address")
	}
	v.Merge("", &ev)
}

// checkLanguage accepts an empty value or an ISO 639-1 code (two letters,
// any case) and returns it in lower case.
func checkLanguage(v *apperr.Validation, field, lang string) string {
	lang = strings.ToLower(strings.TrimSpace(lang))
	ok := lang == "" || len(lang) == 2 && strings.Trim(lang, "abcdefghijklmnopqrstuvwxyz") == ""
	v.Check(ok, field, "must be an ISO 639-1 code of two letters")
	return lang
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
