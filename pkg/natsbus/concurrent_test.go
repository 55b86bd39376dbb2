package natsbus_test

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
)

// Replicas starting together declare the same limited streams at once. The
// server reserves each request's max_bytes before it sees that another
// request has just created the stream; with reservations that do not fit
// twice in the account, the losers are refused (10047) unless
// EnsureStream tries again. Without the retry this test fails in most
// rounds (seen: 44 of 100 declarations refused).
func TestEnsureStreamConcurrently(t *testing.T) {
	srv := natstest.StartServer(t, &server.Options{JetStreamMaxStore: 3 << 30})
	const processes = 5
	buses := make([]*natsbus.Bus, processes)
	for i := range buses {
		b, err := natsbus.Connect(srv.URL(), fmt.Sprintf("replica-%d", i), contracts.Names{Prefix: "cc"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.NC.Close)
		buses[i] = b
	}
	for round := range 10 {
		name := fmt.Sprintf("CC_%d", round)
		var wg sync.WaitGroup
		errs := make([]error, processes)
		for i, b := range buses {
			wg.Go(func() {
				errs[i] = b.EnsureStream(t.Context(), jetstream.StreamConfig{Name: name, Subjects: []string{fmt.Sprintf("cc%d.>", round)},
					Storage: jetstream.FileStorage, MaxBytes: 2 << 30, Discard: jetstream.DiscardNew})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, process %d: %v", round, i, err)
			}
		}
		// The next round's stream must fit: this one's reservation goes.
		if err := buses[0].JS.DeleteStream(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
}
