package topics

import (
	"context"
	"strings"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
)

// TopicDocumentStore is what the topic-document use cases need, scoped to
// customerID; links of deleted topics are not found. A change writes its
// topic.document.changed event with it.
type TopicDocumentStore interface {
	ListTopicDocuments(ctx context.Context, customerID int64, f TopicDocumentFilter, p paging.Page) ([]TopicDocument, int, error)
	TopicDocument(ctx context.Context, customerID, id int64) (TopicDocument, error)
	CreateTopicDocument(ctx context.Context, customerID int64, in TopicDocument) (TopicDocument, error)
	UpdateTopicDocumentScore(ctx context.Context, customerID, id int64, score int) (TopicDocument, error)
	DeleteTopicDocument(ctx context.Context, customerID, id int64) (TopicDocument, error)
	LinkedDocuments(ctx context.Context, customerID int64, topicIDs []int64, limit int) ([]LinkedDocument, error)
}

// TopicDocumentService is the topic-document use cases.
type TopicDocumentService struct{ store TopicDocumentStore }

// NewTopicDocumentService returns the topic-document use cases on store.
func NewTopicDocumentService(store TopicDocumentStore) *TopicDocumentService {
	return &TopicDocumentService{store: store}
}

// ListTopicDocuments pages through the document mappings of live topics,
// ordered by topic and then relevance (highest first).
func (s *TopicDocumentService) ListTopicDocuments(ctx context.Context, customerID int64, f TopicDocumentFilter, p paging.Page) ([]TopicDocument, int, error) {
	f.HookName = strings.TrimSpace(f.HookName)
	if err := checkFilterText("hookName", f.HookName, MaxHookNameLen); err != nil {
		return nil, 0, err
	}
	return s.store.ListTopicDocuments(ctx, customerID, f, p)
}

// TopicDocument returns one mapping of a live topic.
func (s *TopicDocumentService) TopicDocument(ctx context.Context, customerID, id int64) (TopicDocument, error) {
	return s.store.TopicDocument(ctx, customerID, id)
}

// CreateTopicDocument links a document to a topic.
func (s *TopicDocumentService) CreateTopicDocument(ctx context.Context, customerID int64, in TopicDocumentInput) (TopicDocument, error) {
	td, err := in.Normalize()
	if err != nil {
		return TopicDocument{}, err
	}
	return s.store.CreateTopicDocument(ctx, customerID, td)
}

// UpdateTopicDocumentScore changes only the relevance score of a mapping.
func (s *TopicDocumentService) UpdateTopicDocumentScore(ctx context.Context, customerID, id int64, score *int64) error {
	var v apperr.Validation
	checkRange(&v, "relevanceScore", score, MinRelevance, MaxRelevance)
	if err := v.Err(); err != nil {
		return err
	}
	_, err := s.store.UpdateTopicDocumentScore(ctx, customerID, id, int(*score))
	return err
}

// DeleteTopicDocument removes a mapping.
func (s *TopicDocumentService) DeleteTopicDocument(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteTopicDocument(ctx, customerID, id)
	return err
}

// LinkedDocuments returns the documents linked to live topics among
// topicIDs, each once (with its best link), most relevant first (RPC).
// limit 0 means all, capped at MaxLookupIDs.
func (s *TopicDocumentService) LinkedDocuments(ctx context.Context, customerID int64, topicIDs []int64, limit int) ([]LinkedDocument, error) {
	if err := checkLookup(customerID, topicIDs); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fieldError("limit", "must not be negative")
	}
	if limit == 0 || limit > MaxLookupIDs {
		limit = MaxLookupIDs
	}
	if len(topicIDs) == 0 {
		return nil, nil
	}
	return s.store.LinkedDocuments(ctx, customerID, topicIDs, limit)
}
