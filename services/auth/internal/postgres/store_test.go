package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
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
	return auth.PasswordReset{Token: token, TokenHash: hash(token), CreatedAt: at, ExpiresAt: at.Add(auth.ResetTTL)}
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
	if n, m := count(t, db, `SELECT count(*) FROM password_resets`), count(t, db, `SELECT count(*) FROM outbox`); n != 0 || m != 0 {
		t.Fatalf("unknown or disabled addresses wrote %d resets and %d events", n, m)
	}
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
		ev.Data.Token != "tok-1" || !ev.Data.ExpiresAt.Equal(t0.Add(auth.ResetTTL)) {
		t.Fatalf("event %s %+v", subject, ev)
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
	}
}
