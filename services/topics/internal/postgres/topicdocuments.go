package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/topics/internal/topics"
)

const topicDocumentCols = `topic_document_id, customer_id, topic_id, document_id, relevance_score`

func scanTopicDocument(row pgx.Row) (topics.TopicDocument, error) {
	var m topics.TopicDocument
	err := row.Scan(&m.ID, &m.CustomerID, &m.TopicID, &m.DocumentID, &m.RelevanceScore)
	return m, err
}

// liveTopicDocuments is the FROM clause of every read: mappings of live
// topics with their document.
const liveTopicDocuments = `FROM topic_documents td
	JOIN topics t ON t.customer_id = td.customer_id AND t.topic_id = td.topic_id AND t.deleted_at IS NULL
	JOIN documents d ON d.customer_id = td.customer_id AND d.document_id = td.document_id`

// ListTopicDocuments pages through the document mappings of live topics, by
// topic and then relevance (highest first). channelId, hookName and isHook
// are the document's; hookName matches case-insensitively.
func (s *Store) ListTopicDocuments(ctx context.Context, customerID int64, f topics.TopicDocumentFilter, p paging.Page) ([]topics.TopicDocument, int, error) {
	const where = ` WHERE td.customer_id = $1
		AND ($2::bigint IS NULL OR td.topic_id = $2)
		AND ($3::bigint IS NULL OR td.document_id = $3)
		AND ($4::bigint IS NULL OR d.channel_id = $4)
		AND ($5::text IS NULL OR lower(d.hook_name) = lower($5))
		AND ($6::boolean IS NULL OR d.is_hook = $6)`
	return postgres.Page(ctx, s.db, "topic document",
		`SELECT count(*) `+liveTopicDocuments+where,
		`SELECT `+prefixCols("td.", topicDocumentCols)+` `+liveTopicDocuments+where+`
			ORDER BY td.topic_id, td.relevance_score DESC, td.topic_document_id LIMIT $7 OFFSET $8`,
		scanTopicDocument, p, customerID, f.TopicID, f.DocumentID, f.ChannelID, nullText(f.HookName), f.IsHook)
}

// TopicDocument returns one mapping of a live topic.
func (s *Store) TopicDocument(ctx context.Context, customerID, id int64) (topics.TopicDocument, error) {
	m, err := scanTopicDocument(s.db.QueryRow(ctx, `SELECT `+prefixCols("td.", topicDocumentCols)+` `+liveTopicDocuments+`
		WHERE td.customer_id = $1 AND td.topic_document_id = $2`, customerID, id))
	return m, postgres.Error(err, "topic document")
}

// CreateTopicDocument inserts a mapping after checking, under lock, that the
// live topic and the document exist for the customer.
func (s *Store) CreateTopicDocument(ctx context.Context, customerID int64, in topics.TopicDocument) (topics.TopicDocument, error) {
	var m topics.TopicDocument
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		if err := lockLiveTopic(ctx, tx, customerID, in.TopicID); err != nil {
			return err
		}
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM documents WHERE customer_id = $1 AND document_id = $2 FOR SHARE`,
			customerID, in.DocumentID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return refError("documentID", "no document with this id")
		}
		if err != nil {
			return err
		}
		m, err = scanTopicDocument(tx.QueryRow(ctx, `INSERT INTO topic_documents (customer_id, topic_id, document_id, relevance_score)
			VALUES ($1, $2, $3, $4) RETURNING `+topicDocumentCols, customerID, in.TopicID, in.DocumentID, in.RelevanceScore))
		if err != nil {
			return err
		}
		return s.addMappingEvents(ctx, tx, contracts.EventTopicDocumentChanged, customerID, topicDocumentChange(topics.OpCreated, m))
	})
	if postgres.UniqueViolation(err, "topic_documents_pair_key") {
		return m, &apperr.Error{Code: apperr.Conflict, Message: "this document is already linked to this topic",
			Fields: map[string]string{"documentID": "is already linked to this topic"}, Err: err}
	}
	return m, postgres.Error(err, "topic document")
}

// changeTopicDocument runs one statement returning a mapping and writes its
// topic.document.changed event, in one transaction.
func (s *Store) changeTopicDocument(ctx context.Context, customerID int64, op, sql string, args ...any) (topics.TopicDocument, error) {
	var m topics.TopicDocument
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		if m, err = scanTopicDocument(tx.QueryRow(ctx, sql, args...)); err != nil {
			return err
		}
		return s.addMappingEvents(ctx, tx, contracts.EventTopicDocumentChanged, customerID, topicDocumentChange(op, m))
	})
	return m, postgres.Error(err, "topic document")
}

// UpdateTopicDocumentScore sets the relevance of a mapping of a live topic.
func (s *Store) UpdateTopicDocumentScore(ctx context.Context, customerID, id int64, score int) (topics.TopicDocument, error) {
	return s.changeTopicDocument(ctx, customerID, topics.OpUpdated, `UPDATE topic_documents td SET relevance_score = $3, updated_at = now()
		FROM topics t
		WHERE td.customer_id = $1 AND td.topic_document_id = $2
		  AND t.customer_id = td.customer_id AND t.topic_id = td.topic_id AND t.deleted_at IS NULL
		RETURNING `+prefixCols("td.", topicDocumentCols), customerID, id, score)
}

// DeleteTopicDocument deletes a mapping of a live topic and returns it.
func (s *Store) DeleteTopicDocument(ctx context.Context, customerID, id int64) (topics.TopicDocument, error) {
	return s.changeTopicDocument(ctx, customerID, topics.OpDeleted, `DELETE FROM topic_documents td USING topics t
		WHERE td.customer_id = $1 AND td.topic_document_id = $2
		  AND t.customer_id = td.customer_id AND t.topic_id = td.topic_id AND t.deleted_at IS NULL
		RETURNING `+prefixCols("td.", topicDocumentCols), customerID, id)
}

// LinkedDocuments returns the documents linked to the live topics among
// topicIDs, each document once with its most relevant link, most relevant
// first, at most limit.
func (s *Store) LinkedDocuments(ctx context.Context, customerID int64, topicIDs []int64, limit int) ([]topics.LinkedDocument, error) {
	return postgres.Collect(ctx, s.db, "topic document", `
		SELECT document_id, topic_id, title, content, relevance_score FROM (
			SELECT DISTINCT ON (d.document_id) d.document_id, td.topic_id, d.title, d.content, td.relevance_score
			`+liveTopicDocuments+`
			WHERE td.customer_id = $1 AND td.topic_id = ANY($2)
			ORDER BY d.document_id, td.relevance_score DESC, td.topic_id
		) best
		ORDER BY relevance_score DESC, document_id
		LIMIT $3`,
		func(r pgx.Row) (topics.LinkedDocument, error) {
			var l topics.LinkedDocument
			err := r.Scan(&l.DocumentID, &l.TopicID, &l.Title, &l.Content, &l.RelevanceScore)
			return l, err
		}, customerID, topicIDs, limit)
}
