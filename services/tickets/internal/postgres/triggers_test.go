package postgres_test

import (
	"context"
	"strings"
	"testing"
)

// Deleting a ticket from a session whose search_path is not the schema's
// (an administrator's) still queues its attachments' bytes (migration 007).
func TestAttachmentTriggerUnderAnotherSearchPath(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	u := create(t, s, tenantA, "Ada", "")
	for _, sql := range []string{
		`INSERT INTO tickets (ticket_id, customer_id, end_user_id, channel_id, subject, status, ticket_token)
			VALUES (7, $1, $2, 1, 's', 'Open', 'tok-7')`,
		`INSERT INTO ticket_messages (message_id, customer_id, ticket_id, sender_type, message) VALUES (8, $1, 7, 'Agent', 'm')`,
		`INSERT INTO attachments (customer_id, message_id, file_name, content_type, size, sha256, object_key)
			VALUES ($1, 8, 'a.txt', 'text/plain', 1, 'x', 'key-under-public')`,
	} {
		args := []any{tenantA, u.ID}
		if !strings.Contains(sql, "$2") {
			args = args[:1]
		}
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `SET search_path TO public; DELETE FROM tickets.tickets WHERE ticket_id = 7; RESET search_path`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM blob_garbage WHERE object_key = 'key-under-public'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("queued %d, %v", n, err)
	}
}

// Migration 016: ticket_activity (the dateUpdated order's table) follows
// every insert, update and delete of tickets, whatever the statement; an
// update that leaves updated_at as it was writes no activity row.
func TestTicketActivityFollowsTickets(t *testing.T) {
	_, pool := newStore(t)
	ctx := context.Background()
	diff := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM tickets t FULL JOIN ticket_activity a ON a.ticket_id = t.ticket_id
			WHERE a.ticket_id IS NULL OR t.ticket_id IS NULL OR a.updated_at <> t.updated_at OR a.customer_id <> t.customer_id`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	steps := []string{
		`INSERT INTO end_users (end_user_id, customer_id, name) VALUES (1, 1, 'Ada'), (2, 2, 'Eve')`,
		`INSERT INTO tickets (customer_id, end_user_id, channel_id, subject, status, ticket_token, created_at, updated_at)
			SELECT 1 + i % 2, 1 + i % 2, 1, 's' || i, 'Open', 'tok-' || i, now() - i * interval '1 minute', now() - i * interval '1 minute'
			FROM generate_series(1, 50) i`,
		`UPDATE tickets SET updated_at = updated_at + interval '1 hour' WHERE ticket_id % 3 = 0`,
		`UPDATE tickets SET status = 'Closed' WHERE ticket_id % 5 = 0`,
		`DELETE FROM tickets WHERE ticket_id % 7 = 0`,
		// An administrator's renumbering (no messages on these tickets).
		`UPDATE tickets SET ticket_id = ticket_id + 1000, status = 'Pending' WHERE ticket_id % 11 = 0`,
		// A rep, then a channel, changed with the status unchanged: the
		// per-rep and per-channel counters (015) follow.
		`UPDATE tickets SET customer_rep_id = 1 + ticket_id % 3 WHERE ticket_id % 2 = 0`,
		`UPDATE tickets SET channel_id = 2 WHERE ticket_id % 4 = 0`,
		`UPDATE tickets SET customer_rep_id = NULL WHERE ticket_id % 6 = 0`,
	}
	for _, sql := range steps {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
		if n := diff(); n != 0 {
			t.Fatalf("after %.40s: %d tickets differ from their activity rows", sql, n)
		}
		tkCounts(t, pool)
	}
	var n, counted int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ticket_activity`).Scan(&n); err != nil || n != 43 {
		t.Fatalf("%d activity rows, %v; want 43", n, err)
	}
	// The counters followed the status changes, the renumbering's too.
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT customer_id, status, count(*) AS n FROM tickets GROUP BY 1, 2) t
		FULL JOIN (SELECT customer_id, status, sum(n) AS n FROM ticket_counts GROUP BY 1, 2 HAVING sum(n) <> 0) c USING (customer_id, status)
		WHERE t.n IS DISTINCT FROM c.n`).Scan(&counted); err != nil || counted != 0 {
		t.Fatalf("%d counters differ from the tickets, %v", counted, err)
	}
}
