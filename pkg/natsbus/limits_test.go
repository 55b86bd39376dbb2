package natsbus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natstest"
)

// The streams' limits come from pkg/contracts and reach a stream that
// exists without them (a deployment before they were set).
func TestStreamsGetTheirLimits(t *testing.T) {
	b := bus(t, natstest.Start(t), "limits")
	ctx := context.Background()
	for _, tc := range []struct {
		base, subjects string
		ensure         func(context.Context) error
		retention      jetstream.RetentionPolicy
	}{
		{contracts.StreamEvents, contracts.EventsSubjects, b.EnsureEventsStream, jetstream.LimitsPolicy},
		{contracts.StreamMailInbound, contracts.MailInboundSubjects, b.EnsureMailInboundStream, jetstream.WorkQueuePolicy},
	} {
		t.Run(tc.base, func(t *testing.T) {
			name := b.Names.Stream(tc.base)
			// As it was declared before the limits.
			if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{b.Names.Subject(tc.subjects)},
				Retention: tc.retention, Storage: jetstream.FileStorage, MaxAge: time.Hour}); err != nil {
				t.Fatal(err)
			}
			if err := tc.ensure(ctx); err != nil {
				t.Fatal(err)
			}
			st, err := b.JS.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			info, err := st.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := contracts.Limits(tc.base)
			c := info.Config
			discardNew := c.Discard == jetstream.DiscardNew
			if c.MaxBytes != want.MaxBytes || c.MaxMsgs != want.MaxMsgs || c.MaxMsgSize != want.MaxMsgSize ||
				c.MaxAge != want.MaxAge || discardNew != want.DiscardNew || want.MaxBytes <= 0 {
				t.Fatalf("config %+v, want limits %+v", c, want)
			}
		})
	}
}
