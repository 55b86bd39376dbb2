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
