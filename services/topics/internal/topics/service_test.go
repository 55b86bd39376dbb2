package topics

import (
	"context"
	"testing"

	"supportplatform.dev/pkg/apperr"
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

// Invalid input never reaches the store. (The events of a change are the
// store's: see internal/postgres.)
func TestInvalidInputNeverReachesTheStore(t *testing.T) {
	st := &fakeStore{}
	svc := NewService(st)
	if _, err := svc.CreateTopic(context.Background(), 1, TopicInput{Name: " "}); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("err = %v", err)
	}
	if st.calls != 0 {
		t.Fatalf("store calls %d", st.calls)
	}
	if _, err := svc.CreateTopic(context.Background(), 1, TopicInput{Name: " Billing "}); err != nil || st.calls != 1 {
		t.Fatalf("valid create: %v, %d calls", err, st.calls)
	}
}

func TestRPCInputChecks(t *testing.T) {
	svc := NewService(&fakeStore{})
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
