package topics

import (
	"context"

	"supportplatform.dev/pkg/paging"
)

// PageMappingStore is what the page-mapping use cases need, scoped to
// customerID; mappings of deleted topics are not found and never match. A
// change writes its topic.page-mapping.changed event with it.
type PageMappingStore interface {
	ListPageMappings(ctx context.Context, customerID int64, f PageMappingFilter, p paging.Page) ([]PageMapping, int, error)
	PageMapping(ctx context.Context, customerID, id int64) (PageMapping, error)
	CreatePageMapping(ctx context.Context, customerID int64, in PageMapping) (PageMapping, error)
	UpdatePageMapping(ctx context.Context, customerID, id int64, in PageMapping) (PageMapping, error)
	DeletePageMapping(ctx context.Context, customerID, id int64) (PageMapping, error)
	// TopicsForURL returns the live topics whose exact patterns equal url and
	// those whose prefix patterns are the longest ones url starts with.
	TopicsForURL(ctx context.Context, customerID int64, url string) ([]Topic, error)
}

// PageMappingService is the page-mapping use cases.
type PageMappingService struct{ store PageMappingStore }

// NewPageMappingService returns the page-mapping use cases on store.
func NewPageMappingService(store PageMappingStore) *PageMappingService {
	return &PageMappingService{store: store}
}

// ListPageMappings pages through the page mappings of live topics.
func (s *PageMappingService) ListPageMappings(ctx context.Context, customerID int64, f PageMappingFilter, p paging.Page) ([]PageMapping, int, error) {
	return s.store.ListPageMappings(ctx, customerID, f, p)
}

// PageMapping returns one page mapping of a live topic.
func (s *PageMappingService) PageMapping(ctx context.Context, customerID, id int64) (PageMapping, error) {
	return s.store.PageMapping(ctx, customerID, id)
}

// CreatePageMapping links a page pattern to a topic.
func (s *PageMappingService) CreatePageMapping(ctx context.Context, customerID int64, in PageMappingInput) (PageMapping, error) {
	pm, err := in.Normalize()
	if err != nil {
		return PageMapping{}, err
	}
	return s.store.CreatePageMapping(ctx, customerID, pm)
}

// UpdatePageMapping replaces a page mapping's topic, pattern and match type.
func (s *PageMappingService) UpdatePageMapping(ctx context.Context, customerID, id int64, in PageMappingInput) (PageMapping, error) {
	pm, err := in.Normalize()
	if err != nil {
		return PageMapping{}, err
	}
	return s.store.UpdatePageMapping(ctx, customerID, id, pm)
}

// DeletePageMapping removes a page mapping.
func (s *PageMappingService) DeletePageMapping(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeletePageMapping(ctx, customerID, id)
	return err
}

// TopicsForURL normalises a page URL and returns the live topics mapped to
// it: every exact match and the longest matching prefix patterns. It returns
// the normalised URL too.
func (s *PageMappingService) TopicsForURL(ctx context.Context, customerID int64, rawURL string) (string, []Topic, error) {
	u, err := NormalizeURL(rawURL)
	if err != nil {
		return "", nil, queryError("url", err.Error())
	}
	ts, err := s.store.TopicsForURL(ctx, customerID, u)
	return u, ts, err
}
