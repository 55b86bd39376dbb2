// Package queue puts folder imports on the MAIL_IMPORT work queue.
package queue

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// Queue publishes import requests to JetStream.
type Queue struct{ bus *natsbus.Bus }

// New declares the MAIL_IMPORT stream (idempotent) and returns its queue.
func New(ctx context.Context, bus *natsbus.Bus) (*Queue, error) {
	err := bus.EnsureStream(ctx, natsbus.WithLimits(jetstream.StreamConfig{
		Name:     bus.Names.Stream(contracts.StreamMailImport),
		Subjects: []string{bus.Names.Subject(contracts.MailImportSubjects)},
		// A work queue: a request is gone once the import worker acks it.
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    jetstream.FileStorage,
		Duplicates: contracts.MailImportDuplicates,
	}, contracts.StreamMailImport))
	if err != nil {
		return nil, err
	}
	return &Queue{bus: bus}, nil
}

// Import queues an import of a folder and returns once the stream has
// stored it (or dropped it as a repeat of the same folder, reason and
// bucket). It is durable when it returns nil.
func (q *Queue) Import(ctx context.Context, r contracts.MailImportRequest) error {
	subject, msgID, data, err := contracts.MailImportMessage(r)
	if err != nil {
		return err
	}
	return q.bus.PublishRaw(ctx, subject, msgID, data)
}
