package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Topic names are kept in topic_names: written by an assignment with the
// names topics gave it, and kept current by topic.updated and topic.deleted
// (RenameTopic, ForgetTopic). Each row is dated by the newest information
// it holds (updated_at), so an older name never replaces a newer one, in
// whatever order assignments and events arrive. A deleted topic stays as a
// tombstone (deleted_at) that is never assigned or renamed again.
//
// An assignment and topic.deleted both lock the topic's row first (an
// upsert) and touch message_topics after, so the two cannot interleave: a
// deletion handled while an assignment runs either waits for it and then
// removes what it added, or makes it fail with the topic unknown.

// upsertTopicNames stores names dated asOf, locking each row (in id order,
// so that two assignments never wait on each other in opposite orders).
// It returns the ids among names that are tombstones.
func upsertTopicNames(ctx context.Context, tx pgx.Tx, customerID int64, names map[int64]string, asOf time.Time) ([]int64, error) {
	ids := make([]int64, 0, len(names))
	for id := range names {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	texts := make([]string, len(ids))
	for i, id := range ids {
		texts[i] = names[id]
	}
	if _, err := tx.Exec(ctx, `INSERT INTO topic_names AS n (customer_id, topic_id, name, updated_at)
		SELECT $1, u.id, u.name, $4 FROM unnest($2::bigint[], $3::text[]) AS u (id, name) ORDER BY u.id
		ON CONFLICT (customer_id, topic_id) DO UPDATE SET name = EXCLUDED.name, updated_at = EXCLUDED.updated_at
		WHERE n.deleted_at IS NULL AND n.updated_at < EXCLUDED.updated_at`,
		customerID, ids, texts, asOf); err != nil {
		return nil, err
	}
	return postgres.Collect(ctx, tx, "topic", `SELECT topic_id FROM topic_names
		WHERE customer_id = $1 AND topic_id = ANY($2) AND deleted_at IS NOT NULL ORDER BY topic_id`,
		func(r pgx.Row) (int64, error) {
			var id int64
			return id, r.Scan(&id)
		}, customerID, ids)
}

// AssignTopics replaces the topics of a message of the customer with
// a.TopicIDs (kept topics keep their ticketMessageTopicID) and, when the
// list changed, writes ticket.message.topics-assigned and one
// topic.action.triggered per active action of each topic it added, in
// a.Triggered's order, as the assignment's Plan decides against the locked
// message. The message remembers the assignment's source.
func (s *Store) AssignTopics(ctx context.Context, customerID, id int64, a tickets.TopicAssignment) error {
	return postgres.Error(s.inTx(ctx, func(tx pgx.Tx) error {
		m, t, err := s.lockMessage(ctx, tx, customerID, id)
		if err != nil {
			return err
		}
		had := make([]int64, len(m.Topics))
		for i, mt := range m.Topics {
			had[i] = mt.TopicID
		}
		plan, err := a.Plan(had, m.TopicsSource)
		if err != nil {
			return err
		}
		if len(a.Names) > 0 {
			deleted, err := upsertTopicNames(ctx, tx, customerID, a.Names, a.NamesAsOf)
			if err != nil {
				return err
			}
			if len(deleted) > 0 {
				return tickets.UnknownTopics(deleted)
			}
		}
		if plan.SourceOnly {
			if _, err := tx.Exec(ctx, `UPDATE ticket_messages SET topics_source = $3 WHERE customer_id = $1 AND message_id = $2`,
				customerID, id, a.Source); err != nil {
				return err
			}
			return s.addTriggered(ctx, tx, customerID, id, t.ID, a, plan.Triggered)
		}
		if !plan.Replace {
			return nil
		}
		now := s.now()
		keep := a.TopicIDs
		if keep == nil {
			keep = []int64{}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM message_topics WHERE customer_id = $1 AND message_id = $2
			AND NOT (topic_id = ANY($3))`, customerID, id, keep); err != nil {
			return err
		}
		if len(plan.Added) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO message_topics (customer_id, message_id, topic_id, created_at)
				SELECT $1, $2, u.id, $4 FROM unnest($3::bigint[]) WITH ORDINALITY AS u (id, n) ORDER BY u.n`,
				customerID, id, plan.Added, now); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE ticket_messages SET updated_at = $3, topics_source = $4
			WHERE customer_id = $1 AND message_id = $2`, customerID, id, now, a.Source); err != nil {
			return err
		}
		if err := s.addEvent(ctx, tx, contracts.EventTopicsAssigned, customerID, contracts.TopicsAssigned{
			MessageID: id, TicketID: t.ID, TopicIDs: keep, Source: a.Source,
		}); err != nil {
			return err
		}
		return s.addTriggered(ctx, tx, customerID, id, t.ID, a, plan.Triggered)
	}), "message")
}

// addTriggered writes one topic.action.triggered per action, in order.
func (s *Store) addTriggered(ctx context.Context, tx pgx.Tx, customerID, messageID, ticketID int64, a tickets.TopicAssignment, acts []tickets.TriggeredAction) error {
	for _, act := range acts {
		if err := s.addEvent(ctx, tx, contracts.EventTopicActionTriggered, customerID, contracts.TopicActionTriggered{
			MessageID: messageID, TicketID: ticketID, TopicID: act.TopicID, TopicActionID: act.TopicActionID,
			ActionID: act.ActionID, Name: act.Name, HookName: act.HookName, Priority: act.Priority,
			Source: a.Source, Confirmed: act.Confirmed,
		}); err != nil {
			return err
		}
	}
	return nil
}

// RenameTopic stores a topic's name as of at (topic.updated): ignored when
// the stored name is newer or the topic was deleted.
func (s *Store) RenameTopic(ctx context.Context, customerID, topicID int64, name string, at time.Time) error {
	_, err := s.db.Exec(ctx, `INSERT INTO topic_names AS n (customer_id, topic_id, name, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (customer_id, topic_id) DO UPDATE SET name = EXCLUDED.name, updated_at = EXCLUDED.updated_at
		WHERE n.deleted_at IS NULL AND n.updated_at < EXCLUDED.updated_at`, customerID, topicID, name, at)
	return postgres.Error(err, "topic")
}

// ForgetTopic turns a deleted topic into a tombstone and removes it from
// every message (topic.deleted). Handling it again changes nothing.
func (s *Store) ForgetTopic(ctx context.Context, customerID, topicID int64, at time.Time) error {
	return postgres.Error(s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO topic_names AS n (customer_id, topic_id, name, updated_at, deleted_at)
			VALUES ($1, $2, '', $3, $3)
			ON CONFLICT (customer_id, topic_id) DO UPDATE SET deleted_at = coalesce(n.deleted_at, EXCLUDED.deleted_at)`,
			customerID, topicID, at); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM message_topics WHERE customer_id = $1 AND topic_id = $2`, customerID, topicID)
		return err
	}), "topic")
}
