package topicsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

type recordingStore struct{ calls []string }

func (s *recordingStore) RenameTopic(_ context.Context, customerID, topicID int64, name string, at time.Time) error {
	s.calls = append(s.calls, fmt.Sprintf("rename %d/%d %s %s", customerID, topicID, name, at.Format(time.RFC3339)))
	return nil
}

func (s *recordingStore) ForgetTopic(_ context.Context, customerID, topicID int64, at time.Time) error {
	s.calls = append(s.calls, fmt.Sprintf("forget %d/%d %s", customerID, topicID, at.Format(time.RFC3339)))
	return nil
}

func TestHandle(t *testing.T) {
	at := time.Date(2025, 2, 3, 4, 5, 6, 0, time.UTC)
	ev := func(typ string, customerID int64, data string) contracts.Event[json.RawMessage] {
		return contracts.Event[json.RawMessage]{ID: "e", Type: typ, CustomerID: customerID, OccurredAt: at, Data: json.RawMessage(data)}
	}
	tests := []struct {
		name      string
		ev        contracts.Event[json.RawMessage]
		want      []string
		permanent bool
	}{
		{"updated", ev(contracts.EventTopicUpdated, 3, `{"topicID":7,"name":"Billing"}`), []string{"rename 3/7 Billing 2025-02-03T04:05:06Z"}, false},
		{"deleted", ev(contracts.EventTopicDeleted, 3, `{"topicID":7,"name":"Billing"}`), []string{"forget 3/7 2025-02-03T04:05:06Z"}, false},
		{"created is ignored", ev(contracts.EventTopicCreated, 3, `{"topicID":7,"name":"Billing"}`), nil, false},
		{"an action triggered is ignored", ev(contracts.EventTopicActionTriggered, 3, `{"messageID":1,"topicID":7}`), nil, false},
		{"a mapping change is ignored", ev(contracts.EventTopicActionChanged, 3, `[1]`), nil, false},
		{"no customer", ev(contracts.EventTopicUpdated, 0, `{"topicID":7,"name":"x"}`), nil, false},
		{"no topic", ev(contracts.EventTopicDeleted, 3, `{"name":"x"}`), nil, false},
		{"undecodable data", ev(contracts.EventTopicUpdated, 3, `"x"`), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &recordingStore{}
			err := Handle(context.Background(), st, tt.ev)
			if tt.permanent != errors.Is(err, natsbus.ErrPermanent) || (!tt.permanent && err != nil) {
				t.Fatalf("error %v", err)
			}
			if !reflect.DeepEqual(st.calls, tt.want) {
				t.Fatalf("calls %v, want %v", st.calls, tt.want)
			}
		})
	}
}
