package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

const (
	tenantA int64 = 1
	tenantB int64 = 2
)

// clock is the events' time in store tests.
var clock = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// storeClock is newStore's clock, for the decisions the tests hand to it.
func storeClock() time.Time { return clock }

func newStore(t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	return postgres.New(pool, func() time.Time { return clock }), pool
}

func wantCode(t *testing.T, err error, code apperr.Code) *apperr.Error {
	t.Helper()
	if !apperr.Is(err, code) {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	return err.(*apperr.Error)
}

func create(t *testing.T, s *postgres.Store, customerID int64, name, email string) tickets.EndUser {
	t.Helper()
	u, err := s.CreateEndUser(context.Background(), customerID, tickets.EndUserInput{Name: name, Email: email, CustomFields: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// events returns the types of the outbox's events, oldest first.
func events(t *testing.T, pool *pgxpool.Pool) []contracts.Event[contracts.EndUserChanged] {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT data FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []contracts.Event[contracts.EndUserChanged]
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		var e contracts.Event[contracts.EndUserChanged]
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestEndUserLifecycle(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	in := tickets.EndUserInput{Name: "Ada", Email: "ada@example.com", Phone: "+44 1234", Language: "en",
		CustomFields: json.RawMessage(`{"plan":"gold","seats":3}`)}
	u, err := s.CreateEndUser(ctx, tenantA, in)
	if err != nil {
		t.Fatal(err)
	}
	if u.ID == 0 || u.CustomerID != tenantA || u.Name != "Ada" || u.Email != "ada@example.com" || u.Phone != "+44 1234" ||
		u.Language != "en" || u.CreatedAt.IsZero() || !u.UpdatedAt.Equal(u.CreatedAt) {
		t.Fatalf("created %+v", u)
	}
	var fields map[string]any
	if err := json.Unmarshal(u.CustomFields, &fields); err != nil || fields["plan"] != "gold" || fields["seats"] != 3.0 {
		t.Fatalf("custom fields %s %v", u.CustomFields, err)
	}
	got, err := s.EndUser(ctx, tenantA, u.ID)
	if err != nil || got.Name != "Ada" {
		t.Fatalf("get %+v %v", got, err)
	}
	// Another customer's id is not found, for every operation.
	_, err = s.EndUser(ctx, tenantB, u.ID)
	wantCode(t, err, apperr.NotFound)
	_, err = s.UpdateEndUser(ctx, tenantB, u.ID, in)
	wantCode(t, err, apperr.NotFound)
	_, err = s.DeleteEndUser(ctx, tenantB, u.ID)
	wantCode(t, err, apperr.NotFound)

	// Optional fields become absent (NULL) on replace.
	u2, err := s.UpdateEndUser(ctx, tenantA, u.ID, tickets.EndUserInput{Name: "Ada L.", CustomFields: json.RawMessage(`{}`)})
	if err != nil || u2.Name != "Ada L." || u2.Email != "" || u2.Phone != "" || u2.Language != "" || string(u2.CustomFields) != "{}" ||
		!u2.CreatedAt.Equal(u.CreatedAt) {
		t.Fatalf("updated %+v %v", u2, err)
	}
	if _, err := s.DeleteEndUser(ctx, tenantA, u.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.EndUser(ctx, tenantA, u.ID)
	wantCode(t, err, apperr.NotFound)
	_, err = s.DeleteEndUser(ctx, tenantA, u.ID)
	wantCode(t, err, apperr.NotFound)

	evs := events(t, pool)
	if len(evs) != 3 || evs[0].Type != contracts.EventEndUserCreated || evs[1].Type != contracts.EventEndUserUpdated ||
		evs[2].Type != contracts.EventEndUserDeleted {
		t.Fatalf("events %+v", evs)
	}
	if e := evs[0]; e.CustomerID != tenantA || e.Data.EndUserID != u.ID || e.Data.Email != "ada@example.com" ||
		e.Data.Language != "en" || !e.OccurredAt.Equal(clock) {
		t.Fatalf("created event %+v", e)
	}
	if e := evs[2]; e.Data.Name != "Ada L." || e.Data.EndUserID != u.ID {
		t.Fatalf("deleted event %+v", e)
	}
}

// E-mail addresses are unique per customer (stored lower-case by the
// domain); several end users may have none.
func TestEndUserEmailUniquePerCustomer(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	a := create(t, s, tenantA, "A", "same@example.com")
	create(t, s, tenantB, "B", "same@example.com")
	create(t, s, tenantA, "No mail 1", "")
	c := create(t, s, tenantA, "No mail 2", "")
	_, err := s.CreateEndUser(ctx, tenantA, tickets.EndUserInput{Name: "Dup", Email: "same@example.com", CustomFields: json.RawMessage(`{}`)})
	if e := wantCode(t, err, apperr.Conflict); e.Fields["email"] == "" {
		t.Fatalf("conflict without the field: %v", e)
	}
	_, err = s.UpdateEndUser(ctx, tenantA, c.ID, tickets.EndUserInput{Name: "C", Email: "same@example.com", CustomFields: json.RawMessage(`{}`)})
	wantCode(t, err, apperr.Conflict)
	// Keeping its own address is no conflict.
	if _, err := s.UpdateEndUser(ctx, tenantA, a.ID, tickets.EndUserInput{Name: "A2", Email: "same@example.com", CustomFields: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	// The refused changes wrote no event.
	if n := len(events(t, pool)); n != 5 {
		t.Fatalf("%d events", n)
	}
	// The schema refuses mixed case written past the domain.
	if _, err := pool.Exec(ctx, `INSERT INTO end_users (customer_id, name, email) VALUES (1, 'x', 'Upper@example.com')`); err == nil {
		t.Fatal("mixed-case address stored")
	}
}

func TestDeleteEndUserWithTickets(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	u := create(t, s, tenantA, "Has tickets", "t@example.com")
	if _, err := pool.Exec(ctx, `INSERT INTO tickets (customer_id, channel_id, end_user_id, subject, status, ticket_token) VALUES ($1, 1, $2, 'Help', 'Open', 'tok-help')`, tenantA, u.ID); err != nil {
		t.Fatal(err)
	}
	// A ticket cannot point at another customer's end user.
	if _, err := pool.Exec(ctx, `INSERT INTO tickets (customer_id, channel_id, end_user_id, subject, status, ticket_token) VALUES ($1, 1, $2, 'x', 'Open', 'tok-x')`, tenantB, u.ID); err == nil {
		t.Fatal("ticket of customer B refers to A's end user")
	}
	_, err := s.DeleteEndUser(ctx, tenantA, u.ID)
	wantCode(t, err, apperr.Conflict)
	if _, err := s.EndUser(ctx, tenantA, u.ID); err != nil {
		t.Fatalf("end user gone after refused delete: %v", err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM tickets`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteEndUser(ctx, tenantA, u.ID); err != nil {
		t.Fatal(err)
	}
}

func TestListEndUsers(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	carol := create(t, s, tenantA, "carol", "carol@shop.example")
	bob := create(t, s, tenantA, "Bob", "bob@example.com")
	alice, err := s.CreateEndUser(ctx, tenantA, tickets.EndUserInput{Name: "Alice", Phone: "+1 (555) 0100", CustomFields: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	create(t, s, tenantB, "Other tenant", "bob2@example.com")

	ids := func(us []tickets.EndUser) []int64 {
		out := []int64{}
		for _, u := range us {
			out = append(out, u.ID)
		}
		return out
	}
	page := paging.Page{Number: 1, Size: 20}
	cases := []struct {
		name  string
		f     tickets.EndUserFilter
		p     paging.Page
		want  []int64
		total int
	}{
		{"all by id", tickets.EndUserFilter{}, page, []int64{carol.ID, bob.ID, alice.ID}, 3},
		{"by id desc", tickets.EndUserFilter{Sort: tickets.EndUserSort{By: tickets.SortByID, Desc: true}}, page, []int64{alice.ID, bob.ID, carol.ID}, 3},
		{"by name ignoring case", tickets.EndUserFilter{Sort: tickets.EndUserSort{By: tickets.SortByName}}, page, []int64{alice.ID, bob.ID, carol.ID}, 3},
		{"by name desc", tickets.EndUserFilter{Sort: tickets.EndUserSort{By: tickets.SortByName, Desc: true}}, page, []int64{carol.ID, bob.ID, alice.ID}, 3},
		{"by date created desc", tickets.EndUserFilter{Sort: tickets.EndUserSort{By: tickets.SortByCreated, Desc: true}}, page, []int64{alice.ID, bob.ID, carol.ID}, 3},
		{"email exact ignoring case", tickets.EndUserFilter{Email: "BOB@Example.com"}, page, []int64{bob.ID}, 1},
		{"email is not a substring match", tickets.EndUserFilter{Email: "bob@example"}, page, []int64{}, 0},
		{"q in name", tickets.EndUserFilter{Q: "ALI"}, page, []int64{alice.ID}, 1},
		{"q in email", tickets.EndUserFilter{Q: "shop.EX"}, page, []int64{carol.ID}, 1},
		{"q in phone", tickets.EndUserFilter{Q: "(555)"}, page, []int64{alice.ID}, 1},
		{"q matches several", tickets.EndUserFilter{Q: "E"}, page, []int64{carol.ID, bob.ID, alice.ID}, 3},
		{"q with LIKE characters is literal", tickets.EndUserFilter{Q: "%"}, page, []int64{}, 0},
		{"second page", tickets.EndUserFilter{}, paging.Page{Number: 2, Size: 2}, []int64{alice.ID}, 3},
		{"past the end", tickets.EndUserFilter{}, paging.Page{Number: 3, Size: 2}, []int64{}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			us, total, err := s.ListEndUsers(ctx, tenantA, tc.f, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(us); total != tc.total || len(got) != len(tc.want) {
				t.Fatalf("got %v (total %d), want %v (total %d)", got, total, tc.want, tc.total)
			} else {
				for i := range got {
					if got[i] != tc.want[i] {
						t.Fatalf("got %v, want %v", got, tc.want)
					}
				}
			}
		})
	}
}
