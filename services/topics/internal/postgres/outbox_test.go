package postgres_test

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/requestid"
	"supportplatform.dev/services/topics/internal/topics"
)

// event is what a test expects of one outbox row.
type event struct {
	typ      string
	customer int64
	data     any // contracts.TopicChanged or contracts.MappingChanged
}

func topicEvent(typ string, tp topics.Topic) event {
	return event{typ, tp.CustomerID, contracts.TopicChanged{TopicID: tp.ID, Name: tp.Name, Description: tp.Description}}
}

func mappingEvent(typ string, customer int64, op string, id, topicID, targetID int64) event {
	return event{typ, customer, contracts.MappingChanged{Op: op, MappingID: id, TopicID: topicID, TargetID: targetID}}
}

// takeOutbox checks that the outbox holds exactly want, in commit order,
// each in the contracts.Event envelope under its subject, and empties it (as
// the relay does once it has published them).
func takeOutbox(t *testing.T, pool *pgxpool.Pool, reqID string, want ...event) {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `DELETE FROM outbox RETURNING seq, event_id, subject, data, request_id`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		seq                  int64
		id, subject, request string
		data                 []byte
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.seq, &x.id, &x.subject, &x.data, &x.request)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("outbox holds %d events, want %d: %+v", len(got), len(want), got)
	}
	// DELETE ... RETURNING has no order: commit order is seq order.
	slices.SortFunc(got, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
	for i, w := range want {
		var env contracts.Event[json.RawMessage]
		if err := json.Unmarshal(got[i].data, &env); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, got[i].data)
		}
		wantData, _ := json.Marshal(w.data)
		if env.Type != w.typ || env.CustomerID != w.customer || string(env.Data) != string(wantData) ||
			got[i].subject != contracts.EventSubject(w.typ) || env.ID != got[i].id || env.ID == "" ||
			!env.OccurredAt.Equal(clock) || got[i].request != reqID {
			t.Fatalf("event %d = %s (subject %s, id %s, request %q), want %s customer %d data %s request %q",
				i, got[i].data, got[i].subject, got[i].id, got[i].request, w.typ, w.customer, wantData, reqID)
		}
	}
}

// Every change writes its events in its own transaction; reads and changes
// of actions and documents themselves write none.
func TestChangesWriteTheirEvents(t *testing.T) {
	s, pool := newStoreAndPool(t)
	const req = "req-outbox"
	ctx := requestid.With(context.Background(), req)
	const (
		topicAction   = contracts.EventTopicActionChanged
		topicDocument = contracts.EventTopicDocumentChanged
		pageMapping   = contracts.EventPageMappingChanged
	)

	tp, err := s.CreateTopic(ctx, tenantA, topics.TopicInput{Name: "Billing", Description: "invoices"})
	if err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, topicEvent(contracts.EventTopicCreated, tp))
	if tp, err = s.UpdateTopic(ctx, tenantA, tp.ID, topics.TopicInput{Name: "Billing & invoices"}); err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, topicEvent(contracts.EventTopicUpdated, tp))

	a1 := mustAction(t, s, tenantA, "notify", "slack", nil, true)
	a2 := mustAction(t, s, tenantA, "page", "pager", nil, true)
	d1 := mustDocument(t, s, tenantA, "faq", nil, "", false)
	if _, err := s.UpdateAction(ctx, tenantA, a1.ID, topics.Action{Name: "notify", HookName: "slack2", IsActive: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateDocument(ctx, tenantA, d1.ID, topics.Document{Title: "faq 2"}); err != nil {
		t.Fatal(err)
	}
	_, _, _ = s.ListTopics(ctx, tenantA, topics.TopicFilter{}, paging.Page{Number: 1, Size: 20})
	takeOutbox(t, pool, req)

	// A bulk create: one event per mapping, in request order.
	items := []topics.NewTopicAction{{TopicID: tp.ID, ActionID: a2.ID, Priority: 2}, {TopicID: tp.ID, ActionID: a1.ID, Priority: 1}}
	ms, err := s.CreateTopicActions(ctx, tenantA, items, strictCheck(items, true))
	if err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req,
		mappingEvent(topicAction, tenantA, topics.OpCreated, ms[0].ID, tp.ID, a2.ID),
		mappingEvent(topicAction, tenantA, topics.OpCreated, ms[1].ID, tp.ID, a1.ID))
	if _, err := s.UpdateTopicActionPriority(ctx, tenantA, ms[0].ID, 7); err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, mappingEvent(topicAction, tenantA, topics.OpUpdated, ms[0].ID, tp.ID, a2.ID))
	if _, err := s.DeleteTopicAction(ctx, tenantA, ms[0].ID); err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, mappingEvent(topicAction, tenantA, topics.OpDeleted, ms[0].ID, tp.ID, a2.ID))

	td, err := s.CreateTopicDocument(ctx, tenantA, topics.TopicDocument{TopicID: tp.ID, DocumentID: d1.ID, RelevanceScore: 5})
	if err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, mappingEvent(topicDocument, tenantA, topics.OpCreated, td.ID, tp.ID, d1.ID))
	if _, err := s.UpdateTopicDocumentScore(ctx, tenantA, td.ID, 50); err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, mappingEvent(topicDocument, tenantA, topics.OpUpdated, td.ID, tp.ID, d1.ID))
	if _, err := s.DeleteTopicDocument(ctx, tenantA, td.ID); err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, mappingEvent(topicDocument, tenantA, topics.OpDeleted, td.ID, tp.ID, d1.ID))

	pm, err := s.CreatePageMapping(ctx, tenantA, topics.PageMapping{TopicID: tp.ID, URLPattern: "https://a.example/", MatchType: topics.MatchPrefix})
	if err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, mappingEvent(pageMapping, tenantA, topics.OpCreated, pm.ID, tp.ID, 0))
	if _, err := s.UpdatePageMapping(ctx, tenantA, pm.ID, topics.PageMapping{TopicID: tp.ID, URLPattern: "https://b.example/", MatchType: topics.MatchExact}); err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, mappingEvent(pageMapping, tenantA, topics.OpUpdated, pm.ID, tp.ID, 0))
	if _, err := s.DeletePageMapping(ctx, tenantA, pm.ID); err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, mappingEvent(pageMapping, tenantA, topics.OpDeleted, pm.ID, tp.ID, 0))

	// Deleting an action or a document announces each mapping it removed.
	other := mustTopic(t, s, tenantA, "Other")
	m2 := mustMapAction(t, s, tenantA, topics.NewTopicAction{TopicID: other.ID, ActionID: a1.ID, Priority: 3, IsActive: true})
	takeOutbox(t, pool, "", topicEvent(contracts.EventTopicCreated, other),
		mappingEvent(topicAction, tenantA, topics.OpCreated, m2.ID, other.ID, a1.ID))
	td2, err := s.CreateTopicDocument(ctx, tenantA, topics.TopicDocument{TopicID: other.ID, DocumentID: d1.ID, RelevanceScore: 1})
	if err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, mappingEvent(topicDocument, tenantA, topics.OpCreated, td2.ID, other.ID, d1.ID))
	if _, err := s.DeleteAction(ctx, tenantA, a1.ID); err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req,
		mappingEvent(topicAction, tenantA, topics.OpDeleted, ms[1].ID, tp.ID, a1.ID),
		mappingEvent(topicAction, tenantA, topics.OpDeleted, m2.ID, other.ID, a1.ID))
	if _, err := s.DeleteDocument(ctx, tenantA, d1.ID); err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, mappingEvent(topicDocument, tenantA, topics.OpDeleted, td2.ID, other.ID, d1.ID))

	deleted, err := s.DeleteTopic(ctx, tenantA, tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, req, topicEvent(contracts.EventTopicDeleted, deleted))
}

// clearOutbox empties the outbox (what the relay does after publishing).
func clearOutbox(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
}

// A change that fails writes no event: the outbox row is written in the
// change's transaction and rolls back with it.
func TestFailedChangesWriteNoEvent(t *testing.T) {
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	tp := mustTopic(t, s, tenantA, "Billing")
	other := mustTopic(t, s, tenantA, "Shipping")
	a := mustAction(t, s, tenantA, "notify", "slack", nil, true)
	d := mustDocument(t, s, tenantA, "faq", nil, "", false)
	ta := mustMapAction(t, s, tenantA, topics.NewTopicAction{TopicID: tp.ID, ActionID: a.ID, Priority: 1, IsActive: true})
	if _, err := s.CreateTopicDocument(ctx, tenantA, topics.TopicDocument{TopicID: tp.ID, DocumentID: d.ID, RelevanceScore: 1}); err != nil {
		t.Fatal(err)
	}
	pm := topics.PageMapping{TopicID: tp.ID, URLPattern: "https://a.example/", MatchType: topics.MatchExact}
	if _, err := s.CreatePageMapping(ctx, tenantA, pm); err != nil {
		t.Fatal(err)
	}
	existing := []topics.NewTopicAction{{TopicID: tp.ID, ActionID: a.ID, Priority: 2}}
	missing := []topics.NewTopicAction{{TopicID: other.ID, ActionID: a.ID, Priority: 2}, {TopicID: other.ID, ActionID: 999999, Priority: 2}}

	cases := []struct {
		name string
		code apperr.Code
		do   func() error
	}{
		{"topic name taken", apperr.Conflict, func() error {
			_, err := s.CreateTopic(ctx, tenantA, topics.TopicInput{Name: "BILLING"})
			return err
		}},
		{"rename onto a taken name", apperr.Conflict, func() error {
			_, err := s.UpdateTopic(ctx, tenantA, other.ID, topics.TopicInput{Name: "billing"})
			return err
		}},
		{"update of another tenant's topic", apperr.NotFound, func() error {
			_, err := s.UpdateTopic(ctx, tenantB, tp.ID, topics.TopicInput{Name: "x"})
			return err
		}},
		{"delete of a missing topic", apperr.NotFound, func() error { _, err := s.DeleteTopic(ctx, tenantA, 999999); return err }},
		{"pair already mapped", apperr.Conflict, func() error {
			_, err := s.CreateTopicActions(ctx, tenantA, existing, strictCheck(existing, false))
			return err
		}},
		{"pair mapped, found at insert", apperr.Conflict, func() error {
			_, err := s.CreateTopicActions(ctx, tenantA, existing, accept)
			return err
		}},
		{"bulk with a missing action", apperr.Invalid, func() error {
			_, err := s.CreateTopicActions(ctx, tenantA, missing, strictCheck(missing, true))
			return err
		}},
		{"priority of a missing mapping", apperr.NotFound, func() error {
			_, err := s.UpdateTopicActionPriority(ctx, tenantA, 999999, 1)
			return err
		}},
		{"delete of another tenant's mapping", apperr.NotFound, func() error {
			_, err := s.DeleteTopicAction(ctx, tenantB, ta.ID)
			return err
		}},
		{"document already linked", apperr.Conflict, func() error {
			_, err := s.CreateTopicDocument(ctx, tenantA, topics.TopicDocument{TopicID: tp.ID, DocumentID: d.ID, RelevanceScore: 2})
			return err
		}},
		{"score of a missing link", apperr.NotFound, func() error {
			_, err := s.UpdateTopicDocumentScore(ctx, tenantA, 999999, 1)
			return err
		}},
		{"page pattern already mapped", apperr.Conflict, func() error { _, err := s.CreatePageMapping(ctx, tenantA, pm); return err }},
		{"page mapping to a missing topic", apperr.Invalid, func() error {
			_, err := s.CreatePageMapping(ctx, tenantA, topics.PageMapping{TopicID: 999999, URLPattern: "https://b.example/", MatchType: topics.MatchExact})
			return err
		}},
		{"delete of a missing page mapping", apperr.NotFound, func() error { _, err := s.DeletePageMapping(ctx, tenantA, 999999); return err }},
		{"delete of another tenant's action", apperr.NotFound, func() error { _, err := s.DeleteAction(ctx, tenantB, a.ID); return err }},
		{"delete of another tenant's document", apperr.NotFound, func() error { _, err := s.DeleteDocument(ctx, tenantB, d.ID); return err }},
	}
	clearOutbox(t, pool)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, c.do(), c.code)
			takeOutbox(t, pool, "")
		})
	}
}

// The change and its event commit together or not at all: when the event
// cannot be written, the change is rolled back too.
func TestChangeRollsBackWhenItsEventCannotBeWritten(t *testing.T) {
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	tp := mustTopic(t, s, tenantA, "Billing")
	clearOutbox(t, pool)
	if _, err := pool.Exec(ctx, `ALTER TABLE outbox ADD CONSTRAINT refuse_all CHECK (false) NOT VALID`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, tenantA, topics.TopicInput{Name: "Shipping"}); err == nil {
		t.Fatal("created a topic whose event could not be written")
	}
	if _, err := s.DeleteTopic(ctx, tenantA, tp.ID); err == nil {
		t.Fatal("deleted a topic whose event could not be written")
	}
	all, err := s.AllTopics(ctx, tenantA)
	if err != nil || len(all) != 1 || all[0].ID != tp.ID {
		t.Fatalf("topics = %+v, %v; want Billing alone", all, err)
	}
	if _, err := pool.Exec(ctx, `ALTER TABLE outbox DROP CONSTRAINT refuse_all`); err != nil {
		t.Fatal(err)
	}
	shipping, err := s.CreateTopic(ctx, tenantA, topics.TopicInput{Name: "Shipping"})
	if err != nil {
		t.Fatal(err)
	}
	takeOutbox(t, pool, "", topicEvent(contracts.EventTopicCreated, shipping))
}
