package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// topics runs as its own PostgreSQL role: it reads and writes its schema and
// is refused auth's, so a flaw in topics cannot leak accounts.
func TestTopicsRoleCannotReadAuth(t *testing.T) {
	tn := newTenant(t)
	wantOK(t, tn.on(t).post(topicsPath, map[string]any{"name": "Privilege " + randid.Hex(3)}), http.StatusCreated, nil)

	dbURL := envOf(t, "topics", "DATABASE_URL")
	if u, err := url.Parse(dbURL); err != nil || u.User.Username() != "sp_topics" {
		t.Fatalf("topics DATABASE_URL %q does not name its own role sp_topics", dbURL)
	}
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))

	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM topics.topics WHERE customer_id = $1", tn.customerID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("topics role reading topics.topics: %d rows, %v", n, err)
	}
	for _, sql := range []string{
		"SELECT email, password_hash FROM auth.accounts",
		"SELECT count(*) FROM auth.customers",
		"UPDATE auth.accounts SET role = 'admin'",
	} {
		_, err := conn.Exec(t.Context(), sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("topics role: %s: %v, want permission denied (42501)", sql, err)
		}
	}
}

// Only services the contracts let call auth's customer-exists RPC reach it:
// topics' NATS user is refused, translation's is answered.
func TestOnlyCallersReachAuthRPC(t *testing.T) {
	tn := newTenant(t)
	subject := contracts.Names{Prefix: stk.NATSPrefix}.Subject(contracts.RPCCustomerExists)
	body, _ := json.Marshal(contracts.CustomerExistsRequest{CustomerID: tn.customerID})

	violations := make(chan error, 4)
	// Each user gets its replies under its own inbox prefix (as
	// natsbus.Connect sets it); the default _INBOX. is not allowed.
	topics, err := nats.Connect(envOf(t, "topics", "NATS_URL"), nats.CustomInboxPrefix(contracts.InboxPrefix("topics")),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			violations <- err
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer topics.Close()
	if _, err := topics.Request(subject, body, time.Second); err == nil {
		t.Fatal("topics' request to auth was answered")
	}
	select {
	case err := <-violations:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), subject) {
			t.Fatalf("topics got %v, want a permissions violation on %s", err, subject)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no permissions violation reported to topics")
	}

	translation, err := nats.Connect(envOf(t, "translation", "NATS_URL"), nats.CustomInboxPrefix(contracts.InboxPrefix("translation")))
	if err != nil {
		t.Fatal(err)
	}
	defer translation.Close()
	reply, err := translation.Request(subject, body, 5*time.Second)
	if err != nil {
		t.Fatalf("translation's request to auth: %v", err)
	}
	var env struct {
		Data contracts.CustomerExistsReply `json:"data"`
	}
	if err := json.Unmarshal(reply.Data, &env); err != nil || !env.Data.Exists {
		t.Fatalf("auth answered %s, %v", reply.Data, err)
	}
}
