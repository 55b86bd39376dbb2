package blob_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
)

// Open applies the bucket's MaxBytes to a bucket made without it, and a
// Put that does not fit fails with Unavailable, leaving nothing.
func TestBucketMaxBytes(t *testing.T) {
	ctx := context.Background()
	names := contracts.Names{Prefix: "blob-limits"}
	bus := connect(t, natstest.Start(t), "tickets", names)
	name := names.Stream(contracts.BucketAttachments)
	if _, err := blob.Open(ctx, bus.JS, blob.Bucket{Name: name}); err != nil {
		t.Fatal(err)
	}
	s, err := blob.Open(ctx, bus.JS, blob.Bucket{Name: name, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	info, err := streamInfo(ctx, bus, name)
	if err != nil || info.Config.MaxBytes != 1<<20 || info.Config.Discard != jetstream.DiscardNew {
		t.Fatalf("stream config %+v %v", info, err)
	}
	if err := s.Put(ctx, "fits", bytes.NewReader(randomBytes(t, 600<<10))); err != nil {
		t.Fatal(err)
	}
	err = s.Put(ctx, "toobig", bytes.NewReader(randomBytes(t, 600<<10)))
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("put over the bucket's max bytes: %v", err)
	}
	if _, _, err := s.Open(ctx, "toobig"); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("the refused object: %v", err)
	}
	if data, _ := readAll(t, s, "fits"); len(data) != 600<<10 {
		t.Fatalf("%d bytes", len(data))
	}
}

func streamInfo(ctx context.Context, bus *natsbus.Bus, bucket string) (*jetstream.StreamInfo, error) {
	st, err := bus.JS.Stream(ctx, contracts.ObjectStream(bucket))
	if err != nil {
		return nil, err
	}
	return st.Info(ctx)
}
