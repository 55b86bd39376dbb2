package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/topics/internal/postgres"
	"supportplatform.dev/services/topics/internal/topics"
)

const (
	tenantA int64 = 1
	tenantB int64 = 2
)

// clock is the events' time in store tests.
var clock = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func newStore(t *testing.T) *postgres.Store {
	s, _ := newStoreAndPool(t)
	return s
}

func newStoreAndPool(t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	return postgres.New(pool, func() time.Time { return clock }), pool
}

func wantCode(t *testing.T, err error, code apperr.Code) *apperr.Error {
	t.Helper()
	if !apperr.Is(err, code) {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	return err.(*apperr.Error)
}

func mustTopic(t *testing.T, s *postgres.Store, customerID int64, name string) topics.Topic {
	t.Helper()
	tp, err := s.CreateTopic(context.Background(), customerID, topics.TopicInput{Name: name, Description: name + " description"})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func mustAction(t *testing.T, s *postgres.Store, customerID int64, name, hook string, channel *int64, active bool) topics.Action {
	t.Helper()
	a, err := s.CreateAction(context.Background(), customerID, topics.Action{Name: name, HookName: hook, ChannelID: channel, IsActive: active})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustDocument(t *testing.T, s *postgres.Store, customerID int64, title string, channel *int64, hook string, isHook bool) topics.Document {
	t.Helper()
	d, err := s.CreateDocument(context.Background(), customerID, topics.Document{Title: title, Content: title + " content", ChannelID: channel, HookName: hook, IsHook: isHook})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func accept(topics.TopicActionRefs) error { return nil }

func strictCheck(items []topics.NewTopicAction, bulk bool) func(topics.TopicActionRefs) error {
	return func(r topics.TopicActionRefs) error { return topics.CheckTopicActionRefs(items, r, bulk) }
}

func mustMapAction(t *testing.T, s *postgres.Store, customerID int64, it topics.NewTopicAction) topics.TopicAction {
	t.Helper()
	items := []topics.NewTopicAction{it}
	ms, err := s.CreateTopicActions(context.Background(), customerID, items, strictCheck(items, false))
	if err != nil {
		t.Fatal(err)
	}
	return ms[0]
}

func ptr[T any](v T) *T { return &v }

func TestTopicsCRUDAndTenancy(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	a := mustTopic(t, s, tenantA, "Billing")
	if a.ID <= 0 || a.CustomerID != tenantA || a.Name != "Billing" || a.Description != "Billing description" {
		t.Fatalf("created %+v", a)
	}
	got, err := s.Topic(ctx, tenantA, a.ID)
	if err != nil || got.Name != "Billing" {
		t.Fatalf("Topic = %+v, %v", got, err)
	}
	// Another tenant's id is simply not found, for every operation.
	_, err = s.Topic(ctx, tenantB, a.ID)
	wantCode(t, err, apperr.NotFound)
	_, err = s.UpdateTopic(ctx, tenantB, a.ID, topics.TopicInput{Name: "x"})
	wantCode(t, err, apperr.NotFound)
	_, err = s.DeleteTopic(ctx, tenantB, a.ID)
	wantCode(t, err, apperr.NotFound)

	// Names are unique per customer, ignoring case; other tenants may reuse.
	_, err = s.CreateTopic(ctx, tenantA, topics.TopicInput{Name: "BILLING"})
	e := wantCode(t, err, apperr.Conflict)
	if e.Fields["name"] == "" {
		t.Fatalf("conflict names no field: %+v", e)
	}
	mustTopic(t, s, tenantB, "Billing")

	b := mustTopic(t, s, tenantA, "Shipping")
	_, err = s.UpdateTopic(ctx, tenantA, b.ID, topics.TopicInput{Name: "billing"})
	wantCode(t, err, apperr.Conflict)
	up, err := s.UpdateTopic(ctx, tenantA, b.ID, topics.TopicInput{Name: "Shipping & delivery", Description: ""})
	if err != nil || up.Name != "Shipping & delivery" || up.Description != "" {
		t.Fatalf("update = %+v, %v", up, err)
	}

	// Soft delete: gone for reads, name free again, second delete 404.
	if _, err := s.DeleteTopic(ctx, tenantA, a.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.Topic(ctx, tenantA, a.ID)
	wantCode(t, err, apperr.NotFound)
	_, err = s.DeleteTopic(ctx, tenantA, a.ID)
	wantCode(t, err, apperr.NotFound)
	_, err = s.UpdateTopic(ctx, tenantA, a.ID, topics.TopicInput{Name: "Zombie"})
	wantCode(t, err, apperr.NotFound)
	again := mustTopic(t, s, tenantA, "billing")
	if again.ID == a.ID {
		t.Fatal("a new topic reused the deleted id")
	}
	names, err := s.TopicNames(ctx, tenantA, []int64{a.ID, again.ID, b.ID, 999999})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 || names[again.ID] != "billing" || names[b.ID] != "Shipping & delivery" {
		t.Fatalf("names = %v", names)
	}
	all, err := s.AllTopics(ctx, tenantA)
	if err != nil || len(all) != 2 || all[0].ID != b.ID || all[1].ID != again.ID {
		t.Fatalf("all = %+v, %v", all, err)
	}
}

func TestListTopicsFilterSortPaging(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, n := range []string{"delta", "Alpha", "charlie", "Bravo", "alphabet soup"} {
		mustTopic(t, s, tenantA, n)
	}
	mustTopic(t, s, tenantB, "alpha other tenant")

	names := func(ts []topics.Topic) []string {
		var out []string
		for _, tp := range ts {
			out = append(out, tp.Name)
		}
		return out
	}
	cases := []struct {
		name  string
		f     topics.TopicFilter
		p     paging.Page
		want  []string
		total int
	}{
		{"default id order", topics.TopicFilter{}, paging.Page{Number: 1, Size: 20}, []string{"delta", "Alpha", "charlie", "Bravo", "alphabet soup"}, 5},
		{"by name", topics.TopicFilter{Sort: topics.TopicSort{ByName: true}}, paging.Page{Number: 1, Size: 20}, []string{"Alpha", "alphabet soup", "Bravo", "charlie", "delta"}, 5},
		{"by name desc", topics.TopicFilter{Sort: topics.TopicSort{ByName: true, Desc: true}}, paging.Page{Number: 1, Size: 2}, []string{"delta", "charlie"}, 5},
		{"id desc", topics.TopicFilter{Sort: topics.TopicSort{Desc: true}}, paging.Page{Number: 1, Size: 1}, []string{"alphabet soup"}, 5},
		{"contains, case-insensitive", topics.TopicFilter{NameContains: "ALPH"}, paging.Page{Number: 1, Size: 20}, []string{"Alpha", "alphabet soup"}, 2},
		{"contains, second page", topics.TopicFilter{NameContains: "alph"}, paging.Page{Number: 2, Size: 1}, []string{"alphabet soup"}, 2},
		{"contains, past the end", topics.TopicFilter{NameContains: "alph"}, paging.Page{Number: 3, Size: 1}, nil, 2},
		{"wildcards are literal", topics.TopicFilter{NameContains: "%"}, paging.Page{Number: 1, Size: 20}, nil, 0},
		{"last page", topics.TopicFilter{}, paging.Page{Number: 3, Size: 2}, []string{"alphabet soup"}, 5},
		{"past the end", topics.TopicFilter{}, paging.Page{Number: 4, Size: 2}, nil, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, total, err := s.ListTopics(ctx, tenantA, c.f, c.p)
			if err != nil {
				t.Fatal(err)
			}
			if total != c.total || len(ts) != len(c.want) {
				t.Fatalf("got %v (total %d), want %v (total %d)", names(ts), total, c.want, c.total)
			}
			for i := range c.want {
				if ts[i].Name != c.want[i] {
					t.Fatalf("got %v, want %v", names(ts), c.want)
				}
			}
		})
	}
}

func TestTopicActions(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	t1 := mustTopic(t, s, tenantA, "t1")
	t2 := mustTopic(t, s, tenantA, "t2")
	a1 := mustAction(t, s, tenantA, "notify", "slack", ptr[int64](7), true)
	a2 := mustAction(t, s, tenantA, "escalate", "Pager", nil, true)
	a3 := mustAction(t, s, tenantA, "off", "slack", ptr[int64](7), false)
	bTopic := mustTopic(t, s, tenantB, "b")
	bAction := mustAction(t, s, tenantB, "b", "slack", nil, true)

	m1 := mustMapAction(t, s, tenantA, topics.NewTopicAction{TopicID: t1.ID, ActionID: a1.ID, Priority: 20, IsActive: true})
	m2 := mustMapAction(t, s, tenantA, topics.NewTopicAction{TopicID: t1.ID, ActionID: a2.ID, Priority: 10, IsActive: true})
	m3 := mustMapAction(t, s, tenantA, topics.NewTopicAction{TopicID: t1.ID, ActionID: a3.ID, Priority: 5, IsActive: true})
	m4 := mustMapAction(t, s, tenantA, topics.NewTopicAction{TopicID: t2.ID, ActionID: a1.ID, Priority: 1, IsActive: false})

	// Duplicate pair: 409 naming the field.
	items := []topics.NewTopicAction{{TopicID: t1.ID, ActionID: a1.ID, Priority: 1}}
	_, err := s.CreateTopicActions(ctx, tenantA, items, strictCheck(items, false))
	if e := wantCode(t, err, apperr.Conflict); e.Fields["actionID"] == "" {
		t.Fatalf("fields = %v", e.Fields)
	}
	// Other tenant's topic and action are "missing": 400.
	items = []topics.NewTopicAction{{TopicID: bTopic.ID, ActionID: bAction.ID, Priority: 1}}
	_, err = s.CreateTopicActions(ctx, tenantA, items, strictCheck(items, false))
	if e := wantCode(t, err, apperr.Invalid); e.Fields["topicID"] == "" || e.Fields["actionID"] == "" {
		t.Fatalf("fields = %v", e.Fields)
	}
	// Even without the domain check, the composite foreign keys refuse a
	// cross-tenant link.
	_, err = s.CreateTopicActions(ctx, tenantA, items, accept)
	wantCode(t, err, apperr.Invalid)

	ids := func(ms []topics.TopicAction) []int64 {
		var out []int64
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	all := paging.Page{Number: 1, Size: 100}
	cases := []struct {
		name string
		f    topics.TopicActionFilter
		want []int64
	}{
		{"all, by topic then priority", topics.TopicActionFilter{}, []int64{m3.ID, m2.ID, m1.ID, m4.ID}},
		{"topic", topics.TopicActionFilter{TopicID: &t1.ID}, []int64{m3.ID, m2.ID, m1.ID}},
		{"action", topics.TopicActionFilter{ActionID: &a1.ID}, []int64{m1.ID, m4.ID}},
		{"hook name, case-insensitive", topics.TopicActionFilter{HookName: "SLACK"}, []int64{m3.ID, m1.ID, m4.ID}},
		{"channel", topics.TopicActionFilter{ChannelID: ptr[int64](7)}, []int64{m3.ID, m1.ID, m4.ID}},
		{"inactive mappings", topics.TopicActionFilter{IsActive: ptr(false)}, []int64{m4.ID}},
		{"combined", topics.TopicActionFilter{TopicID: &t1.ID, HookName: "slack", IsActive: ptr(true)}, []int64{m3.ID, m1.ID}},
		{"other tenant's topic", topics.TopicActionFilter{TopicID: &bTopic.ID}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ms, total, err := s.ListTopicActions(ctx, tenantA, c.f, all)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(ms); total != len(c.want) || len(got) != len(c.want) || (len(got) > 0 && !equal(got, c.want)) {
				t.Fatalf("got %v (total %d), want %v", got, total, c.want)
			}
		})
	}

	// Active actions for automation: active mapping and active action, by priority.
	la, err := s.ActiveActions(ctx, tenantA, t1.ID)
	if err != nil || len(la) != 2 || la[0].ActionID != a2.ID || la[1].ActionID != a1.ID || la[0].HookName != "Pager" {
		t.Fatalf("active = %+v, %v", la, err)
	}

	// Priority update, tenancy.
	if _, err := s.UpdateTopicActionPriority(ctx, tenantB, m1.ID, 1); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("cross-tenant update: %v", err)
	}
	up, err := s.UpdateTopicActionPriority(ctx, tenantA, m1.ID, 1)
	if err != nil || up.Priority != 1 || up.ActionID != a1.ID {
		t.Fatalf("update = %+v, %v", up, err)
	}
	if _, err := s.DeleteTopicAction(ctx, tenantB, m1.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("cross-tenant delete: %v", err)
	}

	// Deleting the topic hides its mappings everywhere.
	if _, err := s.DeleteTopic(ctx, tenantA, t1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TopicAction(ctx, tenantA, m1.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("mapping of deleted topic: %v", err)
	}
	if _, err := s.UpdateTopicActionPriority(ctx, tenantA, m1.ID, 3); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("update mapping of deleted topic: %v", err)
	}
	if _, err := s.DeleteTopicAction(ctx, tenantA, m2.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("delete mapping of deleted topic: %v", err)
	}
	if la, err := s.ActiveActions(ctx, tenantA, t1.ID); err != nil || len(la) != 0 {
		t.Fatalf("active of deleted topic = %+v, %v", la, err)
	}
	ms, total, err := s.ListTopicActions(ctx, tenantA, topics.TopicActionFilter{}, all)
	if err != nil || total != 1 || ms[0].ID != m4.ID {
		t.Fatalf("list after delete = %v (%d), %v", ids(ms), total, err)
	}
	items = []topics.NewTopicAction{{TopicID: t1.ID, ActionID: a1.ID, Priority: 1}}
	_, err = s.CreateTopicActions(ctx, tenantA, items, strictCheck(items, false))
	if e := wantCode(t, err, apperr.Invalid); e.Fields["topicID"] == "" {
		t.Fatalf("mapping to deleted topic: %v", e.Fields)
	}

	// Deleting an action deletes its mappings and reports them.
	removed, err := s.DeleteAction(ctx, tenantA, a1.ID)
	if err != nil || len(removed) != 2 {
		t.Fatalf("removed = %+v, %v", removed, err)
	}
	if _, err := s.TopicAction(ctx, tenantA, m4.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("mapping of deleted action: %v", err)
	}
	if _, err := s.DeleteAction(ctx, tenantA, a1.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.DeleteAction(ctx, tenantB, a2.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("cross-tenant action delete: %v", err)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBulkIsAllOrNothing(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	t1 := mustTopic(t, s, tenantA, "t1")
	a1 := mustAction(t, s, tenantA, "a1", "h", nil, true)
	a2 := mustAction(t, s, tenantA, "a2", "h", nil, true)
	a3 := mustAction(t, s, tenantA, "a3", "h", nil, true)
	existing := mustMapAction(t, s, tenantA, topics.NewTopicAction{TopicID: t1.ID, ActionID: a3.ID, Priority: 0, IsActive: true})

	count := func() int {
		_, total, err := s.ListTopicActions(ctx, tenantA, topics.TopicActionFilter{}, paging.Page{Number: 1, Size: 100})
		if err != nil {
			t.Fatal(err)
		}
		return total
	}

	// A missing action in item 2 fails the whole batch with 400.
	items := []topics.NewTopicAction{
		{TopicID: t1.ID, ActionID: a1.ID, Priority: 1, IsActive: true},
		{TopicID: t1.ID, ActionID: a2.ID, Priority: 2, IsActive: true},
		{TopicID: t1.ID, ActionID: 987654, Priority: 3, IsActive: true},
	}
	_, err := s.CreateTopicActions(ctx, tenantA, items, strictCheck(items, true))
	if e := wantCode(t, err, apperr.Invalid); e.Fields["items[2].actionID"] == "" || len(e.Fields) != 1 {
		t.Fatalf("fields = %v", e.Fields)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d mappings after a failed bulk, want 1", n)
	}
	// An existing pair fails it with 409 naming the item.
	items[2] = topics.NewTopicAction{TopicID: t1.ID, ActionID: existing.ActionID, Priority: 3}
	_, err = s.CreateTopicActions(ctx, tenantA, items, strictCheck(items, true))
	if e := wantCode(t, err, apperr.Conflict); e.Fields["items[2].actionID"] == "" {
		t.Fatalf("fields = %v", e.Fields)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d mappings after a failed bulk, want 1", n)
	}
	// A failure at insert time (after the check passed) rolls back too.
	items[2] = topics.NewTopicAction{TopicID: t1.ID, ActionID: existing.ActionID, Priority: 3}
	_, err = s.CreateTopicActions(ctx, tenantA, items, accept)
	wantCode(t, err, apperr.Conflict)
	if n := count(); n != 1 {
		t.Fatalf("%d mappings after a failed insert, want 1", n)
	}
	// The valid batch creates everything, in order.
	items = items[:2]
	ms, err := s.CreateTopicActions(ctx, tenantA, items, strictCheck(items, true))
	if err != nil || len(ms) != 2 || ms[0].ActionID != a1.ID || ms[1].ActionID != a2.ID || ms[1].Priority != 2 {
		t.Fatalf("bulk = %+v, %v", ms, err)
	}
	if n := count(); n != 3 {
		t.Fatalf("%d mappings, want 3", n)
	}
}

func TestConcurrentDuplicateMappingsConflict(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	tp := mustTopic(t, s, tenantA, "t")
	a := mustAction(t, s, tenantA, "a", "h", nil, true)
	items := []topics.NewTopicAction{{TopicID: tp.ID, ActionID: a.ID, Priority: 1, IsActive: true}}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.CreateTopicActions(ctx, tenantA, items, strictCheck(items, false))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !apperr.Is(err, apperr.Conflict):
			t.Fatalf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d creates succeeded, want exactly 1", ok)
	}
}

func TestTopicDocuments(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	t1 := mustTopic(t, s, tenantA, "t1")
	t2 := mustTopic(t, s, tenantA, "t2")
	d1 := mustDocument(t, s, tenantA, "faq", ptr[int64](3), "", false)
	d2 := mustDocument(t, s, tenantA, "live stock", nil, "Stock", true)
	d3 := mustDocument(t, s, tenantA, "terms", ptr[int64](3), "", false)
	bDoc := mustDocument(t, s, tenantB, "b", nil, "", false)

	create := func(topicID, docID int64, score int) (topics.TopicDocument, error) {
		return s.CreateTopicDocument(ctx, tenantA, topics.TopicDocument{TopicID: topicID, DocumentID: docID, RelevanceScore: score})
	}
	m1, err := create(t1.ID, d1.ID, 50)
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := create(t1.ID, d2.ID, 90)
	m3, _ := create(t2.ID, d1.ID, 70)
	m4, _ := create(t2.ID, d3.ID, 10)

	_, err = create(t1.ID, d1.ID, 1)
	if e := wantCode(t, err, apperr.Conflict); e.Fields["documentID"] == "" {
		t.Fatalf("fields = %v", e.Fields)
	}
	_, err = create(t1.ID, bDoc.ID, 1)
	if e := wantCode(t, err, apperr.Invalid); e.Fields["documentID"] == "" {
		t.Fatalf("fields = %v", e.Fields)
	}
	_, err = create(99999, d1.ID, 1)
	if e := wantCode(t, err, apperr.Invalid); e.Fields["topicID"] == "" {
		t.Fatalf("fields = %v", e.Fields)
	}

	list := func(f topics.TopicDocumentFilter) []int64 {
		ms, total, err := s.ListTopicDocuments(ctx, tenantA, f, paging.Page{Number: 1, Size: 100})
		if err != nil || total != len(ms) {
			t.Fatalf("list: %v (total %d of %d)", err, total, len(ms))
		}
		var out []int64
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	cases := []struct {
		name string
		f    topics.TopicDocumentFilter
		want []int64
	}{
		{"all, by topic then relevance", topics.TopicDocumentFilter{}, []int64{m2.ID, m1.ID, m3.ID, m4.ID}},
		{"topic", topics.TopicDocumentFilter{TopicID: &t2.ID}, []int64{m3.ID, m4.ID}},
		{"document", topics.TopicDocumentFilter{DocumentID: &d1.ID}, []int64{m1.ID, m3.ID}},
		{"channel", topics.TopicDocumentFilter{ChannelID: ptr[int64](3)}, []int64{m1.ID, m3.ID, m4.ID}},
		{"hook name", topics.TopicDocumentFilter{HookName: "stock"}, []int64{m2.ID}},
		{"is hook", topics.TopicDocumentFilter{IsHook: ptr(false)}, []int64{m1.ID, m3.ID, m4.ID}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := list(c.f); !equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}

	// Linked documents: each document once with its best link, by relevance.
	ld, err := s.LinkedDocuments(ctx, tenantA, []int64{t1.ID, t2.ID}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ld) != 3 || ld[0].DocumentID != d2.ID || ld[1].DocumentID != d1.ID || ld[1].RelevanceScore != 70 || ld[1].TopicID != t2.ID || ld[2].DocumentID != d3.ID {
		t.Fatalf("linked = %+v", ld)
	}
	if ld, _ := s.LinkedDocuments(ctx, tenantA, []int64{t1.ID, t2.ID}, 1); len(ld) != 1 {
		t.Fatalf("limit ignored: %+v", ld)
	}
	if ld, _ := s.LinkedDocuments(ctx, tenantB, []int64{t1.ID, t2.ID}, 10); len(ld) != 0 {
		t.Fatalf("other tenant sees %+v", ld)
	}

	if _, err := s.UpdateTopicDocumentScore(ctx, tenantB, m1.ID, 5); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("cross-tenant update: %v", err)
	}
	if up, err := s.UpdateTopicDocumentScore(ctx, tenantA, m1.ID, 5); err != nil || up.RelevanceScore != 5 {
		t.Fatalf("update = %+v, %v", up, err)
	}

	// Topic deletion hides its document links.
	if _, err := s.DeleteTopic(ctx, tenantA, t2.ID); err != nil {
		t.Fatal(err)
	}
	if got := list(topics.TopicDocumentFilter{}); !equal(got, []int64{m2.ID, m1.ID}) {
		t.Fatalf("after topic delete: %v", got)
	}
	if ld, _ := s.LinkedDocuments(ctx, tenantA, []int64{t2.ID}, 10); len(ld) != 0 {
		t.Fatalf("deleted topic's documents: %+v", ld)
	}
	if _, err := s.TopicDocument(ctx, tenantA, m3.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("mapping of deleted topic: %v", err)
	}
	// Document deletion removes its links.
	removed, err := s.DeleteDocument(ctx, tenantA, d1.ID)
	if err != nil || len(removed) != 2 {
		t.Fatalf("removed = %+v, %v", removed, err)
	}
	if got := list(topics.TopicDocumentFilter{}); !equal(got, []int64{m2.ID}) {
		t.Fatalf("after document delete: %v", got)
	}
}

func TestPageMappingsLookup(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	help := mustTopic(t, s, tenantA, "help")
	billing := mustTopic(t, s, tenantA, "billing")
	invoices := mustTopic(t, s, tenantA, "invoices")
	pricing := mustTopic(t, s, tenantA, "pricing")
	other := mustTopic(t, s, tenantB, "other")

	create := func(customerID, topicID int64, pattern string, mt topics.MatchType) topics.PageMapping {
		t.Helper()
		m, err := s.CreatePageMapping(ctx, customerID, topics.PageMapping{TopicID: topicID, URLPattern: pattern, MatchType: mt})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	create(tenantA, help.ID, "https://shop.example/", topics.MatchPrefix)
	create(tenantA, billing.ID, "https://shop.example/account/billing", topics.MatchPrefix)
	create(tenantA, invoices.ID, "https://shop.example/account/billing", topics.MatchPrefix)
	exact := create(tenantA, pricing.ID, "https://shop.example/pricing", topics.MatchExact)
	create(tenantB, other.ID, "https://shop.example/", topics.MatchPrefix)

	_, err := s.CreatePageMapping(ctx, tenantA, topics.PageMapping{TopicID: pricing.ID, URLPattern: "https://shop.example/pricing", MatchType: topics.MatchExact})
	wantCode(t, err, apperr.Conflict)
	_, err = s.CreatePageMapping(ctx, tenantA, topics.PageMapping{TopicID: other.ID, URLPattern: "https://x.example/", MatchType: topics.MatchExact})
	if e := wantCode(t, err, apperr.Invalid); e.Fields["topicID"] == "" {
		t.Fatalf("fields = %v", e.Fields)
	}

	lookup := func(u string) []int64 {
		ts, err := s.TopicsForURL(ctx, tenantA, u)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, tp := range ts {
			out = append(out, tp.ID)
		}
		return out
	}
	cases := []struct {
		url  string
		want []int64
	}{
		{"https://shop.example/account/billing/2024", []int64{billing.ID, invoices.ID}},
		{"https://shop.example/account", []int64{help.ID}},
		{"https://shop.example/pricing", []int64{pricing.ID, help.ID}},
		{"https://shop.example/pricing/eu", []int64{help.ID}},
		{"https://elsewhere.example/", nil},
	}
	for _, c := range cases {
		if got := lookup(c.url); !equal(got, c.want) {
			t.Errorf("lookup %s = %v, want %v", c.url, got, c.want)
		}
	}

	// Update moves the mapping; update to another tenant's topic is 400.
	if _, err := s.UpdatePageMapping(ctx, tenantA, exact.ID, topics.PageMapping{TopicID: other.ID, URLPattern: "https://shop.example/p", MatchType: topics.MatchExact}); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("update to foreign topic: %v", err)
	}
	if _, err := s.UpdatePageMapping(ctx, tenantB, exact.ID, topics.PageMapping{TopicID: other.ID, URLPattern: "https://shop.example/p", MatchType: topics.MatchExact}); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("cross-tenant update: %v", err)
	}
	up, err := s.UpdatePageMapping(ctx, tenantA, exact.ID, topics.PageMapping{TopicID: billing.ID, URLPattern: "https://shop.example/pricing", MatchType: topics.MatchExact})
	if err != nil || up.TopicID != billing.ID {
		t.Fatalf("update = %+v, %v", up, err)
	}
	if got := lookup("https://shop.example/pricing"); !equal(got, []int64{billing.ID, help.ID}) {
		t.Fatalf("after update: %v", got)
	}

	// A deleted topic's mappings match nothing; the next longest prefix wins.
	for _, id := range []int64{billing.ID, invoices.ID} {
		if _, err := s.DeleteTopic(ctx, tenantA, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := lookup("https://shop.example/account/billing/2024"); !equal(got, []int64{help.ID}) {
		t.Fatalf("after delete: %v", got)
	}
	if _, err := s.PageMapping(ctx, tenantA, exact.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("mapping of deleted topic: %v", err)
	}
	ms, total, err := s.ListPageMappings(ctx, tenantA, topics.PageMappingFilter{}, paging.Page{Number: 1, Size: 20})
	if err != nil || total != 1 || ms[0].TopicID != help.ID {
		t.Fatalf("list = %+v (%d), %v", ms, total, err)
	}
	ms, total, err = s.ListPageMappings(ctx, tenantA, topics.PageMappingFilter{MatchType: topics.MatchExact}, paging.Page{Number: 1, Size: 20})
	if err != nil || total != 0 || len(ms) != 0 {
		t.Fatalf("exact list = %+v (%d), %v", ms, total, err)
	}
}

func TestActionsAndDocumentsCRUD(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	a := mustAction(t, s, tenantA, "notify", "slack", ptr[int64](4), true)
	if _, err := s.Action(ctx, tenantB, a.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("cross-tenant read: %v", err)
	}
	if _, err := s.UpdateAction(ctx, tenantB, a.ID, topics.Action{Name: "x", HookName: "y"}); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("cross-tenant update: %v", err)
	}
	up, err := s.UpdateAction(ctx, tenantA, a.ID, topics.Action{Name: "n2", HookName: "h2", ChannelID: nil, IsActive: false})
	if err != nil || up.Name != "n2" || up.ChannelID != nil || up.IsActive {
		t.Fatalf("update = %+v, %v", up, err)
	}
	as, total, err := s.ListActions(ctx, tenantA, paging.Page{Number: 1, Size: 10})
	if err != nil || total != 1 || len(as) != 1 {
		t.Fatalf("list = %+v, %d, %v", as, total, err)
	}
	// The confirmation flag is stored, read back and passed to automation.
	up, err = s.UpdateAction(ctx, tenantA, a.ID, topics.Action{Name: "refund", HookName: "h3", IsActive: true, RequiresConfirmation: true})
	if err != nil || !up.RequiresConfirmation {
		t.Fatalf("update = %+v, %v", up, err)
	}
	if got, err := s.Action(ctx, tenantA, a.ID); err != nil || !got.RequiresConfirmation {
		t.Fatalf("read = %+v, %v", got, err)
	}
	tp := mustTopic(t, s, tenantA, "Refunds")
	if _, err := s.CreateTopicActions(ctx, tenantA, []topics.NewTopicAction{{TopicID: tp.ID, ActionID: a.ID, Priority: 1, IsActive: true}}, accept); err != nil {
		t.Fatal(err)
	}
	if la, err := s.ActiveActions(ctx, tenantA, tp.ID); err != nil || len(la) != 1 || !la[0].RequiresConfirmation {
		t.Fatalf("active = %+v, %v", la, err)
	}

	d := mustDocument(t, s, tenantA, "faq", nil, "", false)
	if _, err := s.Document(ctx, tenantB, d.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("cross-tenant read: %v", err)
	}
	if _, err := s.DeleteDocument(ctx, tenantB, d.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("cross-tenant delete: %v", err)
	}
	ud, err := s.UpdateDocument(ctx, tenantA, d.ID, topics.Document{Title: "t", Content: "c", ChannelID: ptr[int64](9), HookName: "h", IsHook: true})
	if err != nil || ud.Title != "t" || *ud.ChannelID != 9 || !ud.IsHook {
		t.Fatalf("update = %+v, %v", ud, err)
	}
	ds, total, err := s.ListDocuments(ctx, tenantB, paging.Page{Number: 1, Size: 10})
	if err != nil || total != 0 || len(ds) != 0 {
		t.Fatalf("other tenant list = %+v, %d, %v", ds, total, err)
	}
}
