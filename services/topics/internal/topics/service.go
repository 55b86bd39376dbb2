package topics

import (
	"context"
	"fmt"
	"strings"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
)

// ListTopics pages through the customer's live topics.
func (s *Service) ListTopics(ctx context.Context, customerID int64, f TopicFilter, p paging.Page) ([]Topic, int, error) {
	f.NameContains = strings.TrimSpace(f.NameContains)
	if err := checkFilterText("name", f.NameContains, MaxNameLen); err != nil {
		return nil, 0, err
	}
	return s.store.ListTopics(ctx, customerID, f, p)
}

// Topic returns one live topic.
func (s *Service) Topic(ctx context.Context, customerID, id int64) (Topic, error) {
	return s.store.Topic(ctx, customerID, id)
}

// CreateTopic adds a topic; its name is unique (case-insensitively) among the
// customer's live topics.
func (s *Service) CreateTopic(ctx context.Context, customerID int64, in TopicInput) (Topic, error) {
	in, err := in.Normalize()
	if err != nil {
		return Topic{}, err
	}
	t, err := s.store.CreateTopic(ctx, customerID, in)
	if err != nil {
		return Topic{}, err
	}
	return t, nil
}

// UpdateTopic replaces a topic's name and description.
func (s *Service) UpdateTopic(ctx context.Context, customerID, id int64, in TopicInput) (Topic, error) {
	in, err := in.Normalize()
	if err != nil {
		return Topic{}, err
	}
	t, err := s.store.UpdateTopic(ctx, customerID, id, in)
	if err != nil {
		return Topic{}, err
	}
	return t, nil
}

// DeleteTopic soft-deletes a topic: from then on it and all its mappings
// match nothing (see the package comment).
func (s *Service) DeleteTopic(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteTopic(ctx, customerID, id)
	return err
}

// TopicNames maps the live ones among ids to their names (RPC).
func (s *Service) TopicNames(ctx context.Context, customerID int64, ids []int64) (map[int64]string, error) {
	if err := checkLookup(customerID, ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return map[int64]string{}, nil
	}
	return s.store.TopicNames(ctx, customerID, ids)
}

// AllTopics lists every live topic of the customer (RPC, AI classification).
func (s *Service) AllTopics(ctx context.Context, customerID int64) ([]Topic, error) {
	if err := requireCustomer(customerID); err != nil {
		return nil, err
	}
	return s.store.AllTopics(ctx, customerID)
}

// LinkedDocuments returns the documents linked to live topics among
// topicIDs, each once (with its best link), most relevant first (RPC).
// limit 0 means all, capped at MaxLookupIDs.
func (s *Service) LinkedDocuments(ctx context.Context, customerID int64, topicIDs []int64, limit int) ([]LinkedDocument, error) {
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

// ActiveActions returns the active mappings to active actions of a live
// topic, lowest priority number first (RPC, automation).
func (s *Service) ActiveActions(ctx context.Context, customerID, topicID int64) ([]LinkedAction, error) {
	if err := requireCustomer(customerID); err != nil {
		return nil, err
	}
	if topicID <= 0 {
		return nil, fieldError("topicID", "must be a positive integer")
	}
	return s.store.ActiveActions(ctx, customerID, topicID)
}

func checkLookup(customerID int64, ids []int64) error {
	if err := requireCustomer(customerID); err != nil {
		return err
	}
	if len(ids) > MaxLookupIDs {
		return fieldError("topicIDs", fmt.Sprintf("must hold at most %d ids", MaxLookupIDs))
	}
	return nil
}

// ListActions pages through the customer's actions.
func (s *Service) ListActions(ctx context.Context, customerID int64, p paging.Page) ([]Action, int, error) {
	return s.store.ListActions(ctx, customerID, p)
}

// Action returns one action.
func (s *Service) Action(ctx context.Context, customerID, id int64) (Action, error) {
	return s.store.Action(ctx, customerID, id)
}

// CreateAction adds an action.
func (s *Service) CreateAction(ctx context.Context, customerID int64, in ActionInput) (Action, error) {
	a, err := in.Normalize()
	if err != nil {
		return Action{}, err
	}
	return s.store.CreateAction(ctx, customerID, a)
}

// UpdateAction replaces an action's fields.
func (s *Service) UpdateAction(ctx context.Context, customerID, id int64, in ActionInput) (Action, error) {
	a, err := in.Normalize()
	if err != nil {
		return Action{}, err
	}
	return s.store.UpdateAction(ctx, customerID, id, a)
}

// DeleteAction deletes an action and with it its topic mappings.
func (s *Service) DeleteAction(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteAction(ctx, customerID, id)
	return err
}

// ListDocuments pages through the customer's documents.
func (s *Service) ListDocuments(ctx context.Context, customerID int64, p paging.Page) ([]Document, int, error) {
	return s.store.ListDocuments(ctx, customerID, p)
}

// Document returns one document.
func (s *Service) Document(ctx context.Context, customerID, id int64) (Document, error) {
	return s.store.Document(ctx, customerID, id)
}

// CreateDocument adds a document.
func (s *Service) CreateDocument(ctx context.Context, customerID int64, in DocumentInput) (Document, error) {
	d, err := in.Normalize()
	if err != nil {
		return Document{}, err
	}
	return s.store.CreateDocument(ctx, customerID, d)
}

// UpdateDocument replaces a document's fields.
func (s *Service) UpdateDocument(ctx context.Context, customerID, id int64, in DocumentInput) (Document, error) {
	d, err := in.Normalize()
	if err != nil {
		return Document{}, err
	}
	return s.store.UpdateDocument(ctx, customerID, id, d)
}

// DeleteDocument deletes a document and with it its topic mappings.
func (s *Service) DeleteDocument(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteDocument(ctx, customerID, id)
	return err
}

// ListTopicActions pages through the mappings of live topics, ordered by
// topic and then priority.
func (s *Service) ListTopicActions(ctx context.Context, customerID int64, f TopicActionFilter, p paging.Page) ([]TopicAction, int, error) {
	f.HookName = strings.TrimSpace(f.HookName)
	if err := checkFilterText("hookName", f.HookName, MaxHookNameLen); err != nil {
		return nil, 0, err
	}
	return s.store.ListTopicActions(ctx, customerID, f, p)
}

// TopicAction returns one mapping of a live topic.
func (s *Service) TopicAction(ctx context.Context, customerID, id int64) (TopicAction, error) {
	return s.store.TopicAction(ctx, customerID, id)
}

// CreateTopicAction maps an action to a topic.
func (s *Service) CreateTopicAction(ctx context.Context, customerID int64, in TopicActionInput) (TopicAction, error) {
	var v apperr.Validation
	item := in.validate(&v)
	if err := v.Err(); err != nil {
		return TopicAction{}, err
	}
	created, err := s.store.CreateTopicActions(ctx, customerID, []NewTopicAction{item}, func(r TopicActionRefs) error {
		return CheckTopicActionRefs([]NewTopicAction{item}, r, false)
	})
	if err != nil {
		return TopicAction{}, err
	}
	return created[0], nil
}

// CreateTopicActions maps several actions in one transaction: all or none.
func (s *Service) CreateTopicActions(ctx context.Context, customerID int64, in []TopicActionInput) ([]TopicAction, error) {
	items, err := ValidateTopicActions(in)
	if err != nil {
		return nil, err
	}
	created, err := s.store.CreateTopicActions(ctx, customerID, items, func(r TopicActionRefs) error {
		return CheckTopicActionRefs(items, r, true)
	})
	if err != nil {
		return nil, err
	}
	return created, nil
}

// UpdateTopicActionPriority changes only the priority of a mapping.
func (s *Service) UpdateTopicActionPriority(ctx context.Context, customerID, id int64, priority *int64) error {
	var v apperr.Validation
	checkRange(&v, "priority", priority, MinPriority, MaxPriority)
	if err := v.Err(); err != nil {
		return err
	}
	_, err := s.store.UpdateTopicActionPriority(ctx, customerID, id, int(*priority))
	return err
}

// DeleteTopicAction removes a mapping.
func (s *Service) DeleteTopicAction(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteTopicAction(ctx, customerID, id)
	return err
}

// ListTopicDocuments pages through the document mappings of live topics,
// ordered by topic and then relevance (highest first).
func (s *Service) ListTopicDocuments(ctx context.Context, customerID int64, f TopicDocumentFilter, p paging.Page) ([]TopicDocument, int, error) {
	f.HookName = strings.TrimSpace(f.HookName)
	if err := checkFilterText("hookName", f.HookName, MaxHookNameLen); err != nil {
		return nil, 0, err
	}
	return s.store.ListTopicDocuments(ctx, customerID, f, p)
}

// TopicDocument returns one mapping of a live topic.
func (s *Service) TopicDocument(ctx context.Context, customerID, id int64) (TopicDocument, error) {
	return s.store.TopicDocument(ctx, customerID, id)
}

// CreateTopicDocument links a document to a topic.
func (s *Service) CreateTopicDocument(ctx context.Context, customerID int64, in TopicDocumentInput) (TopicDocument, error) {
	td, err := in.Normalize()
	if err != nil {
		return TopicDocument{}, err
	}
	m, err := s.store.CreateTopicDocument(ctx, customerID, td)
	if err != nil {
		return TopicDocument{}, err
	}
	return m, nil
}

// UpdateTopicDocumentScore changes only the relevance score of a mapping.
func (s *Service) UpdateTopicDocumentScore(ctx context.Context, customerID, id int64, score *int64) error {
	var v apperr.Validation
	checkRange(&v, "relevanceScore", score, MinRelevance, MaxRelevance)
	if err := v.Err(); err != nil {
		return err
	}
	_, err := s.store.UpdateTopicDocumentScore(ctx, customerID, id, int(*score))
	return err
}

// DeleteTopicDocument removes a mapping.
func (s *Service) DeleteTopicDocument(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteTopicDocument(ctx, customerID, id)
	return err
}

// ListPageMappings pages through the page mappings of live topics.
func (s *Service) ListPageMappings(ctx context.Context, customerID int64, f PageMappingFilter, p paging.Page) ([]PageMapping, int, error) {
	return s.store.ListPageMappings(ctx, customerID, f, p)
}

// PageMapping returns one page mapping of a live topic.
func (s *Service) PageMapping(ctx context.Context, customerID, id int64) (PageMapping, error) {
	return s.store.PageMapping(ctx, customerID, id)
}

// CreatePageMapping links a page pattern to a topic.
func (s *Service) CreatePageMapping(ctx context.Context, customerID int64, in PageMappingInput) (PageMapping, error) {
	pm, err := in.Normalize()
	if err != nil {
		return PageMapping{}, err
	}
	m, err := s.store.CreatePageMapping(ctx, customerID, pm)
	if err != nil {
		return PageMapping{}, err
	}
	return m, nil
}

// UpdatePageMapping replaces a page mapping's topic, pattern and match type.
func (s *Service) UpdatePageMapping(ctx context.Context, customerID, id int64, in PageMappingInput) (PageMapping, error) {
	pm, err := in.Normalize()
	if err != nil {
		return PageMapping{}, err
	}
	m, err := s.store.UpdatePageMapping(ctx, customerID, id, pm)
	if err != nil {
		return PageMapping{}, err
	}
	return m, nil
}

// DeletePageMapping removes a page mapping.
func (s *Service) DeletePageMapping(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeletePageMapping(ctx, customerID, id)
	return err
}

// TopicsForURL normalises a page URL and returns the live topics mapped to
// it: every exact match and the longest matching prefix patterns. It returns
// the normalised URL too.
func (s *Service) TopicsForURL(ctx context.Context, customerID int64, rawURL string) (string, []Topic, error) {
	u, err := NormalizeURL(rawURL)
	if err != nil {
		return "", nil, queryError("url", err.Error())
	}
	ts, err := s.store.TopicsForURL(ctx, customerID, u)
	return u, ts, err
}
