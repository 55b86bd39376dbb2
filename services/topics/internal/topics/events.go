package topics

import (
	"context"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// BusEvents publishes the domain's events on the EVENTS stream.
type BusEvents struct{ Bus *natsbus.Bus }

// TopicChanged publishes topic.created, topic.updated or topic.deleted.
func (e BusEvents) TopicChanged(ctx context.Context, eventType string, t Topic) error {
	return natsbus.PublishEvent(ctx, e.Bus, eventType, t.CustomerID,
		contracts.TopicChanged{TopicID: t.ID, Name: t.Name, Description: t.Description})
}

// MappingChanged publishes a topic-action, topic-document or page mapping change.
func (e BusEvents) MappingChanged(ctx context.Context, eventType string, customerID int64, m contracts.MappingChanged) error {
	return natsbus.PublishEvent(ctx, e.Bus, eventType, customerID, m)
}
