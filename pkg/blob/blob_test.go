package blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"testing"
	"testing/iotest"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
)

// openAs connects to a server whose users have the table's permissions, as
// the tickets service's own user, and opens its bucket: what the service
// does at start.
func openAs(t *testing.T, user string) (*blob.ObjectStore, *natsbus.Bus, map[string]string, contracts.Names) {
	t.Helper()
	names := contracts.Names{Prefix: "blob-test"}
	urls := natstest.StartWithUsers(t, names)
	bus := connect(t, urls[user], user, names)
	s, err := blob.Open(context.Background(), bus.JS, blob.Bucket{Name: names.Stream(contracts.BucketAttachments)})
	if err != nil {
		t.Fatal(err)
	}
	return s, bus, urls, names
}

func connect(t *testing.T, url, user string, names contracts.Names) *natsbus.Bus {
	t.Helper()
	bus, err := natsbus.Connect(url, user, names, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.NC.Close() })
	return bus
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func readAll(t *testing.T, s *blob.ObjectStore, key string) ([]byte, int64) {
	t.Helper()
	r, size, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return data, size
}

// Round trips of sizes around the chunk size, as the tickets user (whose
// permissions name its bucket only), then deletion.
func TestPutOpenDelete(t *testing.T) {
	s, _, _, _ := openAs(t, "tickets")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		size int
	}{
		{"empty", 0}, {"one byte", 1}, {"one chunk", blob.ChunkSize}, {"chunk and a byte", blob.ChunkSize + 1},
		{"many chunks", 40*blob.ChunkSize + 17},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := randomBytes(t, tc.size)
			key := "k_" + tc.name[:3] + "-" + string(rune('a'+tc.size%26))
			// Reads of odd sizes, as a multipart part delivers them.
			if err := s.Put(ctx, key, iotest.HalfReader(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			got, size := readAll(t, s, key)
			if size != int64(tc.size) || !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes (size %d), want %d equal bytes", len(got), size, tc.size)
			}
			if err := s.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Open(ctx, key); !apperr.Is(err, apperr.NotFound) {
				t.Fatalf("open after delete: %v", err)
			}
			// Deleting again (the sweeper retrying) is no error.
			if err := s.Delete(ctx, key); err != nil {
				t.Fatalf("second delete: %v", err)
			}
		})
	}
}

// The objects are nats.go Object Store objects: the library reads them.
func TestObjectsAreReadableByNATSTools(t *testing.T) {
	s, bus, _, names := openAs(t, "tickets")
	ctx := context.Background()
	data := randomBytes(t, 3*blob.ChunkSize+5)
	if err := s.Put(ctx, "tools", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	obs, err := bus.JS.ObjectStore(ctx, names.Stream(contracts.BucketAttachments))
	if err != nil {
		t.Fatal(err)
	}
	got, err := obs.GetBytes(ctx, "tools")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("nats.go read %d bytes, %v", len(got), err)
	}
}

var errCut = errors.New("client went away")

// A failing reader (an upload over its cap, a cut connection) leaves
// nothing behind, and its error comes back unchanged.
func TestFailedPutLeavesNothing(t *testing.T) {
	s, bus, _, names := openAs(t, "tickets")
	ctx := context.Background()
	r := io.MultiReader(bytes.NewReader(randomBytes(t, 5*blob.ChunkSize)), iotest.ErrReader(errCut))
	if err := s.Put(ctx, "cut", r); !errors.Is(err, errCut) {
		t.Fatalf("put: %v, want the reader's error", err)
	}
	tooLarge := apperr.E(apperr.TooLarge, "too large")
	r = io.MultiReader(bytes.NewReader(randomBytes(t, 2*blob.ChunkSize)), iotest.ErrReader(tooLarge))
	if err := s.Put(ctx, "big", r); !apperr.Is(err, apperr.TooLarge) {
		t.Fatalf("put: %v, want TooLarge", err)
	}
	// A multipart body that ends early fails with io.ErrUnexpectedEOF: that
	// is no normal end of the file.
	r = io.MultiReader(bytes.NewReader(randomBytes(t, 10)), iotest.ErrReader(io.ErrUnexpectedEOF))
	if err := s.Put(ctx, "short", r); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("put: %v, want io.ErrUnexpectedEOF", err)
	}
	st, err := bus.JS.Stream(ctx, contracts.ObjectStream(names.Stream(contracts.BucketAttachments)))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Fatalf("%d messages left in the bucket", info.State.Msgs)
	}
}

// Chunks without metadata (a process killed in the middle of a write) are
// found and purged by key.
func TestDeleteRemovesAnInterruptedWrite(t *testing.T) {
	s, bus, _, names := openAs(t, "tickets")
	ctx := context.Background()
	bucket := names.Stream(contracts.BucketAttachments)
	for range 3 {
		if _, err := bus.JS.Publish(ctx, "$O."+bucket+".C.orphan", randomBytes(t, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Open(ctx, "orphan"); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("open of chunks without metadata: %v", err)
	}
	if err := s.Delete(ctx, "orphan"); err != nil {
		t.Fatal(err)
	}
	st, err := bus.JS.Stream(ctx, contracts.ObjectStream(bucket))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := st.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Fatalf("after delete: %+v, %v", info.State, err)
	}
}

func TestInvalidKeys(t *testing.T) {
	s, _, _, _ := openAs(t, "tickets")
	ctx := context.Background()
	for _, key := range []string{"", "a.b", "a*", "a>", "a b", string(bytes.Repeat([]byte("k"), 201))} {
		if err := s.Put(ctx, key, bytes.NewReader([]byte("x"))); err == nil {
			t.Errorf("put %q accepted", key)
		}
		if err := s.Delete(ctx, key); err == nil {
			t.Errorf("delete %q accepted", key)
		}
	}
}

// Another service's user can neither open the bucket nor read it.
func TestOtherServicesCannotUseTheBucket(t *testing.T) {
	s, _, urls, names := openAs(t, "tickets")
	ctx := context.Background()
	if err := s.Put(ctx, "secret", bytes.NewReader([]byte("private bytes"))); err != nil {
		t.Fatal(err)
	}
	topics := connect(t, urls["topics"], "topics", names)
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	bucket := names.Stream(contracts.BucketAttachments)
	if _, err := blob.Open(short, topics.JS, blob.Bucket{Name: bucket}); err == nil {
		t.Fatal("topics opened the attachments bucket")
	}
	short2, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	if _, err := topics.JS.ObjectStore(short2, bucket); err == nil {
		t.Fatal("topics bound the attachments bucket")
	} else if errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("topics was told the bucket does not exist: %v", err)
	}
}

// While NATS is away, uploads and downloads fail at once with 503 (the
// request's budget is not spent in the reconnect buffer), and they work
// again once it is back.
func TestOutageFailsFast(t *testing.T) {
	srv := natstest.StartServer(t, nil)
	names := contracts.Names{Prefix: "blob-outage"}
	bus := connect(t, srv.URL(), "tickets", names)
	ctx := context.Background()
	s, err := blob.Open(ctx, bus.JS, blob.Bucket{Name: names.Stream(contracts.BucketAttachments)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "before", bytes.NewReader(randomBytes(t, 1000))); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	for bus.NC.Status() == nats.CONNECTED {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	err = s.Put(ctx, "during", bytes.NewReader(randomBytes(t, 3*blob.ChunkSize)))
	if apperr.CodeOf(err) != apperr.Unavailable {
		t.Fatalf("put during the outage: %v (code %q), want Unavailable", err, apperr.CodeOf(err))
	}
	if _, _, err := s.Open(ctx, "before"); apperr.CodeOf(err) != apperr.Unavailable {
		t.Fatalf("open during the outage: %v, want Unavailable", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the refusals took %v, want at once", d)
	}
	srv.Start()
	deadline := time.Now().Add(10 * time.Second)
	for bus.NC.Status() != nats.CONNECTED && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	data := randomBytes(t, blob.ChunkSize+1)
	if err := s.Put(ctx, "after", bytes.NewReader(data)); err != nil {
		t.Fatalf("put after the outage: %v", err)
	}
	if got, _ := readAll(t, s, "after"); !bytes.Equal(got, data) {
		t.Error("the bytes stored after the outage differ")
	}
}
