package natsbus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/outbox"
)

// A batch is acknowledged as a whole and lands in order; a repeat of its
// messages (a relay that lost its delete) is dropped as a duplicate; a
// message no stream takes stops the acknowledged prefix there.
func TestPublishBatch(t *testing.T) {
	ctx := context.Background()
	b, _ := eventsBus(t, "pb")
	var msgs []outbox.Message
	for i := range 20 {
		m, err := outbox.Event(ctx, contracts.EventTopicCreated, 7, time.Now(), payload{Name: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	at := func(ms []outbox.Message) func(int) (context.Context, string, string, []byte) {
		return func(i int) (context.Context, string, string, []byte) { return ctx, ms[i].Subject, ms[i].ID, ms[i].Data }
	}
	for range 2 {
		n, err := b.PublishBatch(ctx, len(msgs), at(msgs))
		if err != nil || n != len(msgs) {
			t.Fatalf("PublishBatch: %d acknowledged, %v; want %d", n, err, len(msgs))
		}
	}
	st, err := b.JS.Stream(ctx, b.Names.Stream(contracts.StreamEvents))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(len(msgs)) {
		t.Fatalf("stream holds %d messages, want %d (the repeat dropped)", info.State.Msgs, len(msgs))
	}
	for i, m := range msgs {
		got, err := st.GetMsg(ctx, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Data) != string(m.Data) {
			t.Fatalf("message %d out of order: %s, want %s", i+1, got.Data, m.Data)
		}
	}

	// The third message's subject is in no stream: the first two are
	// acknowledged, and the error names the failure.
	bad := append([]outbox.Message(nil), msgs[:4]...)
	for i := range bad {
		bad[i].ID += "-again"
	}
	bad[2].Subject = "nostream.here"
	n, err := b.PublishBatch(ctx, len(bad), at(bad))
	if err == nil || n != 2 {
		t.Fatalf("PublishBatch with a message no stream takes: %d acknowledged, %v; want 2 and an error", n, err)
	}
}
