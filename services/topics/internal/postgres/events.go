package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/services/topics/internal/topics"
)

// The events of a change are written to the outbox table in the change's
// transaction (pkg/outbox): they are published if and only if it commits,
// even when NATS is down at that moment.

// addTopicEvent writes topic.created, topic.updated or topic.deleted.
func (s *Store) addTopicEvent(ctx context.Context, tx pgx.Tx, eventType string, t topics.Topic) error {
	m, err := outbox.Event(ctx, eventType, t.CustomerID, s.now(),
		contracts.TopicChanged{TopicID: t.ID, Name: t.Name, Description: t.Description})
	if err != nil {
		return err
	}
	return outbox.Add(ctx, tx, m)
}

// addMappingEvents writes one mapping event (topic.action.changed,
// topic.document.changed or topic.page-mapping.changed) per change.
func (s *Store) addMappingEvents(ctx context.Context, tx pgx.Tx, eventType string, customerID int64, changes ...contracts.MappingChanged) error {
	msgs := make([]outbox.Message, 0, len(changes))
	for _, c := range changes {
		m, err := outbox.Event(ctx, eventType, customerID, s.now(), c)
		if err != nil {
			return err
		}
		msgs = append(msgs, m)
	}
	return outbox.Add(ctx, tx, msgs...)
}

func topicActionChange(op string, m topics.TopicAction) contracts.MappingChanged {
	return contracts.MappingChanged{Op: op, MappingID: m.ID, TopicID: m.TopicID, TargetID: m.ActionID}
}

func topicDocumentChange(op string, m topics.TopicDocument) contracts.MappingChanged {
	return contracts.MappingChanged{Op: op, MappingID: m.ID, TopicID: m.TopicID, TargetID: m.DocumentID}
}

func pageMappingChange(op string, m topics.PageMapping) contracts.MappingChanged {
	return contracts.MappingChanged{Op: op, MappingID: m.ID, TopicID: m.TopicID}
}
