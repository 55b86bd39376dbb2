package topics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
)

// fakeStore implements the few Store methods these tests reach; any other
// call panics through the nil embedded interface.
type fakeStore struct {
	Store
	calls   int
	deleted Topic
}

func (f *fakeStore) CreateTopic(_ context.Context, customerID int64, in TopicInput) (Topic, error) {
	f.calls++
	return Topic{ID: 7, CustomerID: customerID, Name: in.Name}, nil
}

func (f *fakeStore) DeleteTopic(_ context.Context, customerID, id int64) (Topic, error) {
	f.calls++
	if id != f.deleted.ID {
		return Topic{}, apperr.E(apperr.NotFound, "topic not found")
	}
	return f.deleted, nil
}

type recorded struct {
	eventType string
	topic     Topic
}

type fakeEvents struct {
	got  []recorded
	fail bool
}

func (f *fakeEvents) TopicChanged(_ context.Context, eventType string, t Topic) error {
	f.got = append(f.got, recorded{eventType, t})
	if f.fail {
		return errors.New("nats down")
	}
	return nil
}

func (f *fakeEvents) MappingChanged(context.Context, string, int64, contracts.MappingChanged) error {
	return nil
}

func TestServiceEvents(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := &fakeStore{deleted: Topic{ID: 5, CustomerID: 1, Name: "gone"}}
	ev := &fakeEvents{}
	svc := NewService(st, ev, log)
	ctx := context.Background()

	// Invalid input never reaches the store or the bus.
	if _, err := svc.CreateTopic(ctx, 1, TopicInput{Name: " "}); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("err = %v", err)
	}
	if st.calls != 0 || len(ev.got) != 0 {
		t.Fatalf("store calls %d, events %v", st.calls, ev.got)
	}
	if _, err := svc.CreateTopic(ctx, 1, TopicInput{Name: " Billing "}); err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteTopic(ctx, 1, 5); err != nil {
		t.Fatal(err)
	}
	// A failed delete publishes nothing.
	if err := svc.DeleteTopic(ctx, 1, 6); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("err = %v", err)
	}
	want := []recorded{{contracts.EventTopicCreated, Topic{ID: 7, CustomerID: 1, Name: "Billing"}}, {contracts.EventTopicDeleted, st.deleted}}
	if len(ev.got) != len(want) || ev.got[0] != want[0] || ev.got[1] != want[1] {
		t.Fatalf("events = %+v", ev.got)
	}

	// The change is committed: a bus failure is logged, not returned.
	ev.fail = true
	if err := svc.DeleteTopic(ctx, 1, 5); err != nil {
		t.Fatalf("publish failure leaked: %v", err)
	}
}

func TestRPCInputChecks(t *testing.T) {
	svc := NewService(&fakeStore{}, &fakeEvents{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	if _, err := svc.TopicNames(ctx, 0, []int64{1}); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("customer 0: %v", err)
	}
	if _, err := svc.TopicNames(ctx, 1, make([]int64, MaxLookupIDs+1)); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("too many ids: %v", err)
	}
	if names, err := svc.TopicNames(ctx, 1, nil); err != nil || names == nil || len(names) != 0 {
		t.Fatalf("no ids: %v, %v", names, err)
	}
	if _, err := svc.ActiveActions(ctx, 1, 0); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("topic 0: %v", err)
	}
	if _, err := svc.LinkedDocuments(ctx, 1, []int64{1}, -1); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("negative limit: %v", err)
	}
	if docs, err := svc.LinkedDocuments(ctx, 1, nil, 0); err != nil || len(docs) != 0 {
		t.Fatalf("no topics: %v, %v", docs, err)
	}
}
