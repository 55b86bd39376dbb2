package topics

import (
	"context"

	"supportplatform.dev/pkg/paging"
)

// DocumentStore is what the document use cases need, scoped to customerID.
type DocumentStore interface {
	ListDocuments(ctx context.Context, customerID int64, p paging.Page) ([]Document, int, error)
	Document(ctx context.Context, customerID, id int64) (Document, error)
	CreateDocument(ctx context.Context, customerID int64, in Document) (Document, error)
	UpdateDocument(ctx context.Context, customerID, id int64, in Document) (Document, error)
	// DeleteDocument removes the document and its topic mappings, returning
	// them (a topic.document.changed event, deleted, for each).
	DeleteDocument(ctx context.Context, customerID, id int64) ([]TopicDocument, error)
}

// DocumentService is the document use cases.
type DocumentService struct{ store DocumentStore }

// NewDocumentService returns the document use cases on store.
func NewDocumentService(store DocumentStore) *DocumentService { return &DocumentService{store: store} }

// ListDocuments pages through the customer's documents.
func (s *DocumentService) ListDocuments(ctx context.Context, customerID int64, p paging.Page) ([]Document, int, error) {
	return s.store.ListDocuments(ctx, customerID, p)
}

// Document returns one document.
func (s *DocumentService) Document(ctx context.Context, customerID, id int64) (Document, error) {
	return s.store.Document(ctx, customerID, id)
}

// CreateDocument adds a document.
func (s *DocumentService) CreateDocument(ctx context.Context, customerID int64, in DocumentInput) (Document, error) {
	d, err := in.Normalize()
	if err != nil {
		return Document{}, err
	}
	return s.store.CreateDocument(ctx, customerID, d)
}

// UpdateDocument replaces a document's fields.
func (s *DocumentService) UpdateDocument(ctx context.Context, customerID, id int64, in DocumentInput) (Document, error) {
	d, err := in.Normalize()
	if err != nil {
		return Document{}, err
	}
	return s.store.UpdateDocument(ctx, customerID, id, d)
}

// DeleteDocument deletes a document and with it its topic mappings.
func (s *DocumentService) DeleteDocument(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteDocument(ctx, customerID, id)
	return err
}
