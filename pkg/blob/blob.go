// Package blob keeps the bytes of attachments in a NATS JetStream Object
// Store bucket. Callers use it through a small interface of their own (Put,
// Open, Delete by key), so another store (S3) can take its place.
//
// Objects are written in nats.go's Object Store format (chunks on
// $O.<bucket>.C.<nuid>, one metadata message on $O.<bucket>.M.<name>), so
// nats.go and the nats CLI read them, with one difference that makes the
// store crash-safe: the chunk subject's token is the key itself rather than
// a fresh NUID. A write that dies half-way (the process killed, NATS gone)
// leaves chunks without metadata, which nats.go's own Delete could never
// find again; here Delete purges the key's chunk and metadata subjects
// directly, whatever state the object is in.
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// ChunkSize is the size of one chunk message (nats.go's default).
const ChunkSize = 128 * 1024

// window bounds the chunks published and not yet acknowledged by the
// stream: at most window*ChunkSize bytes of one upload are in memory.
const window = 16

// cleanupTimeout bounds the purge of a failed write's chunks, which runs
// even when the request's context has ended.
const cleanupTimeout = 10 * time.Second

// AckTimeout bounds the wait for one chunk's acknowledgement: a chunk sent
// just before NATS went away gets none, and the upload fails with 503
// instead of waiting for the request's whole budget.
const AckTimeout = 5 * time.Second

// validKey: a key is a subject token of the bucket's chunk subject.
var validKey = regexp.MustCompile(`^[A-Za-z0-9_-]{1,200}$`)

// ObjectStore is a JetStream Object Store bucket.
type ObjectStore struct {
	js     jetstream.JetStream
	bucket string
	obs    jetstream.ObjectStore
	stream jetstream.Stream
}

// Bucket configures a bucket Open creates.
type Bucket struct {
	// Name is the bucket's full name (contracts.Names.Stream of a Bucket*
	// constant).
	Name        string
	Description string
	// MaxAge, when positive, removes objects older than it (a hand-over
	// bucket whose objects are copied elsewhere).
	MaxAge time.Duration
	// MaxBytes, when positive, caps the bucket (contracts.Limits): a Put
	// that does not fit fails with an Unavailable error. Open applies it to
	// an existing bucket too.
	MaxBytes int64
}

// Open creates the bucket when it is missing (file storage, one replica
// unless the stream already says otherwise) and returns the store.
func Open(ctx context.Context, js jetstream.JetStream, b Bucket) (*ObjectStore, error) {
	// Replicas of a service open their bucket together.
	var obs jetstream.ObjectStore
	err := natsbus.RetryConcurrentCreate(ctx, func() (err error) {
		obs, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      b.Name,
			Description: b.Description,
			Storage:     jetstream.FileStorage,
			TTL:         b.MaxAge,
			MaxBytes:    b.MaxBytes,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("blob: object store %s: %w", b.Name, err)
	}
	stream, err := js.Stream(ctx, contracts.ObjectStream(b.Name))
	if err != nil {
		return nil, fmt.Errorf("blob: object store %s: %w", b.Name, err)
	}
	return &ObjectStore{js: js, bucket: b.Name, obs: obs, stream: stream}, nil
}

// OpenReader opens another service's existing bucket for reading only
// (contracts.Service.ReadsBuckets): Open works on it, Put and Delete do not.
func OpenReader(ctx context.Context, js jetstream.JetStream, bucket string) (*ObjectStore, error) {
	obs, err := js.ObjectStore(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("blob: object store %s: %w", bucket, err)
	}
	return &ObjectStore{js: js, bucket: bucket, obs: obs}, nil
}

func (s *ObjectStore) chunkSubject(key string) string { return "$O." + s.bucket + ".C." + key }

func (s *ObjectStore) metaSubject(key string) string {
	return "$O." + s.bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(key))
}

func checkKey(key string) error {
	if !validKey.MatchString(key) {
		return fmt.Errorf("blob: invalid key %q", key)
	}
	return nil
}

// Put stores everything r yields under key, which must be new. r's error
// is returned as it is (an upload over its size cap stays a TooLarge
// error); on any error the chunks written so far are purged.
func (s *ObjectStore) Put(ctx context.Context, key string, r io.Reader) (err error) {
	if err := checkKey(key); err != nil {
		return err
	}
	if s.stream == nil {
		return fmt.Errorf("blob: put %s: bucket %s is open for reading only", key, s.bucket)
	}
	// While NATS is away every publish would wait in the reconnect
	// buffer: refuse at once.
	if err := natsbus.Connected(s.js.Conn()); err != nil {
		return err
	}
	subject := s.chunkSubject(key)
	var pending []jetstream.PubAckFuture
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			// Chunks still in flight would land after the purge.
			for _, f := range pending {
				select {
				case <-f.Ok():
				case <-f.Err():
				case <-cctx.Done():
				}
			}
			// Best effort: what remains is purged again when the caller's
			// garbage row for the key comes due.
			_ = s.Delete(cctx, key)
		}
	}()
	acked := func(f jetstream.PubAckFuture) error {
		select {
		case <-f.Ok():
			return nil
		case err := <-f.Err():
			if full(err) {
				return apperr.Wrap(apperr.Unavailable, err, "the attachment store is full; try again later")
			}
			return fmt.Errorf("blob: put %s: %w", key, err)
		case <-ctx.Done():
			return apperr.Wrap(apperr.Unavailable, ctx.Err(), "the upload was cancelled or timed out")
		case <-time.After(AckTimeout):
			if err := natsbus.Connected(s.js.Conn()); err != nil {
				return err
			}
			return apperr.E(apperr.Unavailable, "the attachment store did not acknowledge the upload; try again later")
		}
	}
	h := sha256.New()
	var size uint64
	var chunks uint32
	for {
		// A buffer per chunk: an unacknowledged publish keeps its data.
		buf := make([]byte, ChunkSize)
		n, rerr := Fill(r, buf)
		if n > 0 {
			h.Write(buf[:n])
			f, err := s.js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: buf[:n]})
			if err != nil {
				if cerr := natsbus.Connected(s.js.Conn()); cerr != nil {
					return cerr
				}
				return fmt.Errorf("blob: put %s: %w", key, err)
			}
			pending = append(pending, f)
			size += uint64(n)
			chunks++
			if len(pending) >= window {
				// Off the list before the wait: a future whose answer was
				// taken is not waited for again by the purge.
				f := pending[0]
				pending = pending[1:]
				if err := acked(f); err != nil {
					return err
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	for len(pending) > 0 {
		f := pending[0]
		pending = pending[1:]
		if err := acked(f); err != nil {
			return err
		}
	}
	info := jetstream.ObjectInfo{
		ObjectMeta: jetstream.ObjectMeta{Name: key, Opts: &jetstream.ObjectMetaOptions{ChunkSize: ChunkSize}},
		Bucket:     s.bucket, NUID: key, Size: size, Chunks: chunks,
		Digest: "SHA-256=" + base64.URLEncoding.EncodeToString(h.Sum(nil)),
	}
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	meta := nats.NewMsg(s.metaSubject(key))
	meta.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	meta.Data = data
	if _, err := s.js.PublishMsg(ctx, meta); err != nil {
		if full(err) {
			return apperr.Wrap(apperr.Unavailable, err, "the attachment store is full; try again later")
		}
		return fmt.Errorf("blob: put %s: metadata: %w", key, err)
	}
	return nil
}

// Fill reads into buf until it is full or r fails; it returns io.EOF only
// for r's own end (io.ReadFull would turn a source's io.ErrUnexpectedEOF,
// a cut multipart upload, into a normal end).
func Fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Open returns a reader of the object's bytes and its size; a key without
// an object is a NotFound error.
func (s *ObjectStore) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if err := checkKey(key); err != nil {
		return nil, 0, err
	}
	if err := natsbus.Connected(s.js.Conn()); err != nil {
		return nil, 0, err
	}
	res, err := s.obs.Get(ctx, key)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, 0, apperr.Wrap(apperr.NotFound, err, "the attachment's bytes are gone")
	}
	if err != nil {
		return nil, 0, fmt.Errorf("blob: open %s: %w", key, err)
	}
	info, err := res.Info()
	if err != nil {
		_ = res.Close()
		return nil, 0, fmt.Errorf("blob: open %s: %w", key, err)
	}
	return res, int64(info.Size), nil
}

// Delete removes the object's chunks and metadata, complete or not; a key
// without an object is no error.
func (s *ObjectStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if s.stream == nil {
		return fmt.Errorf("blob: delete %s: bucket %s is open for reading only", key, s.bucket)
	}
	for _, subject := range []string{s.chunkSubject(key), s.metaSubject(key)} {
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			return fmt.Errorf("blob: delete %s: %w", key, err)
		}
	}
	return nil
}

// full reports whether JetStream refused a chunk because the bucket is at
// its MaxBytes (the object stream discards new messages).
func full(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsStreamStoreFailed && strings.Contains(apiErr.Description, "maximum bytes")
}

// jsStreamStoreFailed is nats-server's JSStreamStoreFailedF ("maximum
// bytes exceeded" when a DiscardNew stream is full).
const jsStreamStoreFailed jetstream.ErrorCode = 10077
