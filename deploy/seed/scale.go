package seed

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ScaleWord is in the subject of one ticket in 1,000 (ScaleTickets): the
// full-text search of make bench-scale.
const ScaleWord = "zanzibar"

// ScaleEndUsers makes n end users of a customer by SQL ("Scale user 1" ...)
// and returns their ids.
func ScaleEndUsers(ctx context.Context, db *pgxpool.Pool, customerID int64, n int) ([]int64, error) {
	rows, err := db.Query(ctx, `INSERT INTO tickets.end_users (customer_id, name, email)
		SELECT $1::bigint, 'Scale user ' || i, 'scale-user-' || i || '-' || $1::bigint || '@example.com' FROM generate_series(1, $2::int) i
		RETURNING end_user_id`, customerID, n)
	if err != nil {
		return nil, fmt.Errorf("seed end users: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// ScaleTickets writes tickets number from+1 to to of a customer by SQL, as
// the tickets service writes them (search vectors of the subject and of
// each message in English and simple): ticket i is i minutes older than the
// first, in status i % 5, of end user endUsers[i % len], of channel
// channelID when i % 5 == 0 (else of channel channelID + i % 5, a channel
// the list filter does not check), assigned to account 1000 + i % 10 when
// i is even; its subject names ScaleWord when i % 1000 == 0; it has three
// messages (end user, agent, end user). The counters follow by trigger.
// Run VACUUM ANALYZE afterwards (ScaleVacuum).
func ScaleTickets(ctx context.Context, db *pgxpool.Pool, customerID, channelID int64, endUsers []int64, from, to int) error {
	if len(endUsers) == 0 || to <= from {
		return nil
	}
	// In batches, so that one statement's memory stays small.
	const batch = 50_000
	for lo := from; lo < to; lo += batch {
		hi := min(lo+batch, to)
		_, err := db.Exec(ctx, `WITH t AS (
			INSERT INTO tickets.tickets (customer_id, channel_id, end_user_id, customer_rep_id, subject, status, ticket_token,
				search, search_config, created_at, updated_at)
			SELECT $1, CASE WHEN i % 5 = 0 THEN $2 ELSE $2 + i % 5 END, ($3::bigint[])[1 + i % cardinality($3::bigint[])],
				CASE WHEN i % 2 = 0 THEN 1000 + i % 10 END, s.subject,
				(ARRAY['Open','Pending','Escalated','Resolved','Closed'])[1 + i % 5], md5(random()::text || i),
				to_tsvector('english', s.subject) || to_tsvector('simple', s.subject), 'english', s.at, s.at + interval '5 minutes'
			FROM generate_series($4::int + 1, $5::int) AS i,
			LATERAL (SELECT format('Order %s: %s %s', i, ($6::text[])[1 + i % cardinality($6::text[])],
					($7::text[])[1 + (i / cardinality($6::text[])) % cardinality($7::text[])])
					|| CASE WHEN i % 1000 = 0 THEN ' ' || $8 ELSE '' END AS subject,
				timestamptz '2026-11-01 00:00:00+00' - make_interval(mins => i) AS at) AS s
			RETURNING ticket_id, created_at)
		INSERT INTO tickets.ticket_messages (customer_id, ticket_id, sender_type, message, search_config, search, created_at)
		SELECT $1, t.ticket_id, m.sender, m.text, 'english', to_tsvector('english', m.text) || to_tsvector('simple', m.text),
			t.created_at + m.n * interval '1 minute'
		FROM t, LATERAL (VALUES
			(0, 'EndUser', 'Hello, my parcel number ' || t.ticket_id || ' has not arrived yet, can you check where it is?'),
			(1, 'Agent', 'Thanks for your patience, the courier says the parcel left the depot this morning.'),
			(2, 'EndUser', 'It is still not here, I would like a refund for order ' || t.ticket_id || ' please.')) AS m(n, sender, text)`,
			customerID, channelID, endUsers, lo, hi, SubjectAdjectives, SubjectNouns, ScaleWord)
		if err != nil {
			return fmt.Errorf("seed tickets %d-%d of customer %d: %w", lo+1, hi, customerID, err)
		}
	}
	return nil
}

// ScaleVacuum is VACUUM ANALYZE of the tables ScaleTickets writes, as
// autovacuum leaves them: statistics, and the GIN indexes' pending lists
// merged.
func ScaleVacuum(ctx context.Context, db *pgxpool.Pool) error {
	for _, table := range []string{"tickets.tickets", "tickets.ticket_messages", "tickets.end_users", "tickets.ticket_counts"} {
		if _, err := db.Exec(ctx, "VACUUM ANALYZE "+table); err != nil {
			return err
		}
	}
	return nil
}
