package topics

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
)

// The fakes below implement exactly the store interfaces the use cases
// declare, and record what reached them. (The events of a change are the
// store's; they are tested with the PostgreSQL store.)

type calls []string

func (c *calls) add(format string, args ...any) { *c = append(*c, fmt.Sprintf(format, args...)) }

type fakeTopicStore struct{ calls }

var _ TopicStore = (*fakeTopicStore)(nil)

func (f *fakeTopicStore) ListTopics(_ context.Context, cid int64, fl TopicFilter, _ paging.Page) ([]Topic, int, error) {
	f.add("ListTopics %d %q", cid, fl.NameContains)
	return nil, 0, nil
}
func (f *fakeTopicStore) Topic(_ context.Context, cid, id int64) (Topic, error) {
	f.add("Topic %d %d", cid, id)
	return Topic{ID: id, CustomerID: cid}, nil
}
func (f *fakeTopicStore) CreateTopic(_ context.Context, cid int64, in TopicInput) (Topic, error) {
	f.add("CreateTopic %d %q %q", cid, in.Name, in.Description)
	return Topic{ID: 7, CustomerID: cid, Name: in.Name, Description: in.Description}, nil
}
func (f *fakeTopicStore) UpdateTopic(_ context.Context, cid, id int64, in TopicInput) (Topic, error) {
	f.add("UpdateTopic %d %d %q %q", cid, id, in.Name, in.Description)
	return Topic{ID: id, CustomerID: cid, Name: in.Name, Description: in.Description}, nil
}
func (f *fakeTopicStore) DeleteTopic(_ context.Context, cid, id int64) (Topic, error) {
	f.add("DeleteTopic %d %d", cid, id)
	return Topic{ID: id, CustomerID: cid}, nil
}
func (f *fakeTopicStore) TopicNames(_ context.Context, cid int64, ids []int64) (map[int64]string, error) {
	f.add("TopicNames %d %v", cid, ids)
	return map[int64]string{}, nil
}
func (f *fakeTopicStore) AllTopics(_ context.Context, cid int64) ([]Topic, error) {
	f.add("AllTopics %d", cid)
	return nil, nil
}

// fakeTopicActionStore answers CreateTopicActions by running the use case's
// check on refs, as the real store does inside its transaction.
type fakeTopicActionStore struct {
	calls
	refs TopicActionRefs
}

var _ TopicActionStore = (*fakeTopicActionStore)(nil)

func (f *fakeTopicActionStore) ListTopicActions(_ context.Context, cid int64, fl TopicActionFilter, _ paging.Page) ([]TopicAction, int, error) {
	f.add("ListTopicActions %d %q", cid, fl.HookName)
	return nil, 0, nil
}
func (f *fakeTopicActionStore) TopicAction(_ context.Context, cid, id int64) (TopicAction, error) {
	f.add("TopicAction %d %d", cid, id)
	return TopicAction{ID: id}, nil
}
func (f *fakeTopicActionStore) CreateTopicActions(_ context.Context, cid int64, items []NewTopicAction, check func(TopicActionRefs) error) ([]TopicAction, error) {
	f.add("CreateTopicActions %d %v", cid, items)
	if err := check(f.refs); err != nil {
		return nil, err
	}
	out := make([]TopicAction, len(items))
	for i, it := range items {
		out[i] = TopicAction{ID: int64(i + 1), CustomerID: cid, TopicID: it.TopicID, ActionID: it.ActionID, Priority: it.Priority, IsActive: it.IsActive}
	}
	return out, nil
}
func (f *fakeTopicActionStore) UpdateTopicActionPriority(_ context.Context, cid, id int64, priority int) (TopicAction, error) {
	f.add("UpdateTopicActionPriority %d %d %d", cid, id, priority)
	return TopicAction{ID: id, Priority: priority}, nil
}
func (f *fakeTopicActionStore) DeleteTopicAction(_ context.Context, cid, id int64) (TopicAction, error) {
	f.add("DeleteTopicAction %d %d", cid, id)
	return TopicAction{ID: id}, nil
}
func (f *fakeTopicActionStore) ActiveActions(_ context.Context, cid, topicID int64) ([]LinkedAction, error) {
	f.add("ActiveActions %d %d", cid, topicID)
	return nil, nil
}

type fakeTopicDocumentStore struct{ calls }

var _ TopicDocumentStore = (*fakeTopicDocumentStore)(nil)

func (f *fakeTopicDocumentStore) ListTopicDocuments(_ context.Context, cid int64, fl TopicDocumentFilter, _ paging.Page) ([]TopicDocument, int, error) {
	f.add("ListTopicDocuments %d %q", cid, fl.HookName)
	return nil, 0, nil
}
func (f *fakeTopicDocumentStore) TopicDocument(_ context.Context, cid, id int64) (TopicDocument, error) {
	f.add("TopicDocument %d %d", cid, id)
	return TopicDocument{ID: id}, nil
}
func (f *fakeTopicDocumentStore) CreateTopicDocument(_ context.Context, cid int64, in TopicDocument) (TopicDocument, error) {
	f.add("CreateTopicDocument %d %d %d %d", cid, in.TopicID, in.DocumentID, in.RelevanceScore)
	in.ID = 1
	return in, nil
}
func (f *fakeTopicDocumentStore) UpdateTopicDocumentScore(_ context.Context, cid, id int64, score int) (TopicDocument, error) {
	f.add("UpdateTopicDocumentScore %d %d %d", cid, id, score)
	return TopicDocument{ID: id, RelevanceScore: score}, nil
}
func (f *fakeTopicDocumentStore) DeleteTopicDocument(_ context.Context, cid, id int64) (TopicDocument, error) {
	f.add("DeleteTopicDocument %d %d", cid, id)
	return TopicDocument{ID: id}, nil
}
func (f *fakeTopicDocumentStore) LinkedDocuments(_ context.Context, cid int64, topicIDs []int64, limit int) ([]LinkedDocument, error) {
	f.add("LinkedDocuments %d %v %d", cid, topicIDs, limit)
	return nil, nil
}

type fakePageMappingStore struct{ calls }

var _ PageMappingStore = (*fakePageMappingStore)(nil)

func (f *fakePageMappingStore) ListPageMappings(_ context.Context, cid int64, fl PageMappingFilter, _ paging.Page) ([]PageMapping, int, error) {
	f.add("ListPageMappings %d %q", cid, fl.MatchType)
	return nil, 0, nil
}
func (f *fakePageMappingStore) PageMapping(_ context.Context, cid, id int64) (PageMapping, error) {
	f.add("PageMapping %d %d", cid, id)
	return PageMapping{ID: id}, nil
}
func (f *fakePageMappingStore) CreatePageMapping(_ context.Context, cid int64, in PageMapping) (PageMapping, error) {
	f.add("CreatePageMapping %d %d %s %s", cid, in.TopicID, in.URLPattern, in.MatchType)
	return in, nil
}
func (f *fakePageMappingStore) UpdatePageMapping(_ context.Context, cid, id int64, in PageMapping) (PageMapping, error) {
	f.add("UpdatePageMapping %d %d %d %s %s", cid, id, in.TopicID, in.URLPattern, in.MatchType)
	return in, nil
}
func (f *fakePageMappingStore) DeletePageMapping(_ context.Context, cid, id int64) (PageMapping, error) {
	f.add("DeletePageMapping %d %d", cid, id)
	return PageMapping{ID: id}, nil
}
func (f *fakePageMappingStore) TopicsForURL(_ context.Context, cid int64, url string) ([]Topic, error) {
	f.add("TopicsForURL %d %s", cid, url)
	return nil, nil
}

type fakeActionStore struct{ calls }

var _ ActionStore = (*fakeActionStore)(nil)

func (f *fakeActionStore) ListActions(_ context.Context, cid int64, _ paging.Page) ([]Action, int, error) {
	f.add("ListActions %d", cid)
	return nil, 0, nil
}
func (f *fakeActionStore) Action(_ context.Context, cid, id int64) (Action, error) {
	f.add("Action %d %d", cid, id)
	return Action{ID: id}, nil
}
func (f *fakeActionStore) CreateAction(_ context.Context, cid int64, in Action) (Action, error) {
	f.add("CreateAction %d %q %q %v", cid, in.Name, in.HookName, in.IsActive)
	return in, nil
}
func (f *fakeActionStore) UpdateAction(_ context.Context, cid, id int64, in Action) (Action, error) {
	f.add("UpdateAction %d %d %q %q %v", cid, id, in.Name, in.HookName, in.IsActive)
	return in, nil
}
func (f *fakeActionStore) DeleteAction(_ context.Context, cid, id int64) ([]TopicAction, error) {
	f.add("DeleteAction %d %d", cid, id)
	return nil, nil
}

type fakeDocumentStore struct{ calls }

var _ DocumentStore = (*fakeDocumentStore)(nil)

func (f *fakeDocumentStore) ListDocuments(_ context.Context, cid int64, _ paging.Page) ([]Document, int, error) {
	f.add("ListDocuments %d", cid)
	return nil, 0, nil
}
func (f *fakeDocumentStore) Document(_ context.Context, cid, id int64) (Document, error) {
	f.add("Document %d %d", cid, id)
	return Document{ID: id}, nil
}
func (f *fakeDocumentStore) CreateDocument(_ context.Context, cid int64, in Document) (Document, error) {
	f.add("CreateDocument %d %q %v", cid, in.Title, in.IsHook)
	return in, nil
}
func (f *fakeDocumentStore) UpdateDocument(_ context.Context, cid, id int64, in Document) (Document, error) {
	f.add("UpdateDocument %d %d %q %v", cid, id, in.Title, in.IsHook)
	return in, nil
}
func (f *fakeDocumentStore) DeleteDocument(_ context.Context, cid, id int64) ([]TopicDocument, error) {
	f.add("DeleteDocument %d %d", cid, id)
	return nil, nil
}

// stores are one fake of each store and the use cases on them.
type stores struct {
	topics         fakeTopicStore
	topicActions   fakeTopicActionStore
	topicDocuments fakeTopicDocumentStore
	pageMappings   fakePageMappingStore
	actions        fakeActionStore
	documents      fakeDocumentStore
	svc            *Service
}

func newStores() *stores {
	s := &stores{}
	s.svc = &Service{
		TopicService:         NewTopicService(&s.topics),
		TopicActionService:   NewTopicActionService(&s.topicActions),
		TopicDocumentService: NewTopicDocumentService(&s.topicDocuments),
		PageMappingService:   NewPageMappingService(&s.pageMappings),
		ActionService:        NewActionService(&s.actions),
		DocumentService:      NewDocumentService(&s.documents),
	}
	return s
}

// all is every call any store received, in use-case order.
func (s *stores) all() []string {
	return slices.Concat(s.topics.calls, s.topicActions.calls, s.topicDocuments.calls, s.pageMappings.calls, s.actions.calls, s.documents.calls)
}

// Each use case validates and normalises before the store: invalid input
// never reaches it, valid input reaches it normalised.
func TestUseCasesValidateBeforeTheStore(t *testing.T) {
	ctx := context.Background()
	page := paging.Page{Number: 1, Size: 20}
	cases := []struct {
		name  string
		call  func(s *Service) error
		code  apperr.Code // "" = success
		field string      // the field a 400 names
		store []string    // what reached the store
	}{
		{"topic with a blank name", func(s *Service) error { _, err := s.CreateTopic(ctx, 1, TopicInput{Name: " "}); return err }, apperr.Invalid, "name", nil},
		{"topic trimmed", func(s *Service) error {
			_, err := s.CreateTopic(ctx, 1, TopicInput{Name: " Billing ", Description: " d\n"})
			return err
		}, "", "", []string{`CreateTopic 1 "Billing" "d"`}},
		{"topic update with NUL", func(s *Service) error {
			_, err := s.UpdateTopic(ctx, 1, 2, TopicInput{Name: "a\x00"})
			return err
		}, apperr.Invalid, "name", nil},
		{"topic name filter trimmed", func(s *Service) error {
			_, _, err := s.ListTopics(ctx, 1, TopicFilter{NameContains: " bill "}, page)
			return err
		},
			"", "", []string{`ListTopics 1 "bill"`}},
		{"topic name filter with NUL", func(s *Service) error {
			_, _, err := s.ListTopics(ctx, 1, TopicFilter{NameContains: "a\x00"}, page)
			return err
		},
			apperr.Invalid, "name", nil},
		{"hookName filter of topic actions, invalid UTF-8", func(s *Service) error {
			_, _, err := s.ListTopicActions(ctx, 1, TopicActionFilter{HookName: "\xff"}, page)
			return err
		}, apperr.Invalid, "hookName", nil},
		{"hookName filter of topic actions trimmed", func(s *Service) error {
			_, _, err := s.ListTopicActions(ctx, 1, TopicActionFilter{HookName: " slack "}, page)
			return err
		}, "", "", []string{`ListTopicActions 1 "slack"`}},
		{"hookName filter of topic documents with NUL", func(s *Service) error {
			_, _, err := s.ListTopicDocuments(ctx, 1, TopicDocumentFilter{HookName: "a\x00"}, page)
			return err
		}, apperr.Invalid, "hookName", nil},
		{"action without hook", func(s *Service) error { _, err := s.CreateAction(ctx, 1, ActionInput{Name: "n"}); return err }, apperr.Invalid, "hookName", nil},
		{"action defaults", func(s *Service) error {
			_, err := s.UpdateAction(ctx, 1, 3, ActionInput{Name: "n ", HookName: " h"})
			return err
		},
			"", "", []string{`UpdateAction 1 3 "n" "h" true`}},
		{"hook document without hook name", func(s *Service) error {
			_, err := s.CreateDocument(ctx, 1, DocumentInput{Title: "t", IsHook: ptr(true)})
			return err
		}, apperr.Invalid, "hookName", nil},
		{"topic action without priority", func(s *Service) error {
			_, err := s.CreateTopicAction(ctx, 1, TopicActionInput{TopicID: ptr[int64](1), ActionID: ptr[int64](2)})
			return err
		}, apperr.Invalid, "priority", nil},
		{"topic action to a missing topic", func(s *Service) error {
			_, err := s.CreateTopicAction(ctx, 1, TopicActionInput{TopicID: ptr[int64](1), ActionID: ptr[int64](2), Priority: ptr[int64](3)})
			return err
		}, apperr.Invalid, "topicID", []string{"CreateTopicActions 1 [{1 2 3 true}]"}},
		{"bulk with a repeated pair", func(s *Service) error {
			in := TopicActionInput{TopicID: ptr[int64](1), ActionID: ptr[int64](2), Priority: ptr[int64](3)}
			_, err := s.CreateTopicActions(ctx, 1, []TopicActionInput{in, in})
			return err
		}, apperr.Invalid, "items[1].actionID", nil},
		{"priority out of range", func(s *Service) error { return s.UpdateTopicActionPriority(ctx, 1, 2, ptr[int64](10_001)) }, apperr.Invalid, "priority", nil},
		{"score missing", func(s *Service) error { return s.UpdateTopicDocumentScore(ctx, 1, 2, nil) }, apperr.Invalid, "relevanceScore", nil},
		{"score in range", func(s *Service) error { return s.UpdateTopicDocumentScore(ctx, 1, 2, ptr[int64](100)) },
			"", "", []string{"UpdateTopicDocumentScore 1 2 100"}},
		{"topic document without document", func(s *Service) error {
			_, err := s.CreateTopicDocument(ctx, 1, TopicDocumentInput{TopicID: ptr[int64](1), RelevanceScore: ptr[int64](1)})
			return err
		}, apperr.Invalid, "documentID", nil},
		{"page mapping normalised", func(s *Service) error {
			_, err := s.CreatePageMapping(ctx, 1, PageMappingInput{TopicID: ptr[int64](4), URLPattern: "HTTPS://A.example:443", MatchType: " Prefix "})
			return err
		}, "", "", []string{"CreatePageMapping 1 4 https://a.example/ prefix"}},
		{"page mapping with a relative URL", func(s *Service) error {
			_, err := s.UpdatePageMapping(ctx, 1, 2, PageMappingInput{TopicID: ptr[int64](4), URLPattern: "/help", MatchType: "exact"})
			return err
		}, apperr.Invalid, "urlPattern", nil},
		{"lookup normalised", func(s *Service) error { _, _, err := s.TopicsForURL(ctx, 1, "https://A.example/x#f"); return err },
			"", "", []string{"TopicsForURL 1 https://a.example/x"}},
		{"lookup of a URL with NUL", func(s *Service) error { _, _, err := s.TopicsForURL(ctx, 1, "https://a.example/\x00"); return err },
			apperr.Invalid, "url", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newStores()
			st.topicActions.refs = TopicActionRefs{Actions: map[int64]bool{2: true}}
			err := c.call(st.svc)
			if c.code == "" && err != nil {
				t.Fatalf("err = %v", err)
			}
			if c.code != "" {
				if f := fields(t, err, c.code); f[c.field] == "" {
					t.Fatalf("err = %v, want a %s naming %s", err, c.code, c.field)
				}
			}
			if got := st.all(); !slices.Equal(got, c.store) {
				t.Fatalf("store calls %q, want %q", got, c.store)
			}
		})
	}
}

// The RPC lookups check their input and bound it before the store.
func TestRPCInputChecks(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		call  func(s *Service) error
		bad   bool
		store []string
	}{
		{"names of customer 0", func(s *Service) error { _, err := s.TopicNames(ctx, 0, []int64{1}); return err }, true, nil},
		{"too many ids", func(s *Service) error { _, err := s.TopicNames(ctx, 1, make([]int64, MaxLookupIDs+1)); return err }, true, nil},
		{"no ids", func(s *Service) error {
			names, err := s.TopicNames(ctx, 1, nil)
			if err == nil && (names == nil || len(names) != 0) {
				return fmt.Errorf("names = %v", names)
			}
			return err
		}, false, nil},
		{"names", func(s *Service) error { _, err := s.TopicNames(ctx, 1, []int64{3, 4}); return err }, false, []string{"TopicNames 1 [3 4]"}},
		{"all of customer 0", func(s *Service) error { _, err := s.AllTopics(ctx, 0); return err }, true, nil},
		{"actions of topic 0", func(s *Service) error { _, err := s.ActiveActions(ctx, 1, 0); return err }, true, nil},
		{"actions of customer 0", func(s *Service) error { _, err := s.ActiveActions(ctx, 0, 1); return err }, true, nil},
		{"negative limit", func(s *Service) error { _, err := s.LinkedDocuments(ctx, 1, []int64{1}, -1); return err }, true, nil},
		{"no topics", func(s *Service) error { _, err := s.LinkedDocuments(ctx, 1, nil, 0); return err }, false, nil},
		{"limit 0 is the cap", func(s *Service) error { _, err := s.LinkedDocuments(ctx, 1, []int64{1}, 0); return err }, false, []string{"LinkedDocuments 1 [1] 1000"}},
		{"limit above the cap", func(s *Service) error { _, err := s.LinkedDocuments(ctx, 1, []int64{1}, 5000); return err }, false, []string{"LinkedDocuments 1 [1] 1000"}},
		{"limit kept", func(s *Service) error { _, err := s.LinkedDocuments(ctx, 1, []int64{1}, 5); return err }, false, []string{"LinkedDocuments 1 [1] 5"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newStores()
			err := c.call(st.svc)
			if c.bad != apperr.Is(err, apperr.Invalid) || (!c.bad && err != nil) {
				t.Fatalf("err = %v, want invalid: %v", err, c.bad)
			}
			if got := st.all(); !slices.Equal(got, c.store) {
				t.Fatalf("store calls %q, want %q", got, c.store)
			}
		})
	}
}
