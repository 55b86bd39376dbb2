package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/topics/internal/topics"
)

const actionCols = `action_id, customer_id, name, hook_name, channel_id, is_active, requires_confirmation`

func scanAction(row pgx.Row) (topics.Action, error) {
	var a topics.Action
	err := row.Scan(&a.ID, &a.CustomerID, &a.Name, &a.HookName, &a.ChannelID, &a.IsActive, &a.RequiresConfirmation)
	return a, err
}

// ListActions pages through the actions in id order.
func (s *Store) ListActions(ctx context.Context, customerID int64, p paging.Page) ([]topics.Action, int, error) {
	return postgres.Page(ctx, s.db, "action",
		`SELECT count(*) FROM actions WHERE customer_id = $1`,
		`SELECT `+actionCols+` FROM actions WHERE customer_id = $1 ORDER BY action_id LIMIT $2 OFFSET $3`,
		scanAction, p, customerID)
}

// Action returns one action.
func (s *Store) Action(ctx context.Context, customerID, id int64) (topics.Action, error) {
	a, err := scanAction(s.db.QueryRow(ctx, `SELECT `+actionCols+` FROM actions WHERE customer_id = $1 AND action_id = $2`, customerID, id))
	return a, postgres.Error(err, "action")
}

// CreateAction inserts an action.
func (s *Store) CreateAction(ctx context.Context, customerID int64, in topics.Action) (topics.Action, error) {
	a, err := scanAction(s.db.QueryRow(ctx, `INSERT INTO actions (customer_id, name, hook_name, channel_id, is_active, requires_confirmation)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+actionCols, customerID, in.Name, in.HookName, in.ChannelID, in.IsActive, in.RequiresConfirmation))
	return a, postgres.Error(err, "action")
}

// UpdateAction replaces an action's fields.
func (s *Store) UpdateAction(ctx context.Context, customerID, id int64, in topics.Action) (topics.Action, error) {
	a, err := scanAction(s.db.QueryRow(ctx, `UPDATE actions SET name = $3, hook_name = $4, channel_id = $5, is_active = $6, requires_confirmation = $7, updated_at = now()
		WHERE customer_id = $1 AND action_id = $2 RETURNING `+actionCols, customerID, id, in.Name, in.HookName, in.ChannelID, in.IsActive, in.RequiresConfirmation))
	return a, postgres.Error(err, "action")
}

// DeleteAction deletes an action with its topic mappings, in one
// transaction, and returns the removed mappings (topic.action.changed,
// deleted, for each).
func (s *Store) DeleteAction(ctx context.Context, customerID, id int64) ([]topics.TopicAction, error) {
	var removed []topics.TopicAction
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM actions WHERE customer_id = $1 AND action_id = $2 FOR UPDATE`, customerID, id).Scan(&one); err != nil {
			return err
		}
		var err error
		if removed, err = postgres.Collect(ctx, tx, "topic action", `WITH removed AS (DELETE FROM topic_actions
			WHERE customer_id = $1 AND action_id = $2 RETURNING `+topicActionCols+`)
			SELECT `+topicActionCols+` FROM removed ORDER BY topic_action_id`, scanTopicAction, customerID, id); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `DELETE FROM actions WHERE customer_id = $1 AND action_id = $2`, customerID, id); err != nil {
			return err
		}
		return s.addMappingEvents(ctx, tx, contracts.EventTopicActionChanged, customerID,
			paging.Map(removed, func(m topics.TopicAction) contracts.MappingChanged { return topicActionChange(topics.OpDeleted, m) })...)
	})
	return removed, postgres.Error(err, "action")
}
