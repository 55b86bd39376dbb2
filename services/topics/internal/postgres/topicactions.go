package postgres

import (
	"context"
	"sort"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/topics/internal/topics"
)

const topicActionCols = `topic_action_id, customer_id, topic_id, action_id, priority, is_active`

func scanTopicAction(row pgx.Row) (topics.TopicAction, error) {
	var m topics.TopicAction
	err := row.Scan(&m.ID, &m.CustomerID, &m.TopicID, &m.ActionID, &m.Priority, &m.IsActive)
	return m, err
}

// liveTopicActions is the FROM clause of every read: mappings of live topics
// with their action.
const liveTopicActions = `FROM topic_actions ta
	JOIN topics t ON t.customer_id = ta.customer_id AND t.topic_id = ta.topic_id AND t.deleted_at IS NULL
	JOIN actions a ON a.customer_id = ta.customer_id AND a.action_id = ta.action_id`

// ListTopicActions pages through the mappings of live topics, by topic and
// then priority. hookName matches the action's case-insensitively;
// channelId matches the action's channel exactly.
func (s *Store) ListTopicActions(ctx context.Context, customerID int64, f topics.TopicActionFilter, p paging.Page) ([]topics.TopicAction, int, error) {
	const where = ` WHERE ta.customer_id = $1
		AND ($2::bigint IS NULL OR ta.topic_id = $2)
		AND ($3::bigint IS NULL OR ta.action_id = $3)
		AND ($4::text IS NULL OR lower(a.hook_name) = lower($4))
		AND ($5::bigint IS NULL OR a.channel_id = $5)
		AND ($6::boolean IS NULL OR ta.is_active = $6)`
	return postgres.Page(ctx, s.db, "topic action",
		`SELECT count(*) `+liveTopicActions+where,
		`SELECT `+prefixCols("ta.", topicActionCols)+` `+liveTopicActions+where+`
			ORDER BY ta.topic_id, ta.priority, ta.topic_action_id LIMIT $7 OFFSET $8`,
		scanTopicAction, p, customerID, f.TopicID, f.ActionID, nullText(f.HookName), f.ChannelID, f.IsActive)
}

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// TopicAction returns one mapping of a live topic.
func (s *Store) TopicAction(ctx context.Context, customerID, id int64) (topics.TopicAction, error) {
	m, err := scanTopicAction(s.db.QueryRow(ctx, `SELECT `+prefixCols("ta.", topicActionCols)+` `+liveTopicActions+`
		WHERE ta.customer_id = $1 AND ta.topic_action_id = $2`, customerID, id))
	return m, postgres.Error(err, "topic action")
}

// CreateTopicActions inserts the mappings in one transaction. It locks the
// referenced live topics and actions, reports what exists to check, and
// inserts only when check accepts: all or nothing (topic.action.changed,
// created, for each, in request order).
func (s *Store) CreateTopicActions(ctx context.Context, customerID int64, items []topics.NewTopicAction, check func(topics.TopicActionRefs) error) ([]topics.TopicAction, error) {
	var created []topics.TopicAction
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		refs, err := topicActionRefs(ctx, tx, customerID, items)
		if err != nil {
			return err
		}
		if err := check(refs); err != nil {
			return err
		}
		// Insert in (topic, action) order whatever the request order, so two
		// overlapping bulk requests take the unique-index locks in the same
		// order and one waits for the other instead of deadlocking.
		order := make([]int, len(items))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool {
			x, y := items[order[a]], items[order[b]]
			return x.TopicID < y.TopicID || x.TopicID == y.TopicID && x.ActionID < y.ActionID
		})
		created = make([]topics.TopicAction, len(items))
		for _, i := range order {
			it := items[i]
			m, err := scanTopicAction(tx.QueryRow(ctx, `INSERT INTO topic_actions (customer_id, topic_id, action_id, priority, is_active)
				VALUES ($1, $2, $3, $4, $5) RETURNING `+topicActionCols, customerID, it.TopicID, it.ActionID, it.Priority, it.IsActive))
			if postgres.UniqueViolation(err, "topic_actions_pair_key") {
				// A concurrent request mapped this pair after our check: let
				// check name the item as it names pairs it saw.
				refs.Existing[[2]int64{it.TopicID, it.ActionID}] = true
				if cerr := check(refs); cerr != nil {
					return cerr
				}
			}
			if err != nil {
				return err
			}
			created[i] = m
		}
		return s.addMappingEvents(ctx, tx, contracts.EventTopicActionChanged, customerID,
			paging.Map(created, func(m topics.TopicAction) contracts.MappingChanged { return topicActionChange(topics.OpCreated, m) })...)
	})
	return created, postgres.Error(err, "topic action")
}

func topicActionRefs(ctx context.Context, tx pgx.Tx, customerID int64, items []topics.NewTopicAction) (topics.TopicActionRefs, error) {
	refs := topics.TopicActionRefs{Topics: map[int64]bool{}, Actions: map[int64]bool{}, Existing: map[[2]int64]bool{}}
	topicIDs := make([]int64, 0, len(items))
	actionIDs := make([]int64, 0, len(items))
	for _, it := range items {
		topicIDs = append(topicIDs, it.TopicID)
		actionIDs = append(actionIDs, it.ActionID)
	}
	ids, err := postgres.Collect(ctx, tx, "topic", `SELECT topic_id FROM topics
		WHERE customer_id = $1 AND topic_id = ANY($2) AND deleted_at IS NULL ORDER BY topic_id FOR SHARE`, scanID, customerID, topicIDs)
	if err != nil {
		return refs, err
	}
	for _, id := range ids {
		refs.Topics[id] = true
	}
	if ids, err = postgres.Collect(ctx, tx, "action", `SELECT action_id FROM actions
		WHERE customer_id = $1 AND action_id = ANY($2) ORDER BY action_id FOR SHARE`, scanID, customerID, actionIDs); err != nil {
		return refs, err
	}
	for _, id := range ids {
		refs.Actions[id] = true
	}
	pairs, err := postgres.Collect(ctx, tx, "topic action", `SELECT topic_id, action_id FROM topic_actions
		WHERE customer_id = $1 AND topic_id = ANY($2) AND action_id = ANY($3)`,
		func(r pgx.Row) ([2]int64, error) {
			var p [2]int64
			err := r.Scan(&p[0], &p[1])
			return p, err
		}, customerID, topicIDs, actionIDs)
	if err != nil {
		return refs, err
	}
	for _, p := range pairs {
		refs.Existing[p] = true
	}
	return refs, nil
}

func scanID(r pgx.Row) (int64, error) {
	var id int64
	err := r.Scan(&id)
	return id, err
}

// changeTopicAction runs one statement returning a mapping and writes its
// topic.action.changed event, in one transaction.
func (s *Store) changeTopicAction(ctx context.Context, customerID int64, op, sql string, args ...any) (topics.TopicAction, error) {
	var m topics.TopicAction
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		if m, err = scanTopicAction(tx.QueryRow(ctx, sql, args...)); err != nil {
			return err
		}
		return s.addMappingEvents(ctx, tx, contracts.EventTopicActionChanged, customerID, topicActionChange(op, m))
	})
	return m, postgres.Error(err, "topic action")
}

// UpdateTopicActionPriority sets the priority of a mapping of a live topic.
func (s *Store) UpdateTopicActionPriority(ctx context.Context, customerID, id int64, priority int) (topics.TopicAction, error) {
	return s.changeTopicAction(ctx, customerID, topics.OpUpdated, `UPDATE topic_actions ta SET priority = $3, updated_at = now()
		FROM topics t
		WHERE ta.customer_id = $1 AND ta.topic_action_id = $2
		  AND t.customer_id = ta.customer_id AND t.topic_id = ta.topic_id AND t.deleted_at IS NULL
		RETURNING `+prefixCols("ta.", topicActionCols), customerID, id, priority)
}

// DeleteTopicAction deletes a mapping of a live topic and returns it.
func (s *Store) DeleteTopicAction(ctx context.Context, customerID, id int64) (topics.TopicAction, error) {
	return s.changeTopicAction(ctx, customerID, topics.OpDeleted, `DELETE FROM topic_actions ta USING topics t
		WHERE ta.customer_id = $1 AND ta.topic_action_id = $2
		  AND t.customer_id = ta.customer_id AND t.topic_id = ta.topic_id AND t.deleted_at IS NULL
		RETURNING `+prefixCols("ta.", topicActionCols), customerID, id)
}

// ActiveActions lists the active mappings to active actions of a live topic,
// lowest priority number first.
func (s *Store) ActiveActions(ctx context.Context, customerID, topicID int64) ([]topics.LinkedAction, error) {
	return postgres.Collect(ctx, s.db, "topic action", `SELECT ta.topic_action_id, a.action_id, a.name, a.hook_name, ta.priority, a.requires_confirmation
		`+liveTopicActions+`
		WHERE ta.customer_id = $1 AND ta.topic_id = $2 AND ta.is_active AND a.is_active
		ORDER BY ta.priority, ta.topic_action_id`,
		func(r pgx.Row) (topics.LinkedAction, error) {
			var l topics.LinkedAction
			err := r.Scan(&l.TopicActionID, &l.ActionID, &l.Name, &l.HookName, &l.Priority, &l.RequiresConfirmation)
			return l, err
		}, customerID, topicID)
}
