package blob_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natstest"
)

// On a three-node cluster that has lost two servers the bucket's stream
// has no leader (no quorum): an upload fails with Unavailable (a 503 the
// client retries), not with another error, however JetStream says it (no
// responders, no answer). Once the servers are back, uploads complete and
// read back whole.
func TestPutWithoutAStreamLeader(t *testing.T) {
	c := natstest.StartCluster(t, 3, nil)
	names := contracts.Names{Prefix: "bc", Replicas: 3}
	bus := connect(t, c.Servers[0].URL(), "test", names)
	bucket := names.Stream(contracts.BucketAttachments)
	store, err := blob.Open(t.Context(), bus.JS, blob.Bucket{Name: bucket, MaxBytes: 256 << 20, Replicas: names.StreamReplicas()})
	if err != nil {
		t.Fatal(err)
	}
	c.Servers[1].Stop()
	c.Servers[2].Stop()
	if !bus.NC.IsConnected() {
		t.Fatal("the client lost its own server")
	}
	for i := range 3 {
		err := store.Put(t.Context(), fmt.Sprintf("lost%d", i), bytes.NewReader(randomBytes(t, 300<<10)))
		if !apperr.Is(err, apperr.Unavailable) {
			t.Fatalf("upload %d without a stream leader: %v, want Unavailable", i, err)
		}
		t.Logf("upload %d: %v", i, err)
	}
	c.Servers[1].Start()
	c.Servers[2].Start()
	var last []byte
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		last = randomBytes(t, 300<<10)
		err := store.Put(t.Context(), fmt.Sprintf("k%d", i), bytes.NewReader(last))
		if err == nil {
			// Reads may fail for a moment too, while the cluster settles;
			// then the bytes are whole.
			key := fmt.Sprintf("k%d", i)
			for {
				r, size, err := store.Open(t.Context(), key)
				if err == nil {
					got, rerr := io.ReadAll(r)
					r.Close()
					if rerr == nil && bytes.Equal(got, last) && size == int64(len(last)) {
						return
					}
					err = fmt.Errorf("read %d of %d bytes: %v", len(got), len(last), rerr)
				}
				if time.Now().After(deadline) {
					t.Fatalf("read back %s: %v", key, err)
				}
				t.Logf("read back %s: %v", key, err)
				time.Sleep(100 * time.Millisecond)
			}
		}
		if !apperr.Is(err, apperr.Unavailable) || time.Now().After(deadline) {
			t.Fatalf("upload after the servers came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
