package auth_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/ratelimit"
	"supportplatform.dev/pkg/redisconn"
	"supportplatform.dev/pkg/redistest"
	"supportplatform.dev/services/auth/internal/auth"
	"supportplatform.dev/services/auth/internal/postgres"
)

// limits of a fixture: email is per (address, IP); the address's backoff
// starts after `after` attempts (default: email), waiting 1s doubling up to
// a minute.
type limits struct{ email, ip, create, reset, after int }

type fixture struct {
	svc    *auth.Service
	db     *pgxpool.Pool
	clock  *clocktest.Clock
	hashes atomic.Int64 // password checks (argon2id runs) during logins
	ttl    time.Duration
	deps   auth.Deps // what svc was made of (a test may swap the store)
}

const (
	adminEmail    = "admin@acme.test"
	adminPassword = "correct horse battery"
)

// newFixture runs the service on a fresh database and a unique Redis prefix
// (both real), with a clock the test moves, and bootstraps Acme's admin.
func newFixture(t *testing.T, l limits) *fixture {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	rdb, err := redisconn.Open(ctx, redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	prefix := "authtest:" + randid.Hex(6) + ":"
	t.Cleanup(func() {
		keys, _ := rdb.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		_ = rdb.Close()
	})
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: db, clock: clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)), ttl: 45 * time.Minute}
	f.deps = auth.Deps{
		Store:   postgres.New(db),
		Signer:  auth.NewSigner(key, "test-issuer", "test-audience", f.ttl),
		Revoker: authn.NewRevocations(rdb, prefix),
		Limits: auth.Limits{
			LoginByEmailIP: ratelimit.NewAttempts(rdb, prefix, l.email, 15*time.Minute, auth.LoginPending),
			LoginByIP:      ratelimit.NewAttempts(rdb, prefix, l.ip, 15*time.Minute, auth.LoginPending),
			LoginBackoff:   ratelimit.NewBackoff(rdb, prefix, cmp.Or(l.after, l.email), time.Second, time.Minute, 15*time.Minute),
			CreateAccount:  ratelimit.New(rdb, prefix, l.create, time.Hour),
			ResetByEmail:   ratelimit.New(rdb, prefix, l.reset, time.Hour),
		},
		Log:      log,
		Now:      f.clock.Now,
		ResetURL: "https://support.example/reset-password",
		CheckPassword: func(hash, password string) (bool, error) {
			f.hashes.Add(1)
			return auth.CheckPassword(hash, password)
		},
	}
	f.svc, err = auth.NewService(f.deps)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.svc.Bootstrap(ctx, "Acme", adminEmail, "Admin", adminPassword, ""); err != nil {
		t.Fatal(err)
	}
	return f
}

func defaultLimits() limits { return limits{email: 5, ip: 50, create: 20, reset: 5} }

// admin is Acme's admin principal.
func (f *fixture) admin(t *testing.T) authn.Principal {
	t.Helper()
	a, err := postgres.New(f.db).AccountByEmail(context.Background(), adminEmail)
	if err != nil {
		t.Fatal(err)
	}
	return authn.Principal{CustomerID: a.CustomerID, AccountID: a.ID, Role: authn.RoleAdmin}
}

func wantCode(t *testing.T, err error, code apperr.Code) *apperr.Error {
	t.Helper()
	if !apperr.Is(err, code) {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	var e *apperr.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an *apperr.Error", err)
	}
	return e
}

// outcomes tallies parallel calls by error code ("" = success).
type outcomes struct {
	mu    sync.Mutex
	codes map[apperr.Code]int
}

func (o *outcomes) add(t *testing.T, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.codes == nil {
		o.codes = map[apperr.Code]int{}
	}
	if err == nil {
		o.codes[""]++
		return
	}
	var e *apperr.Error
	if errors.As(err, &e) && e.Code == apperr.RateLimited && e.RetryAfterSeconds < 1 {
		t.Errorf("429 without Retry-After: %v", err)
	}
	o.codes[apperr.CodeOf(err)]++
}

func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// TestParallelWrongLoginsStopAtTheLimit: every attempt is counted before the
// password is checked, so 50 parallel wrong passwords for one address from
// ten IPs get exactly the backoff's free attempts' worth of password
// checks; the rest are refused with 429 and cost no hashing. An unknown
// address behaves the same. Whoever waits out the Retry-After gets an
// attempt: the right password from a fresh IP logs in.
func TestParallelWrongLoginsStopAtTheLimit(t *testing.T) {
	for name, email := range map[string]string{"known address": adminEmail, "unknown address": "nobody@acme.test"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, defaultLimits())
			var o outcomes
			parallel(50, func(i int) {
				_, err := f.svc.Login(context.Background(), email, "wrong password", "192.0.2."+string(rune('0'+i%10)))
				o.add(t, err)
			})
			if got := f.hashes.Load(); got != 5 {
				t.Errorf("%d password checks, want 5 (the limit)", got)
			}
			if o.codes[apperr.Unauthorized] != 5 || o.codes[apperr.RateLimited] != 45 {
				t.Fatalf("outcomes %v, want 5 unauthorized and 45 rate limited", o.codes)
			}
			// Until the delay has passed, even the right password is
			// refused unchecked, with the delay as Retry-After.
			before := f.hashes.Load()
			_, err := f.svc.Login(context.Background(), email, adminPassword, "192.0.2.200")
			if e := wantCode(t, err, apperr.RateLimited); e.RetryAfterSeconds != 1 {
				t.Fatalf("Retry-After %d, want 1", e.RetryAfterSeconds)
			}
			if f.hashes.Load() != before {
				t.Fatal("a refused attempt checked the password")
			}
			f.clock.Advance(time.Second)
			_, err = f.svc.Login(context.Background(), email, adminPassword, "192.0.2.200")
			if email == adminEmail && err != nil {
				t.Fatalf("the right password from a fresh IP after the delay: %v", err)
			}
			if email != adminEmail {
				wantCode(t, err, apperr.Unauthorized)
			}
		})
	}
}

// TestWrongPasswordsDoNotLockTheOwnerOut: five wrong passwords from one IP
// lock that IP out of the address for the window, not the owner: the right
// password from another IP logs in, after at most the backoff's delay.
func TestWrongPasswordsDoNotLockTheOwnerOut(t *testing.T) {
	f := newFixture(t, limits{email: 5, ip: 50, create: 20, reset: 5, after: 5})
	ctx := context.Background()
	for range 5 {
		_, err := f.svc.Login(ctx, adminEmail, "wrong password", "198.51.100.1")
		wantCode(t, err, apperr.Unauthorized)
	}
	f.clock.Advance(time.Second) // the address's first delay
	_, err := f.svc.Login(ctx, adminEmail, adminPassword, "198.51.100.1")
	if e := wantCode(t, err, apperr.RateLimited); e.RetryAfterSeconds < 60 {
		t.Fatalf("the guessing IP is throttled for the window, Retry-After %d", e.RetryAfterSeconds)
	}
	if _, err := f.svc.Login(ctx, adminEmail, adminPassword, "198.51.100.2"); err != nil {
		t.Fatalf("the owner from another IP: %v", err)
	}
	// The success cleared the address's backoff (not the guessing IP's
	// counter for it).
	for range 4 {
		_, err := f.svc.Login(ctx, adminEmail, "wrong password", "198.51.100.3")
		wantCode(t, err, apperr.Unauthorized)
	}
	_, err = f.svc.Login(ctx, adminEmail, adminPassword, "198.51.100.1")
	wantCode(t, err, apperr.RateLimited)
}

// TestAddressBackoffSlowsDistributedGuessing: guesses from a new IP each
// time pass the per-IP and per-pair limits, but the address's backoff
// makes each wait twice as long as the one before, up to a minute.
func TestAddressBackoffSlowsDistributedGuessing(t *testing.T) {
	f := newFixture(t, defaultLimits())
	ctx := context.Background()
	ip := 0
	guess := func() error {
		ip++
		_, err := f.svc.Login(ctx, adminEmail, "wrong password", "203.0.113."+strconv.Itoa(ip))
		return err
	}
	for range 5 {
		wantCode(t, guess(), apperr.Unauthorized)
	}
	for _, wait := range []int{1, 2, 4, 8, 16, 32, 60, 60} {
		if e := wantCode(t, guess(), apperr.RateLimited); e.RetryAfterSeconds != wait {
			t.Fatalf("Retry-After %d, want %d", e.RetryAfterSeconds, wait)
		}
		f.clock.Advance(time.Duration(wait) * time.Second)
		wantCode(t, guess(), apperr.Unauthorized)
	}
	if n := f.hashes.Load(); n != 13 {
		t.Fatalf("%d passwords checked, want 13", n)
	}
}

// TestParallelWrongLoginsPerClientIP: the per-IP counter holds the same way
// across many addresses.
func TestParallelWrongLoginsPerClientIP(t *testing.T) {
	f := newFixture(t, limits{email: 100, ip: 5, create: 20, reset: 5})
	var o outcomes
	parallel(50, func(i int) {
		_, err := f.svc.Login(context.Background(), "user"+randid.Hex(3)+"@acme.test", "wrong password", "198.51.100.7")
		o.add(t, err)
	})
	if got := f.hashes.Load(); got != 5 || o.codes[apperr.Unauthorized] != 5 || o.codes[apperr.RateLimited] != 45 {
		t.Fatalf("%d password checks, outcomes %v; want 5 checks, 5 unauthorized, 45 rate limited", got, o.codes)
	}
	if _, err := f.svc.Login(context.Background(), adminEmail, adminPassword, "198.51.100.8"); err != nil {
		t.Fatalf("another IP must not be throttled: %v", err)
	}
}

// TestSuccessfulLoginsDoNotUseUpTheLimits: the limits count failures; a
// success clears the address's counter and gives its IP hit back.
func TestSuccessfulLoginsDoNotUseUpTheLimits(t *testing.T) {
	f := newFixture(t, limits{email: 3, ip: 3, create: 20, reset: 5})
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		if _, err := f.svc.Login(ctx, adminEmail, adminPassword, "203.0.113.1"); err != nil {
			t.Fatalf("login %d: %v", i, err)
		}
	}
	for i := 0; i < 2; i++ {
		_, err := f.svc.Login(ctx, adminEmail, "wrong password", "203.0.113.2")
		wantCode(t, err, apperr.Unauthorized)
	}
	if _, err := f.svc.Login(ctx, strings.ToUpper(adminEmail), adminPassword, "203.0.113.3"); err != nil {
		t.Fatal(err)
	}
	// The success cleared the address's two failures: three more are allowed.
	for i := 0; i < 3; i++ {
		_, err := f.svc.Login(ctx, adminEmail, "wrong password", "203.0.113."+string(rune('4'+i)))
		wantCode(t, err, apperr.Unauthorized)
	}
	_, err := f.svc.Login(ctx, adminEmail, "wrong password", "203.0.113.9")
	wantCode(t, err, apperr.RateLimited)
}

// TestLoginsDuringADatabaseOutageDoNotCount: while the database cannot be
// reached a login is 503, not a failure: the throttles take the attempt
// back, so an address that kept trying during the outage is not locked
// out after it.
func TestLoginsDuringADatabaseOutageDoNotCount(t *testing.T) {
	f := newFixture(t, limits{email: 3, ip: 3, create: 20, reset: 5})
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "postgres://postgres@" + l.Addr().String() + "/gone?sslmode=disable"
	l.Close()
	pool, err := pgxpool.New(ctx, down)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	deps := f.deps
	deps.Store = postgres.New(pool)
	outage, err := auth.NewService(deps)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		_, err := outage.Login(ctx, adminEmail, adminPassword, "203.0.113.1")
		if e := wantCode(t, err, apperr.Unavailable); strings.Contains(e.Message, "127.0.0.1") {
			t.Fatalf("the answer shows the internals: %q", e.Message)
		}
	}
	if _, err := f.svc.Login(ctx, adminEmail, adminPassword, "203.0.113.1"); err != nil {
		t.Fatalf("first login after the outage: %v", err)
	}
}

// TestTokenLifetime: the token's times come from the injected clock.
func TestTokenLifetime(t *testing.T) {
	f := newFixture(t, defaultLimits())
	now := f.clock.Now()
	tok, err := f.svc.Login(context.Background(), adminEmail, adminPassword, "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if tok.TTL != f.ttl || !tok.ExpiresAt.Equal(now.Add(f.ttl)) {
		t.Fatalf("token ttl %v expires %v, want %v and %v", tok.TTL, tok.ExpiresAt, f.ttl, now.Add(f.ttl))
	}
	var c authn.Claims
	if _, _, err := jwt.NewParser().ParseUnverified(tok.Raw, &c); err != nil {
		t.Fatal(err)
	}
	if !c.IssuedAt.Equal(now) || !c.ExpiresAt.Equal(now.Add(f.ttl)) || c.IssuedAtMs != now.UnixMilli() {
		t.Fatalf("claims iat %v exp %v iat_ms %d, want %v and %v", c.IssuedAt, c.ExpiresAt, c.IssuedAtMs, now, now.Add(f.ttl))
	}
}

// outboxEvents returns the queued events of a type, oldest first.
func outboxEvents[T any](t *testing.T, db *pgxpool.Pool, eventType string) []contracts.Event[T] {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT data FROM outbox WHERE subject = $1 ORDER BY seq`, contracts.EventSubject(eventType))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []contracts.Event[T]
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		var ev contracts.Event[T]
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t *testing.T, db *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestForgotPasswordQueuesTheEventForKnownAddressesOnly(t *testing.T) {
	f := newFixture(t, defaultLimits())
	ctx := context.Background()
	if err := f.svc.ForgotPassword(ctx, "nobody@acme.test"); err != nil {
		t.Fatalf("unknown address: %v", err)
	}
	if n, m := count(t, f.db, "outbox"), count(t, f.db, "password_resets"); n != 0 || m != 0 {
		t.Fatalf("an unknown address left %d events and %d resets", n, m)
	}
	if err := f.svc.ForgotPassword(ctx, " ADMIN@acme.test "); err != nil {
		t.Fatalf("known address: %v", err)
	}
	evs := outboxEvents[contracts.PasswordResetRequested](t, f.db, contracts.EventPasswordResetRequested)
	p := f.admin(t)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	ev := evs[0]
	if ev.Type != contracts.EventPasswordResetRequested || ev.ID == "" || ev.CustomerID != p.CustomerID ||
		!ev.OccurredAt.Equal(f.clock.Now()) || ev.Data.AccountID != p.AccountID || ev.Data.Email != adminEmail ||
		ev.Data.Name != "Admin" || !ev.Data.ExpiresAt.Equal(f.clock.Now().Add(30*time.Minute)) {
		t.Fatalf("event %+v", ev)
	}
	// The token is only in the queued mail's link, never in an event; the
	// reset keeps its hash.
	token := resetToken(t, f.db)
	if len(token) != 43 {
		t.Fatalf("token %q", token)
	}
	var data []byte
	if err := f.db.QueryRow(ctx, `SELECT data FROM outbox`).Scan(&data); err != nil || bytes.Contains(data, []byte(token)) {
		t.Fatalf("the event carries the token (%v): %s", err, data)
	}
	sum := sha256.Sum256([]byte(token))
	if n := countWhere(t, f.db, `SELECT count(*) FROM password_resets WHERE token_hash = $1`, sum[:]); n != 1 {
		t.Fatalf("%d resets with the token's hash", n)
	}
}

// resetToken is the token of the newest queued reset mail's link.
func resetToken(t *testing.T, db *pgxpool.Pool) string {
	t.Helper()
	var link string
	if err := db.QueryRow(context.Background(), `SELECT link FROM mail_queue WHERE kind = 'password-reset' AND state = 'pending'
		ORDER BY mail_id DESC LIMIT 1`).Scan(&link); err != nil {
		t.Fatal(err)
	}
	base, token, ok := strings.Cut(link, "#token=")
	if !ok || base != "https://support.example/reset-password" {
		t.Fatalf("link %q", link)
	}
	return token
}

func countWhere(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestResetTokenExpiresAfter30Minutes moves the clock to either side of the
// expiry.
func TestResetTokenExpiresAfter30Minutes(t *testing.T) {
	cases := []struct {
		name  string
		after time.Duration
		ok    bool
	}{
		{"just before expiry", 30*time.Minute - time.Second, true},
		{"at expiry", 30 * time.Minute, false},
		{"later", 2 * time.Hour, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, defaultLimits())
			ctx := context.Background()
			if err := f.svc.ForgotPassword(ctx, adminEmail); err != nil {
				t.Fatal(err)
			}
			token := resetToken(t, f.db)
			f.clock.Advance(tc.after)
			err := f.svc.ResetPassword(ctx, token, "a brand new passphrase")
			if !tc.ok {
				if e := wantCode(t, err, apperr.Invalid); e.Fields["token"] == "" {
					t.Fatalf("no token error: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			changed := outboxEvents[contracts.PasswordChanged](t, f.db, contracts.EventPasswordChanged)
			if len(changed) != 1 || changed[0].Data.AccountID != f.admin(t).AccountID {
				t.Fatalf("password-changed events %+v", changed)
			}
			if _, err := f.svc.Login(ctx, adminEmail, "a brand new passphrase", "192.0.2.1"); err != nil {
				t.Fatalf("new password: %v", err)
			}
			err = f.svc.ResetPassword(ctx, token, "yet another passphrase")
			wantCode(t, err, apperr.Invalid)
		})
	}
}

// TestAccountCreationLimitPerCustomer fires parallel creations: exactly the
// limit's worth get through, the rest get 429, and another customer keeps
// its own allowance.
func TestAccountCreationLimitPerCustomer(t *testing.T) {
	f := newFixture(t, limits{email: 5, ip: 50, create: 4, reset: 5})
	ctx := context.Background()
	admin := f.admin(t)
	var o outcomes
	parallel(12, func(i int) {
		_, err := f.svc.CreateAccount(ctx, admin, auth.NewAccount{Email: "agent" + randid.Hex(4) + "@acme.test",
			Name: "Agent", Role: authn.RoleAgent, Password: "agent passphrase"})
		o.add(t, err)
	})
	if o.codes[""] != 4 || o.codes[apperr.RateLimited] != 8 {
		t.Fatalf("outcomes %v, want 4 created and 8 rate limited", o.codes)
	}
	_, other, err := f.svc.Bootstrap(ctx, "Other Co", "admin@other.test", "Other", "other passphrase", "")
	if err != nil {
		t.Fatal(err)
	}
	otherAdmin := authn.Principal{CustomerID: other.CustomerID, AccountID: other.ID, Role: authn.RoleAdmin}
	if _, err := f.svc.CreateAccount(ctx, otherAdmin, auth.NewAccount{Email: "agent@other.test", Role: authn.RoleAgent, Password: "agent passphrase"}); err != nil {
		t.Fatalf("another customer: %v", err)
	}
}

// TestTakenAddressAnswersAlike: an address held by this customer or by
// another gets the same conflict, which does not say where it is used.
func TestTakenAddressAnswersAlike(t *testing.T) {
	f := newFixture(t, defaultLimits())
	ctx := context.Background()
	admin := f.admin(t)
	if _, err := f.svc.CreateAccount(ctx, admin, auth.NewAccount{Email: "agent@acme.test", Role: authn.RoleAgent, Password: "agent passphrase"}); err != nil {
		t.Fatal(err)
	}
	_, other, err := f.svc.Bootstrap(ctx, "Other Co", "admin@other.test", "Other", "other passphrase", "")
	if err != nil {
		t.Fatal(err)
	}
	otherAdmin := authn.Principal{CustomerID: other.CustomerID, AccountID: other.ID, Role: authn.RoleAdmin}
	_, own := f.svc.CreateAccount(ctx, admin, auth.NewAccount{Email: "Agent@acme.test", Role: authn.RoleAgent, Password: "agent passphrase"})
	_, foreign := f.svc.CreateAccount(ctx, otherAdmin, auth.NewAccount{Email: "agent@acme.test", Role: authn.RoleAgent, Password: "agent passphrase"})
	eo, ef := wantCode(t, own, apperr.Conflict), wantCode(t, foreign, apperr.Conflict)
	if eo.Message != ef.Message || len(eo.Fields) != 1 || eo.Fields["email"] != ef.Fields["email"] || len(ef.Fields) != 1 {
		t.Fatalf("answers differ: %v / %v", own, foreign)
	}
	if !strings.Contains(eo.Fields["email"], "cannot be used for a new account") || strings.Contains(eo.Message, "customer") {
		t.Fatalf("wording: %v", own)
	}
}

// TestControlCharactersAreRefused: text that reaches PostgreSQL is checked
// by the domain, 400 naming the field, before any work.
func TestControlCharactersAreRefused(t *testing.T) {
	f := newFixture(t, defaultLimits())
	ctx := context.Background()
	admin := f.admin(t)
	cases := []struct {
		name  string
		field string
		call  func() error
	}{
		{"login email NUL", "email", func() error {
			_, err := f.svc.Login(ctx, "admin\x00@acme.test", adminPassword, "192.0.2.1")
			return err
		}},
		{"forgot email NUL", "email", func() error { return f.svc.ForgotPassword(ctx, "admin@acme.test\x00") }},
		{"reset token NUL", "token", func() error { return f.svc.ResetPassword(ctx, "abc\x00def", "a long passphrase") }},
		{"account name NUL", "name", func() error {
			_, err := f.svc.CreateAccount(ctx, admin, auth.NewAccount{Email: "n@acme.test", Name: "Bob\x00", Role: authn.RoleAgent, Password: "agent passphrase"})
			return err
		}},
		{"account name newline", "name", func() error {
			_, err := f.svc.CreateAccount(ctx, admin, auth.NewAccount{Email: "n@acme.test", Name: "Bob\nBob", Role: authn.RoleAgent, Password: "agent passphrase"})
			return err
		}},
		{"account email DEL", "email", func() error {
			_, err := f.svc.CreateAccount(ctx, admin, auth.NewAccount{Email: "n\x7f@acme.test", Name: "Bob", Role: authn.RoleAgent, Password: "agent passphrase"})
			return err
		}},
		{"bootstrap customer NUL", "customer", func() error {
			_, _, err := f.svc.Bootstrap(ctx, "Ac\x00me", "b@acme.test", "Admin", "a long passphrase", "")
			return err
		}},
		{"bootstrap name NUL", "name", func() error {
			_, _, err := f.svc.Bootstrap(ctx, "Acme", "b@acme.test", "Ad\x00min", "a long passphrase", "")
			return err
		}},
		{"bootstrap customer invalid UTF-8", "customer", func() error {
			_, _, err := f.svc.Bootstrap(ctx, "Ac\xffme", "b@acme.test", "Admin", "a long passphrase", "")
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if e := wantCode(t, tc.call(), apperr.Invalid); e.Fields[tc.field] == "" {
				t.Fatalf("no error for %s: %v", tc.field, e)
			}
		})
	}
	if n := f.hashes.Load(); n != 0 {
		t.Fatalf("%d password checks for refused input", n)
	}
}

// Parallel reset requests for one address stop at the limit, for a known and
// an unknown address alike (the limit must not tell them apart), and only
// the allowed ones of the known address reach the outbox.
func TestForgotPasswordLimitedPerAddress(t *testing.T) {
	for _, addr := range []string{adminEmail, "nobody@acme.test"} {
		t.Run(addr, func(t *testing.T) {
			f := newFixture(t, limits{email: 5, ip: 50, create: 20, reset: 3})
			ctx := context.Background()
			const n = 12
			errs := make(chan error, n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- f.svc.ForgotPassword(ctx, addr)
				}()
			}
			wg.Wait()
			close(errs)
			ok, limited := 0, 0
			for err := range errs {
				switch {
				case err == nil:
					ok++
				case apperr.Is(err, apperr.RateLimited):
					limited++
					var ae *apperr.Error
					if errors.As(err, &ae); ae.RetryAfterSeconds < 1 {
						t.Errorf("429 without Retry-After: %v", err)
					}
				default:
					t.Errorf("unexpected error %v", err)
				}
			}
			if ok != 3 || limited != n-3 {
				t.Fatalf("%d accepted, %d limited; want 3 and %d", ok, limited, n-3)
			}
			want := 0
			if addr == adminEmail {
				want = 3
			}
			if got := len(outboxEvents[contracts.PasswordResetRequested](t, f.db, contracts.EventPasswordResetRequested)); got != want {
				t.Fatalf("%d reset events, want %d", got, want)
			}
		})
	}
}

// TestAccountLanguage: an account's mail language is an ISO 639-1 code,
// stored in lower case; bootstrap sets it or keeps it.
func TestAccountLanguage(t *testing.T) {
	f := newFixture(t, defaultLimits())
	ctx := context.Background()
	admin := f.admin(t)
	a, err := f.svc.CreateAccount(ctx, admin, auth.NewAccount{Email: "es@acme.test", Name: "Ana", Role: authn.RoleAgent,
		Password: "agent passphrase", Language: " ES "})
	if err != nil || a.Language != "es" {
		t.Fatalf("created %+v, %v", a, err)
	}
	for _, bad := range []string{"spa", "e", "e1", "é?"} {
		_, err := f.svc.CreateAccount(ctx, admin, auth.NewAccount{Email: "x@acme.test", Role: authn.RoleAgent,
			Password: "agent passphrase", Language: bad})
		if e := wantCode(t, err, apperr.Invalid); e.Fields["language"] == "" {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	if _, a, err = f.svc.Bootstrap(ctx, "Acme", adminEmail, "Admin", adminPassword, "fr"); err != nil || a.Language != "fr" {
		t.Fatalf("bootstrap with a language: %+v %v", a, err)
	}
	if _, a, err = f.svc.Bootstrap(ctx, "Acme", adminEmail, "Admin", adminPassword, ""); err != nil || a.Language != "fr" {
		t.Fatalf("bootstrap without one keeps it: %+v %v", a, err)
	}
}
