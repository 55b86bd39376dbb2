package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/topics/internal/topics"
)

const topicCols = `topic_id, customer_id, name, description, created_at, updated_at`

func scanTopic(row pgx.Row) (topics.Topic, error) {
	var t topics.Topic
	err := row.Scan(&t.ID, &t.CustomerID, &t.Name, &t.Description, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

// topicOrder is the whitelist of ORDER BY clauses; nothing from the request
// reaches the SQL text.
func topicOrder(s topics.TopicSort) string {
	switch {
	case s.ByName && s.Desc:
		return "lower(name) DESC, topic_id DESC"
	case s.ByName:
		return "lower(name), topic_id"
	case s.Desc:
		return "topic_id DESC"
	default:
		return "topic_id"
	}
}

// ListTopics pages through the live topics, optionally those whose name
// contains a substring (case-insensitively). Without a name the total is
// the customer's counter (topic_counts, kept by triggers) and the statement
// has no name condition at all; with one the matches are counted.
func (s *Store) ListTopics(ctx context.Context, customerID int64, f topics.TopicFilter, p paging.Page) ([]topics.Topic, int, error) {
	const live = `WHERE customer_id = $1 AND deleted_at IS NULL`
	order := ` ORDER BY ` + topicOrder(f.Sort)
	if f.NameContains == "" {
		return postgres.Page(ctx, s.db, "topic",
			`SELECT coalesce(sum(n), 0)::bigint FROM topic_counts WHERE customer_id = $1`,
			`SELECT `+topicCols+` FROM topics `+live+order+` LIMIT $2 OFFSET $3`,
			scanTopic, p, customerID)
	}
	const named = live + ` AND strpos(lower(name), lower($2)) > 0`
	return postgres.Page(ctx, s.db, "topic",
		`SELECT count(*) FROM topics `+named,
		`SELECT `+topicCols+` FROM topics `+named+order+` LIMIT $3 OFFSET $4`,
		scanTopic, p, customerID, f.NameContains)
}

// Topic returns a live topic.
func (s *Store) Topic(ctx context.Context, customerID, id int64) (topics.Topic, error) {
	t, err := scanTopic(s.db.QueryRow(ctx, `SELECT `+topicCols+` FROM topics
		WHERE customer_id = $1 AND topic_id = $2 AND deleted_at IS NULL`, customerID, id))
	return t, postgres.Error(err, "topic")
}

func topicNameError(err error, name string) error {
	if postgres.UniqueViolation(err, "topics_name_key") {
		return &apperr.Error{Code: apperr.Conflict, Message: fmt.Sprintf("a topic named %q already exists", name),
			Fields: map[string]string{"name": "is already used by another topic"}, Err: err}
	}
	return postgres.Error(err, "topic")
}

// changeTopic runs one statement returning a topic and writes its event,
// in one transaction.
func (s *Store) changeTopic(ctx context.Context, eventType, sql string, args ...any) (topics.Topic, error) {
	var t topics.Topic
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		if t, err = scanTopic(tx.QueryRow(ctx, sql, args...)); err != nil {
			return err
		}
		return s.addTopicEvent(ctx, tx, eventType, t)
	})
	return t, err
}

// CreateTopic inserts a topic (topic.created).
func (s *Store) CreateTopic(ctx context.Context, customerID int64, in topics.TopicInput) (topics.Topic, error) {
	t, err := s.changeTopic(ctx, contracts.EventTopicCreated, `INSERT INTO topics (customer_id, name, description)
		VALUES ($1, $2, $3) RETURNING `+topicCols, customerID, in.Name, in.Description)
	return t, topicNameError(err, in.Name)
}

// UpdateTopic replaces name and description of a live topic (topic.updated).
func (s *Store) UpdateTopic(ctx context.Context, customerID, id int64, in topics.TopicInput) (topics.Topic, error) {
	t, err := s.changeTopic(ctx, contracts.EventTopicUpdated, `UPDATE topics SET name = $3, description = $4, updated_at = now()
		WHERE customer_id = $1 AND topic_id = $2 AND deleted_at IS NULL RETURNING `+topicCols,
		customerID, id, in.Name, in.Description)
	return t, topicNameError(err, in.Name)
}

// DeleteTopic soft-deletes a live topic and returns it (topic.deleted).
func (s *Store) DeleteTopic(ctx context.Context, customerID, id int64) (topics.Topic, error) {
	t, err := s.changeTopic(ctx, contracts.EventTopicDeleted, `UPDATE topics SET deleted_at = now(), updated_at = now()
		WHERE customer_id = $1 AND topic_id = $2 AND deleted_at IS NULL RETURNING `+topicCols, customerID, id)
	return t, postgres.Error(err, "topic")
}

// TopicNames maps the live topics among ids to their names.
func (s *Store) TopicNames(ctx context.Context, customerID int64, ids []int64) (map[int64]string, error) {
	rows, err := s.db.Query(ctx, `SELECT topic_id, name FROM topics
		WHERE customer_id = $1 AND topic_id = ANY($2) AND deleted_at IS NULL`, customerID, ids)
	if err != nil {
		return nil, postgres.Error(err, "topic")
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, postgres.Error(err, "topic")
		}
		out[id] = name
	}
	return out, postgres.Error(rows.Err(), "topic")
}

// AllTopics lists every live topic in id order.
func (s *Store) AllTopics(ctx context.Context, customerID int64) ([]topics.Topic, error) {
	return postgres.Collect(ctx, s.db, "topic", `SELECT `+topicCols+` FROM topics
		WHERE customer_id = $1 AND deleted_at IS NULL ORDER BY topic_id`, scanTopic, customerID)
}

// TopicsForURL returns the live topics mapped to url: exact patterns equal
// to it, and among the prefix patterns it starts with only the longest ones.
// Exact matches come first, then by topic id; each topic once.
func (s *Store) TopicsForURL(ctx context.Context, customerID int64, url string) ([]topics.Topic, error) {
	return postgres.Collect(ctx, s.db, "topic", `
		WITH live AS (
			SELECT m.topic_id, m.match_type, m.url_pattern
			FROM page_topic_mappings m
			JOIN topics t ON t.customer_id = m.customer_id AND t.topic_id = m.topic_id AND t.deleted_at IS NULL
			WHERE m.customer_id = $1
		), exact AS (
			SELECT topic_id FROM live WHERE match_type = 'exact' AND url_pattern = $2
		), prefixed AS (
			SELECT topic_id, length(url_pattern) AS len FROM live
			WHERE match_type = 'prefix' AND starts_with($2, url_pattern)
		), hits AS (
			SELECT topic_id, 0 AS rank FROM exact
			UNION ALL
			SELECT topic_id, 1 FROM prefixed WHERE len = (SELECT max(len) FROM prefixed)
		)
		SELECT `+prefixCols("t.", topicCols)+`
		FROM topics t JOIN (SELECT topic_id, min(rank) AS rank FROM hits GROUP BY topic_id) h USING (topic_id)
		WHERE t.customer_id = $1 AND t.deleted_at IS NULL
		ORDER BY h.rank, t.topic_id`, scanTopic, customerID, url)
}
