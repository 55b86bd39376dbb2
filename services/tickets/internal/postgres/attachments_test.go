package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// seeded is a ticket with one message, inserted as SQL (the Tickets API is
// not this file's subject).
type seeded struct {
	ticketID, messageID int64
	token               string
}

func seedMessage(t *testing.T, pool *pgxpool.Pool, customerID int64) seeded {
	t.Helper()
	ctx := context.Background()
	var s seeded
	s.token = randid.Hex(20)
	var endUser int64
	if err := pool.QueryRow(ctx, `INSERT INTO end_users (customer_id, name) VALUES ($1, 'Seed') RETURNING end_user_id`,
		customerID).Scan(&endUser); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO tickets (customer_id, channel_id, end_user_id, subject, status, ticket_token)
		VALUES ($1, 1, $2, 'Seed', 'Open', $3) RETURNING ticket_id`, customerID, endUser, s.token).Scan(&s.ticketID); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO ticket_messages (customer_id, ticket_id, sender_type, message)
		VALUES ($1, $2, 'Agent', 'Hello') RETURNING message_id`, customerID, s.ticketID).Scan(&s.messageID); err != nil {
		t.Fatal(err)
	}
	return s
}

// attachmentsEnv is the attachment service over the real store and an
// in-process NATS bucket, with a clock the test moves.
type attachmentsEnv struct {
	svc   *tickets.Attachments
	store *postgres.Store
	pool  *pgxpool.Pool
	blobs *blob.ObjectStore
	clock *clocktest.Clock
}

const garbageDelay = 70 * time.Second

func newAttachmentsEnv(t *testing.T, maxBytes int64) attachmentsEnv {
	t.Helper()
	return newQuotaEnv(t, maxBytes, 0)
}

// newQuotaEnv is newAttachmentsEnv with a per-customer quota (0: the
// default).
func newQuotaEnv(t *testing.T, maxBytes, quota int64) attachmentsEnv {
	t.Helper()
	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	clock := clocktest.New(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	store := postgres.New(pool, clock.Now)
	names := contracts.Names{Prefix: "att-store"}
	bus, err := natsbus.Connect(natstest.Start(t), "tickets", names, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.NC.Close() })
	blobs, err := blob.Open(context.Background(), bus.JS, blob.Bucket{Name: names.Stream(contracts.BucketAttachments)})
	if err != nil {
		t.Fatal(err)
	}
	svc := tickets.NewAttachments(store, blobs, tickets.AttachmentOptions{MaxBytes: maxBytes, QuotaBytes: quota, GarbageDelay: garbageDelay,
		SweepBatch: 2, Now: clock.Now})
	return attachmentsEnv{svc: svc, store: store, pool: pool, blobs: blobs, clock: clock}
}

// garbage maps the queued keys to when they are due (nil: at once).
func garbage(t *testing.T, pool *pgxpool.Pool) map[string]*time.Time {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT object_key,
		CASE WHEN not_before = '-infinity' THEN NULL ELSE not_before END FROM blob_garbage`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]*time.Time{}
	for rows.Next() {
		var k string
		var due *time.Time
		if err := rows.Scan(&k, &due); err != nil {
			t.Fatal(err)
		}
		out[k] = due
	}
	return out
}

func randomData(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func hasBytes(t *testing.T, blobs *blob.ObjectStore, key string) bool {
	t.Helper()
	r, _, err := blobs.Open(context.Background(), key)
	if apperr.Is(err, apperr.NotFound) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Close()
	return true
}

func TestUploadListOpenDelete(t *testing.T) {
	env := newAttachmentsEnv(t, 1<<20)
	ctx := context.Background()
	m := seedMessage(t, env.pool, tenantA)
	png := append([]byte("\x89PNG\r\n\x1a\n"), randomData(t, 3000)...)
	a, err := env.svc.Upload(ctx, tenantA, m.messageID, `C:\Users\x\report.txt`, -1, bytes.NewReader(png))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(png)
	if a.FileName != "report.txt" || a.ContentType != "image/png" || a.Size != int64(len(png)) || a.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("attachment %+v", a)
	}
	if g := garbage(t, env.pool); len(g) != 0 {
		t.Fatalf("garbage rows after a stored upload: %v", g)
	}
	empty, err := env.svc.Upload(ctx, tenantA, m.messageID, "empty.bin", -1, bytes.NewReader(nil))
	if err != nil || empty.Size != 0 || empty.ContentType != "application/octet-stream" {
		t.Fatalf("empty upload: %+v, %v", empty, err)
	}

	list, err := env.svc.Attachments(ctx, tenantA, m.messageID)
	if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != empty.ID {
		t.Fatalf("list %+v, %v", list, err)
	}
	got, r, err := env.svc.Open(ctx, tenantA, m.messageID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil || !bytes.Equal(data, png) || got.ID != a.ID {
		t.Fatalf("read %d bytes, %v", len(data), err)
	}

	// Another customer, another message: not found everywhere.
	other := seedMessage(t, env.pool, tenantB)
	for name, err := range map[string]error{
		"list":           errOnly(env.svc.Attachments(ctx, tenantB, m.messageID)),
		"open":           errOf3(env.svc.Open(ctx, tenantB, m.messageID, a.ID)),
		"other message":  errOf3(env.svc.Open(ctx, tenantB, other.messageID, a.ID)),
		"delete":         env.svc.Delete(ctx, tenantB, m.messageID, a.ID),
		"delete via msg": env.svc.Delete(ctx, tenantB, other.messageID, a.ID),
		"upload":         errOnly(env.svc.Upload(ctx, tenantB, m.messageID, "x", -1, bytes.NewReader([]byte("x")))),
	} {
		if !apperr.Is(err, apperr.NotFound) {
			t.Errorf("%s: %v, want not found", name, err)
		}
	}

	if err := env.svc.Delete(ctx, tenantA, m.messageID, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := env.svc.Delete(ctx, tenantA, m.messageID, a.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if due, ok := garbage(t, env.pool)[a.Key]; !ok || due != nil {
		t.Fatalf("the deleted attachment's key is not listed as garbage due at once: %v, %v", ok, due)
	}
	if n, err := env.svc.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if hasBytes(t, env.blobs, a.Key) {
		t.Fatal("the deleted attachment's bytes are still stored")
	}
	if !hasBytes(t, env.blobs, empty.Key) {
		t.Fatal("the other attachment's bytes are gone")
	}
}

func errOnly[T any](_ T, err error) error        { return err }
func errOf3[A, B any](_ A, _ B, err error) error { return err }

// Over the cap: TooLarge, no metadata and no bytes; exactly the cap is
// fine.
func TestUploadSizeCap(t *testing.T) {
	env := newAttachmentsEnv(t, 300_000)
	ctx := context.Background()
	m := seedMessage(t, env.pool, tenantA)
	if _, err := env.svc.Upload(ctx, tenantA, m.messageID, "big", -1, bytes.NewReader(randomData(t, 300_001))); !apperr.Is(err, apperr.TooLarge) {
		t.Fatalf("upload over the cap: %v", err)
	}
	keys := garbage(t, env.pool)
	if len(keys) != 1 {
		t.Fatalf("garbage %v, want the failed upload's key", keys)
	}
	for k, due := range keys {
		if due == nil || !due.Equal(env.clock.Now().Add(garbageDelay)) {
			t.Fatalf("the refused upload's key is due at %v", due)
		}
		if hasBytes(t, env.blobs, k) {
			t.Fatal("bytes of the refused upload are stored")
		}
	}
	if list, _ := env.svc.Attachments(ctx, tenantA, m.messageID); len(list) != 0 {
		t.Fatalf("attachments %+v", list)
	}
	if a, err := env.svc.Upload(ctx, tenantA, m.messageID, "exact", -1, bytes.NewReader(randomData(t, 300_000))); err != nil || a.Size != 300_000 {
		t.Fatalf("upload of exactly the cap: %+v, %v", a, err)
	}
}

// An upload that dies before its metadata is stored leaves a garbage row
// due after the delay; the sweeper deletes its bytes then, not before.
func TestInterruptedUploadIsCollected(t *testing.T) {
	env := newAttachmentsEnv(t, 1<<20)
	ctx := context.Background()
	m := seedMessage(t, env.pool, tenantA)
	key := "1_1_interrupted"
	if err := env.store.ReserveBlob(ctx, tenantA, m.messageID, key, env.clock.Now().Add(garbageDelay)); err != nil {
		t.Fatal(err)
	}
	if err := env.blobs.Put(ctx, key, bytes.NewReader([]byte("orphan bytes"))); err != nil {
		t.Fatal(err)
	}
	// The process dies here.
	if n, err := env.svc.Sweep(ctx); err != nil || n != 0 || !hasBytes(t, env.blobs, key) {
		t.Fatalf("sweep before the delay: %d, %v", n, err)
	}
	env.clock.Advance(garbageDelay)
	if n, err := env.svc.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after the delay: %d, %v", n, err)
	}
	if hasBytes(t, env.blobs, key) || len(garbage(t, env.pool)) != 0 {
		t.Fatal("the interrupted upload's bytes or row are left")
	}
	// An upload that outlived the delay finds its key swept: no metadata
	// pointing at missing bytes.
	if _, err := env.store.AddAttachment(ctx, tickets.Attachment{CustomerID: tenantA, MessageID: m.messageID,
		FileName: "late", ContentType: "text/plain", Key: key, SHA256: "x"},
		tickets.QuotaFits(tickets.DefaultAttachmentQuota)); !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("late metadata: %v", err)
	}
	if list, _ := env.svc.Attachments(ctx, tenantA, m.messageID); len(list) != 0 {
		t.Fatalf("attachments %+v", list)
	}
}

// Deleting a ticket (its messages cascade) queues its attachments' keys,
// due at once; the sweep deletes their bytes.
func TestDeletedTicketsBytesAreSwept(t *testing.T) {
	env := newAttachmentsEnv(t, 1<<20)
	ctx := context.Background()
	m := seedMessage(t, env.pool, tenantA)
	keep := seedMessage(t, env.pool, tenantA)
	var keys []string
	for i := range 5 {
		a, err := env.svc.Upload(ctx, tenantA, m.messageID, "f", -1, bytes.NewReader(randomData(t, 1000*i)))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, a.Key)
	}
	kept, err := env.svc.Upload(ctx, tenantA, keep.messageID, "kept", -1, bytes.NewReader([]byte("kept")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.pool.Exec(ctx, `DELETE FROM tickets WHERE ticket_id = $1`, m.ticketID); err != nil {
		t.Fatal(err)
	}
	if g := garbage(t, env.pool); len(g) != 5 {
		t.Fatalf("garbage %v, want the five keys", g)
	}
	// Five keys in batches of two.
	if n, err := env.svc.Sweep(ctx); err != nil || n != 5 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	for _, k := range keys {
		if hasBytes(t, env.blobs, k) {
			t.Fatalf("bytes of %s survive the ticket", k)
		}
	}
	if !hasBytes(t, env.blobs, kept.Key) || len(garbage(t, env.pool)) != 0 {
		t.Fatal("the other ticket's bytes are gone, or rows are left")
	}
}

// A blob store error ends the round: what was deleted is forgotten, the
// rest stays queued for the next round.
func TestSweepStopsAtABlobStoreError(t *testing.T) {
	env := newAttachmentsEnv(t, 1<<20)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		if _, err := env.pool.Exec(ctx, `INSERT INTO blob_garbage (object_key) VALUES ($1)`, k); err != nil {
			t.Fatal(err)
		}
	}
	down := errors.New("blob store down")
	calls := 0
	n, err := env.store.SweepBlobs(ctx, 10, func(_ context.Context, key string) error {
		calls++
		if calls == 2 {
			return down
		}
		return nil
	})
	if !errors.Is(err, down) || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if g := garbage(t, env.pool); len(g) != 2 {
		t.Fatalf("garbage left %v, want two keys", g)
	}
}

// Replicas sweeping at once share the rows (SKIP LOCKED): every key's
// bytes are deleted exactly once.
func TestConcurrentSweepersDeleteEachKeyOnce(t *testing.T) {
	env := newAttachmentsEnv(t, 1<<20)
	ctx := context.Background()
	const keys = 60
	for i := range keys {
		if _, err := env.pool.Exec(ctx, `INSERT INTO blob_garbage (object_key) VALUES ($1)`, randid.Hex(4)+string(rune('a'+i%26))); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	del := func(_ context.Context, key string) error {
		time.Sleep(time.Millisecond)
		mu.Lock()
		seen[key]++
		mu.Unlock()
		return nil
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				n, err := env.store.SweepBlobs(ctx, 5, del)
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != keys {
		t.Fatalf("%d keys deleted, want %d", len(seen), keys)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s deleted %d times", k, n)
		}
	}
	if g := garbage(t, env.pool); len(g) != 0 {
		t.Fatalf("rows left: %v", g)
	}
}

// quotaFigures returns the figures of a refusal over the quota.
func quotaFigures(t *testing.T, err error) tickets.QuotaFigures {
	t.Helper()
	var ae *apperr.Error
	if !errors.Is(err, tickets.ErrQuota) || !errors.As(err, &ae) || ae.Code != apperr.TooLarge {
		t.Fatalf("error %v, want the quota's 413", err)
	}
	f, ok := ae.Extensions["quota"].(tickets.QuotaFigures)
	if !ok {
		t.Fatalf("extensions %+v", ae.Extensions)
	}
	return f
}

func usage(t *testing.T, env attachmentsEnv, customerID int64) int64 {
	t.Helper()
	n, err := env.svc.Usage(context.Background(), customerID)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The per-customer quota: counted on upload, checked before a byte is
// stored (with the request's size) and when the metadata is stored (with
// the file's), freed by deleting an attachment, a message or a ticket; the
// bytes of a refused upload go at once; another customer has its own.
func TestAttachmentQuota(t *testing.T) {
	env := newQuotaEnv(t, 1<<20, 10_000)
	ctx := context.Background()
	m := seedMessage(t, env.pool, tenantA)
	a6, err := env.svc.Upload(ctx, tenantA, m.messageID, "six", -1, bytes.NewReader(randomData(t, 6000)))
	if err != nil {
		t.Fatal(err)
	}
	if u := usage(t, env, tenantA); u != 6000 {
		t.Fatalf("usage %d", u)
	}
	// Over the quota by its real size: refused, nothing kept.
	_, err = env.svc.Upload(ctx, tenantA, m.messageID, "five", -1, bytes.NewReader(randomData(t, 5000)))
	if f := quotaFigures(t, err); f != (tickets.QuotaFigures{Used: 6000, Limit: 10_000, Size: 5000}) {
		t.Fatalf("figures %+v", f)
	}
	g := garbage(t, env.pool)
	if len(g) != 1 {
		t.Fatalf("garbage %v: the refused upload's key is not due", g)
	}
	for _, due := range g {
		if due != nil {
			t.Fatalf("the refused upload's bytes are due at %v, not at once", due)
		}
	}
	if n, err := env.svc.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep %d %v", n, err)
	}
	// Over by the request's size: refused before a byte is stored.
	_, err = env.svc.Upload(ctx, tenantA, m.messageID, "declared", 4001, bytes.NewReader(randomData(t, 10)))
	if f := quotaFigures(t, err); f != (tickets.QuotaFigures{Used: 6000, Limit: 10_000, Size: 4001}) {
		t.Fatalf("figures %+v", f)
	}
	if g := garbage(t, env.pool); len(g) != 0 {
		t.Fatalf("garbage %v: a key was reserved", g)
	}
	// Exactly full fits; another customer has its own quota.
	if _, err := env.svc.Upload(ctx, tenantA, m.messageID, "four", 4000, bytes.NewReader(randomData(t, 4000))); err != nil {
		t.Fatal(err)
	}
	mb := seedMessage(t, env.pool, tenantB)
	if _, err := env.svc.Upload(ctx, tenantB, mb.messageID, "b", -1, bytes.NewReader(randomData(t, 9000))); err != nil {
		t.Fatal(err)
	}
	// Deleting frees: the attachment, then the ticket (cascade).
	if err := env.svc.Delete(ctx, tenantA, m.messageID, a6.ID); err != nil {
		t.Fatal(err)
	}
	if u := usage(t, env, tenantA); u != 4000 {
		t.Fatalf("usage after a deletion %d", u)
	}
	if _, err := env.pool.Exec(ctx, `DELETE FROM tickets WHERE ticket_id = $1`, m.ticketID); err != nil {
		t.Fatal(err)
	}
	if u, ub := usage(t, env, tenantA), usage(t, env, tenantB); u != 0 || ub != 9000 {
		t.Fatalf("usage after the ticket's deletion %d, other customer %d", u, ub)
	}
}

// Concurrent uploads of one customer never take it over the quota
// together: the check after the insert sees the others' bytes.
func TestAttachmentQuotaConcurrentUploads(t *testing.T) {
	env := newQuotaEnv(t, 1<<20, 10_000)
	ctx := context.Background()
	m := seedMessage(t, env.pool, tenantA)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = env.svc.Upload(ctx, tenantA, m.messageID, "f", -1, bytes.NewReader(randomData(t, 3000)))
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, tickets.ErrQuota):
			t.Fatalf("upload: %v", err)
		}
	}
	if u := usage(t, env, tenantA); ok != 3 || u != 9000 {
		t.Fatalf("%d uploads stored, usage %d; want 3 and 9000", ok, u)
	}
}
