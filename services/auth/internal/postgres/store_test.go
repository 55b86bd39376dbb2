package postgres_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	pgpkg "supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/auth/internal/auth"
	"supportplatform.dev/services/auth/internal/postgres"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func newStore(t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool, err := pgpkg.Open(context.Background(), pgpkg.Options{URL: pgtest.NewDatabase(t), Schema: postgres.Schema, Migrations: postgres.Migrations()},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return postgres.New(pool), pool
}

func wantCode(t *testing.T, err error, code apperr.Code) *apperr.Error {
	t.Helper()
	if !apperr.Is(err, code) {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	return err.(*apperr.Error)
}

func bootstrap(t *testing.T, s *postgres.Store, customer, email string) (auth.Customer, auth.Account) {
	t.Helper()
	c, a, err := s.Bootstrap(context.Background(), customer, auth.Account{Email: email, Name: "Admin", PasswordHash: "hash-" + email})
	if err != nil {
		t.Fatal(err)
	}
	return c, a
}

func exec(t *testing.T, db *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func TestBootstrapCreatesThenUpdates(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	c1, a1 := bootstrap(t, s, "Acme", "admin@acme.test")
	if c1.Name != "Acme" || a1.CustomerID != c1.ID || a1.Role != "admin" || a1.Email != "admin@acme.test" {
		t.Fatalf("created %+v %+v", c1, a1)
	}
	exec(t, db, `UPDATE accounts SET disabled_at = now() WHERE account_id = $1`, a1.ID)
	c2, a2, err := s.Bootstrap(ctx, "Acme Renamed", auth.Account{Email: "ADMIN@acme.test", Name: "Boss", PasswordHash: "new-hash"})
	if err != nil {
		t.Fatal(err)
	}
	if c2.ID != c1.ID || a2.ID != a1.ID || c2.Name != "Acme Renamed" || a2.Name != "Boss" || a2.PasswordHash != "new-hash" {
		t.Fatalf("updated %+v %+v", c2, a2)
	}
	if _, err := s.AccountByEmail(ctx, "admin@acme.test"); err != nil {
		t.Fatalf("bootstrap must re-enable the account: %v", err)
	}
	if n := count(t, db, `SELECT count(*) FROM customers`); n != 1 {
		t.Fatalf("%d customers, want 1", n)
	}
}

func TestAccountLookupsAreScoped(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	ca, aa := bootstrap(t, s, "Acme", "admin@acme.test")
	cb, ab := bootstrap(t, s, "Beta", "admin@beta.test")

	got, err := s.AccountByEmail(ctx, "Admin@ACME.test")
	if err != nil || got.ID != aa.ID {
		t.Fatalf("by e-mail, any case: %+v %v", got, err)
	}
	if _, c, err := s.Account(ctx, ca.ID, aa.ID); err != nil || c.Name != "Acme" {
		t.Fatalf("own account: %+v %v", c, err)
	}
	_, _, err = s.Account(ctx, ca.ID, ab.ID)
	wantCode(t, err, apperr.NotFound)

	for name, sql := range map[string]string{
		"disabled account": `UPDATE accounts SET disabled_at = now() WHERE account_id = $1`,
		"deleted customer": `UPDATE customers SET deleted_at = now() WHERE customer_id = (SELECT customer_id FROM accounts WHERE account_id = $1)`,
	} {
		t.Run(name, func(t *testing.T) {
			exec(t, db, `UPDATE accounts SET disabled_at = NULL`)
			exec(t, db, `UPDATE customers SET deleted_at = NULL`)
			exec(t, db, sql, ab.ID)
			_, err := s.AccountByEmail(ctx, "admin@beta.test")
			wantCode(t, err, apperr.NotFound)
			_, _, err = s.Account(ctx, cb.ID, ab.ID)
			wantCode(t, err, apperr.NotFound)
		})
	}
	exec(t, db, `UPDATE customers SET deleted_at = now() WHERE customer_id = $1`, cb.ID)
	for id, want := range map[int64]bool{ca.ID: true, cb.ID: false, 999999: false} {
		if ok, err := s.CustomerExists(ctx, id); err != nil || ok != want {
			t.Fatalf("customer %d exists = %v %v, want %v", id, ok, err, want)
		}
	}
}

func TestCreateAndListAccounts(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ca, _ := bootstrap(t, s, "Acme", "admin@acme.test")
	cb, _ := bootstrap(t, s, "Beta", "admin@beta.test")
	for _, email := range []string{"a1@acme.test", "a2@acme.test", "a3@acme.test"} {
		if _, err := s.CreateAccount(ctx, auth.Account{CustomerID: ca.ID, Email: email, Role: "agent", PasswordHash: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	// The same conflict whether the address is this customer's or another's.
	_, own := s.CreateAccount(ctx, auth.Account{CustomerID: ca.ID, Email: "A1@acme.test", Role: "agent", PasswordHash: "h"})
	_, foreign := s.CreateAccount(ctx, auth.Account{CustomerID: cb.ID, Email: "a1@acme.test", Role: "agent", PasswordHash: "h"})
	eo, ef := wantCode(t, own, apperr.Conflict), wantCode(t, foreign, apperr.Conflict)
	if eo.Message != ef.Message || eo.Fields["email"] == "" || eo.Fields["email"] != ef.Fields["email"] {
		t.Fatalf("conflicts differ: %v / %v", own, foreign)
	}
	_, err := s.CreateAccount(ctx, auth.Account{CustomerID: ca.ID, Email: "x@acme.test", Role: "owner", PasswordHash: "h"})
	wantCode(t, err, apperr.Invalid)

	page, total, err := s.ListAccounts(ctx, ca.ID, 1, 2)
	if err != nil || total != 4 || len(page) != 2 || page[0].Email != "a1@acme.test" || page[1].Email != "a2@acme.test" {
		t.Fatalf("page: %+v %d %v", page, total, err)
	}
	page, total, err = s.ListAccounts(ctx, cb.ID, 0, 10)
	if err != nil || total != 1 || len(page) != 1 || page[0].Email != "admin@beta.test" {
		t.Fatalf("other customer's page: %+v %d %v", page, total, err)
	}
}

func resetFor(token string, at time.Time) auth.PasswordReset {
	return auth.PasswordReset{TokenHash: hash(token), Link: "https://support.example/reset#token=" + token, CreatedAt: at, ExpiresAt: at.Add(auth.ResetTTL)}
}

func TestRequestPasswordResetWritesOnlyForLiveAccounts(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	c, a := bootstrap(t, s, "Acme", "admin@acme.test")
	_, b := bootstrap(t, s, "Beta", "admin@beta.test")
	exec(t, db, `UPDATE accounts SET disabled_at = now() WHERE account_id = $1`, b.ID)
	for _, email := range []string{"nobody@acme.test", "admin@beta.test"} {
		if err := s.RequestPasswordReset(ctx, email, resetFor("tok-"+email, t0)); err != nil {
			t.Fatalf("%s: %v", email, err)
		}
	}
	if n, m, q := count(t, db, `SELECT count(*) FROM password_resets`), count(t, db, `SELECT count(*) FROM outbox`),
		count(t, db, `SELECT count(*) FROM mail_queue`); n != 0 || m != 0 || q != 0 {
		t.Fatalf("unknown or disabled addresses wrote %d resets, %d events and %d mails", n, m, q)
	}
	exec(t, db, `UPDATE accounts SET language = 'de' WHERE account_id = $1`, a.ID)
	if err := s.RequestPasswordReset(ctx, "ADMIN@acme.test", resetFor("tok-1", t0)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM password_resets WHERE account_id = $1 AND token_hash = $2 AND expires_at = $3`,
		a.ID, hash("tok-1"), t0.Add(auth.ResetTTL)); n != 1 {
		t.Fatalf("%d matching resets, want 1", n)
	}
	var subject string
	var data []byte
	if err := db.QueryRow(ctx, `SELECT subject, data FROM outbox`).Scan(&subject, &data); err != nil {
		t.Fatal(err)
	}
	var ev contracts.Event[contracts.PasswordResetRequested]
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	if subject != contracts.EventSubject(contracts.EventPasswordResetRequested) || ev.CustomerID != c.ID ||
		ev.Data.AccountID != a.ID || ev.Data.Email != "admin@acme.test" || ev.Data.Name != "Admin" ||
		!ev.Data.ExpiresAt.Equal(t0.Add(auth.ResetTTL)) {
		t.Fatalf("event %s %+v", subject, ev)
	}
	// The token travels only in the mail: never in an event.
	if bytes.Contains(data, []byte("tok-1")) {
		t.Fatalf("the event carries the reset token: %s", data)
	}
	var kind, to, name, lang, link, state string
	var expires, due time.Time
	if err := db.QueryRow(ctx, `SELECT kind, recipient, name, language, link, expires_at, next_attempt_at, state FROM mail_queue`).
		Scan(&kind, &to, &name, &lang, &link, &expires, &due, &state); err != nil {
		t.Fatal(err)
	}
	if kind != "password-reset" || to != "admin@acme.test" || name != "Admin" || lang != "de" ||
		link != "https://support.example/reset#token=tok-1" || !expires.Equal(t0.Add(auth.ResetTTL)) || !due.Equal(t0) || state != "pending" {
		t.Fatalf("queued mail %s %s %s %s %s %v %v %s", kind, to, name, lang, link, expires, due, state)
	}
}

func TestResetPassword(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	c, a := bootstrap(t, s, "Acme", "admin@acme.test")
	for _, tok := range []string{"tok-1", "tok-2"} {
		if err := s.RequestPasswordReset(ctx, a.Email, resetFor(tok, t0)); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, db, `DELETE FROM outbox`)

	_, err := s.ResetPassword(ctx, hash("tok-1"), t0.Add(auth.ResetTTL), "expired-hash")
	wantCode(t, err, apperr.NotFound)
	_, err = s.ResetPassword(ctx, hash("forged"), t0, "forged-hash")
	wantCode(t, err, apperr.NotFound)

	at := t0.Add(time.Minute)
	got, err := s.ResetPassword(ctx, hash("tok-1"), at, "new-hash")
	if err != nil || got.ID != a.ID || got.PasswordHash != "new-hash" || !got.PasswordChangedAt.Equal(at) {
		t.Fatalf("reset: %+v %v", got, err)
	}
	// Spent, and the account's other outstanding token is void too.
	for _, tok := range []string{"tok-1", "tok-2"} {
		_, err = s.ResetPassword(ctx, hash(tok), at, "again")
		wantCode(t, err, apperr.NotFound)
	}
	var data []byte
	if err := db.QueryRow(ctx, `SELECT data FROM outbox WHERE subject = $1`, contracts.EventSubject(contracts.EventPasswordChanged)).Scan(&data); err != nil {
		t.Fatalf("password-changed event: %v", err)
	}
	var ev contracts.Event[contracts.PasswordChanged]
	if err := json.Unmarshal(data, &ev); err != nil || ev.CustomerID != c.ID || ev.Data.AccountID != a.ID || !ev.OccurredAt.Equal(at) {
		t.Fatalf("event %+v %v", ev, err)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox`); n != 1 {
		t.Fatalf("%d events, want 1 (failed resets write none)", n)
	} // The owner gets the notice; the reset mails still queued carry void
	// tokens and are settled without their links.
	if n := count(t, db, `SELECT count(*) FROM mail_queue WHERE kind = 'password-changed' AND account_id = $1
		AND recipient = 'admin@acme.test' AND state = 'pending' AND link IS NULL AND created_at = $2`, a.ID, at); n != 1 {
		t.Fatalf("%d password-changed mails queued, want 1", n)
	}
	if n := count(t, db, `SELECT count(*) FROM mail_queue WHERE kind = 'password-reset' AND state = 'expired' AND link IS NULL`); n != 2 {
		t.Fatalf("%d voided reset mails, want 2", n)
	}
}

func changedAt(t *testing.T, db *pgxpool.Pool, accountID int64) *time.Time {
	t.Helper()
	var at *time.Time
	if err := db.QueryRow(context.Background(), `SELECT available_changed_at FROM accounts WHERE account_id = $1`, accountID).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

func TestSetAvailability(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	ca, aa := bootstrap(t, s, "Acme", "admin@acme.test")
	cb, ab := bootstrap(t, s, "Beta", "admin@beta.test")
	if aa.Available || changedAt(t, db, aa.ID) != nil {
		t.Fatalf("a new account is available = %v since %v; want unavailable, never changed", aa.Available, changedAt(t, db, aa.ID))
	}
	t1, t2 := t0.Add(time.Hour), t0.Add(2*time.Hour)
	steps := []struct {
		name      string
		available bool
		at        time.Time
		wantAt    time.Time
	}{
		{"on", true, t0, t0},
		{"on again keeps the time of the change", true, t1, t0},
		{"off", false, t2, t2},
	}
	for _, st := range steps {
		if err := s.SetAvailability(ctx, ca.ID, aa.ID, st.available, st.at); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		a, _, err := s.Account(ctx, ca.ID, aa.ID)
		if at := changedAt(t, db, aa.ID); err != nil || a.Available != st.available || at == nil || !at.Equal(st.wantAt) {
			t.Fatalf("%s: available = %v since %v (%v), want %v since %v", st.name, a.Available, at, err, st.available, st.wantAt)
		}
	}
	// Another customer's account, or a disabled one, is not found and
	// stays as it was.
	wantCode(t, s.SetAvailability(ctx, ca.ID, ab.ID, true, t0), apperr.NotFound)
	exec(t, db, `UPDATE accounts SET disabled_at = now() WHERE account_id = $1`, aa.ID)
	wantCode(t, s.SetAvailability(ctx, ca.ID, aa.ID, true, t0), apperr.NotFound)
	if b, _, err := s.Account(ctx, cb.ID, ab.ID); err != nil || b.Available {
		t.Fatalf("another customer's account changed: %+v %v", b, err)
	}
	if n := count(t, db, `SELECT count(*) FROM accounts WHERE available`); n != 0 {
		t.Fatalf("%d accounts available, want none", n)
	}
}

func TestAccountsOfAreScopedToTheCustomer(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	ca, admin := bootstrap(t, s, "Acme", "admin@acme.test")
	cb, foreign := bootstrap(t, s, "Beta", "admin@beta.test")
	create := func(customerID int64, email, role string) auth.Account {
		a, err := s.CreateAccount(ctx, auth.Account{CustomerID: customerID, Email: email, Name: email, Role: role, PasswordHash: "h"})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	agent := create(ca.ID, "agent@acme.test", "agent")
	integration := create(ca.ID, "bot@acme.test", "integration")
	disabled := create(ca.ID, "gone@acme.test", "agent")
	foreignAgent := create(cb.ID, "agent@beta.test", "agent")
	exec(t, db, `UPDATE accounts SET disabled_at = now() WHERE account_id = $1`, disabled.ID)
	if err := s.SetAvailability(ctx, ca.ID, agent.ID, true, t0); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name     string
		customer int64
		ids      []int64
		want     []int64
	}{
		{"no ids: every enabled admin and agent", ca.ID, nil, []int64{admin.ID, agent.ID}},
		{"ids: the customer's of any role", ca.ID, []int64{integration.ID, agent.ID}, []int64{agent.ID, integration.ID}},
		{"foreign, disabled and unknown ids are absent", ca.ID, []int64{foreign.ID, foreignAgent.ID, disabled.ID, 999999, admin.ID}, []int64{admin.ID}},
		{"the other customer", cb.ID, nil, []int64{foreign.ID, foreignAgent.ID}},
		{"the other customer asking for ours", cb.ID, []int64{admin.ID, agent.ID}, nil},
		{"an unknown customer", 999999, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.AccountsOf(ctx, tc.customer, tc.ids)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, a := range got {
				if a.CustomerID != tc.customer {
					t.Fatalf("account %d of customer %d returned for %d", a.ID, a.CustomerID, tc.customer)
				}
				ids = append(ids, a.ID)
			}
			if !slices.Equal(ids, tc.want) {
				t.Fatalf("ids = %v, want %v", ids, tc.want)
			}
		})
	}
	got, err := s.AccountsOf(ctx, ca.ID, []int64{agent.ID, admin.ID})
	if err != nil || len(got) != 2 || got[0].Available || !got[1].Available || got[1].Email != "agent@acme.test" || got[1].Role != "agent" {
		t.Fatalf("availability in the lookup: %+v %v", got, err)
	}

	exec(t, db, `UPDATE customers SET deleted_at = now() WHERE customer_id = $1`, ca.ID)
	if got, err := s.AccountsOf(ctx, ca.ID, nil); err != nil || len(got) != 0 {
		t.Fatalf("a deleted customer's accounts: %+v %v", got, err)
	}
}
