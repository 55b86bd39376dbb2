package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/topics/internal/topics"
)

const documentCols = `document_id, customer_id, title, content, channel_id, hook_name, is_hook`

func scanDocument(row pgx.Row) (topics.Document, error) {
	var d topics.Document
	err := row.Scan(&d.ID, &d.CustomerID, &d.Title, &d.Content, &d.ChannelID, &d.HookName, &d.IsHook)
	return d, err
}

// ListDocuments pages through the documents in id order.
func (s *Store) ListDocuments(ctx context.Context, customerID int64, p paging.Page) ([]topics.Document, int, error) {
	return postgres.Page(ctx, s.db, "document",
		`SELECT count(*) FROM documents WHERE customer_id = $1`,
		`SELECT `+documentCols+` FROM documents WHERE customer_id = $1 ORDER BY document_id LIMIT $2 OFFSET $3`,
		scanDocument, p, customerID)
}

// Document returns one document.
func (s *Store) Document(ctx context.Context, customerID, id int64) (topics.Document, error) {
	d, err := scanDocument(s.db.QueryRow(ctx, `SELECT `+documentCols+` FROM documents WHERE customer_id = $1 AND document_id = $2`, customerID, id))
	return d, postgres.Error(err, "document")
}

// CreateDocument inserts a document.
func (s *Store) CreateDocument(ctx context.Context, customerID int64, in topics.Document) (topics.Document, error) {
	d, err := scanDocument(s.db.QueryRow(ctx, `INSERT INTO documents (customer_id, title, content, channel_id, hook_name, is_hook)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+documentCols, customerID, in.Title, in.Content, in.ChannelID, in.HookName, in.IsHook))
	return d, postgres.Error(err, "document")
}

// UpdateDocument replaces a document's fields.
func (s *Store) UpdateDocument(ctx context.Context, customerID, id int64, in topics.Document) (topics.Document, error) {
	d, err := scanDocument(s.db.QueryRow(ctx, `UPDATE documents SET title = $3, content = $4, channel_id = $5, hook_name = $6, is_hook = $7, updated_at = now()
		WHERE customer_id = $1 AND document_id = $2 RETURNING `+documentCols, customerID, id, in.Title, in.Content, in.ChannelID, in.HookName, in.IsHook))
	return d, postgres.Error(err, "document")
}

// DeleteDocument deletes a document with its topic mappings, in one
// transaction, and returns the removed mappings (topic.document.changed,
// deleted, for each).
func (s *Store) DeleteDocument(ctx context.Context, customerID, id int64) ([]topics.TopicDocument, error) {
	var removed []topics.TopicDocument
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM documents WHERE customer_id = $1 AND document_id = $2 FOR UPDATE`, customerID, id).Scan(&one); err != nil {
			return err
		}
		var err error
		if removed, err = postgres.Collect(ctx, tx, "topic document", `WITH removed AS (DELETE FROM topic_documents
			WHERE customer_id = $1 AND document_id = $2 RETURNING `+topicDocumentCols+`)
			SELECT `+topicDocumentCols+` FROM removed ORDER BY topic_document_id`, scanTopicDocument, customerID, id); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `DELETE FROM documents WHERE customer_id = $1 AND document_id = $2`, customerID, id); err != nil {
			return err
		}
		return s.addMappingEvents(ctx, tx, contracts.EventTopicDocumentChanged, customerID,
			paging.Map(removed, func(m topics.TopicDocument) contracts.MappingChanged { return topicDocumentChange(topics.OpDeleted, m) })...)
	})
	return removed, postgres.Error(err, "document")
}
