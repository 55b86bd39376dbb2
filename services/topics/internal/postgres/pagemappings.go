package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/topics/internal/topics"
)

const pageMappingCols = `page_topic_mapping_id, customer_id, topic_id, url_pattern, match_type`

func scanPageMapping(row pgx.Row) (topics.PageMapping, error) {
	var m topics.PageMapping
	var mt string
	err := row.Scan(&m.ID, &m.CustomerID, &m.TopicID, &m.URLPattern, &mt)
	m.MatchType = topics.MatchType(mt)
	return m, err
}

const livePageMappings = `FROM page_topic_mappings m
	JOIN topics t ON t.customer_id = m.customer_id AND t.topic_id = m.topic_id AND t.deleted_at IS NULL`

// ListPageMappings pages through the page mappings of live topics in id order.
func (s *Store) ListPageMappings(ctx context.Context, customerID int64, f topics.PageMappingFilter, p paging.Page) ([]topics.PageMapping, int, error) {
	const where = ` WHERE m.customer_id = $1
		AND ($2::bigint IS NULL OR m.topic_id = $2)
		AND ($3::text IS NULL OR m.match_type = $3)`
	return postgres.Page(ctx, s.db, "page topic mapping",
		`SELECT count(*) `+livePageMappings+where,
		`SELECT `+prefixCols("m.", pageMappingCols)+` `+livePageMappings+where+`
			ORDER BY m.page_topic_mapping_id LIMIT $4 OFFSET $5`,
		scanPageMapping, p, customerID, f.TopicID, nullText(string(f.MatchType)))
}

// PageMapping returns one page mapping of a live topic.
func (s *Store) PageMapping(ctx context.Context, customerID, id int64) (topics.PageMapping, error) {
	m, err := scanPageMapping(s.db.QueryRow(ctx, `SELECT `+prefixCols("m.", pageMappingCols)+` `+livePageMappings+`
		WHERE m.customer_id = $1 AND m.page_topic_mapping_id = $2`, customerID, id))
	return m, postgres.Error(err, "page topic mapping")
}

func pageMappingError(err error) error {
	if postgres.UniqueViolation(err, "page_topic_mappings_pattern_key") {
		return &apperr.Error{Code: apperr.Conflict, Message: "this topic already has a mapping with this URL pattern and match type",
			Fields: map[string]string{"urlPattern": "is already mapped to this topic with this match type"}, Err: err}
	}
	return postgres.Error(err, "page topic mapping")
}

// CreatePageMapping inserts a mapping to a live topic.
func (s *Store) CreatePageMapping(ctx context.Context, customerID int64, in topics.PageMapping) (topics.PageMapping, error) {
	var m topics.PageMapping
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		if err := lockLiveTopic(ctx, tx, customerID, in.TopicID); err != nil {
			return err
		}
		var err error
		m, err = scanPageMapping(tx.QueryRow(ctx, `INSERT INTO page_topic_mappings (customer_id, topic_id, url_pattern, match_type)
			VALUES ($1, $2, $3, $4) RETURNING `+pageMappingCols, customerID, in.TopicID, in.URLPattern, string(in.MatchType)))
		if err != nil {
			return err
		}
		return s.addMappingEvents(ctx, tx, contracts.EventPageMappingChanged, customerID, pageMappingChange(topics.OpCreated, m))
	})
	return m, pageMappingError(err)
}

// UpdatePageMapping replaces topic, pattern and match type of a mapping of a
// live topic; the new topic must be live too.
func (s *Store) UpdatePageMapping(ctx context.Context, customerID, id int64, in topics.PageMapping) (topics.PageMapping, error) {
	var m topics.PageMapping
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 `+livePageMappings+`
			WHERE m.customer_id = $1 AND m.page_topic_mapping_id = $2 FOR UPDATE OF m`, customerID, id).Scan(&one); err != nil {
			return err
		}
		if err := lockLiveTopic(ctx, tx, customerID, in.TopicID); err != nil {
			return err
		}
		var err error
		m, err = scanPageMapping(tx.QueryRow(ctx, `UPDATE page_topic_mappings SET topic_id = $3, url_pattern = $4, match_type = $5, updated_at = now()
			WHERE customer_id = $1 AND page_topic_mapping_id = $2 RETURNING `+pageMappingCols,
			customerID, id, in.TopicID, in.URLPattern, string(in.MatchType)))
		if err != nil {
			return err
		}
		return s.addMappingEvents(ctx, tx, contracts.EventPageMappingChanged, customerID, pageMappingChange(topics.OpUpdated, m))
	})
	return m, pageMappingError(err)
}

// DeletePageMapping deletes a mapping of a live topic and returns it.
func (s *Store) DeletePageMapping(ctx context.Context, customerID, id int64) (topics.PageMapping, error) {
	var m topics.PageMapping
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		m, err = scanPageMapping(tx.QueryRow(ctx, `DELETE FROM page_topic_mappings m USING topics t
			WHERE m.customer_id = $1 AND m.page_topic_mapping_id = $2
			  AND t.customer_id = m.customer_id AND t.topic_id = m.topic_id AND t.deleted_at IS NULL
			RETURNING `+prefixCols("m.", pageMappingCols), customerID, id))
		if err != nil {
			return err
		}
		return s.addMappingEvents(ctx, tx, contracts.EventPageMappingChanged, customerID, pageMappingChange(topics.OpDeleted, m))
	})
	return m, postgres.Error(err, "page topic mapping")
}
