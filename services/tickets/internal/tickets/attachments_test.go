package tickets

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
)

func TestCleanFileName(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "report.pdf", "report.pdf"},
		{"unix path", "../../etc/passwd", "passwd"},
		{"windows path", `C:\Users\ada\Desktop\cv.docx`, "cv.docx"},
		{"mixed separators", `a/b\c.txt`, "c.txt"},
		{"control characters", "in\x00voice\r\n.pdf\x7f", "invoice.pdf"},
		{"bidi override", "invoice\u202Etxt.exe", "invoicetxt.exe"},
		{"invalid utf-8", "na\xffme.txt", "name.txt"},
		{"spaces trimmed", "  notes .txt  ", "notes .txt"},
		{"unicode kept", "Übersicht 📎.pdf", "Übersicht 📎.pdf"},
		{"quotes kept", `say "hi";.txt`, `say "hi";.txt`},
		{"empty", "", DefaultFileName},
		{"only a directory", "dir/", DefaultFileName},
		{"dot", ".", DefaultFileName},
		{"dot dot", "..", DefaultFileName},
		{"only controls", "\x01\x02", DefaultFileName},
		{"long cut at a character", long, strings.Repeat("é", 127)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CleanFileName(tc.in); got != tc.want {
				t.Fatalf("CleanFileName(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := CleanFileName(tc.in); len(got) > MaxFileNameBytes {
				t.Fatalf("%d bytes", len(got))
			}
		})
	}
}

// fakeBlobs keeps bytes in memory and reads them through like the real
// store does.
type fakeBlobs struct{ data map[string][]byte }

func (b *fakeBlobs) Put(_ context.Context, key string, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	b.data[key] = data
	return nil
}

func (b *fakeBlobs) Open(context.Context, string) (io.ReadCloser, int64, error) { return nil, 0, nil }
func (b *fakeBlobs) Delete(context.Context, string) error                       { return nil }

type fakeAttachmentStore struct {
	AttachmentStore
	added []Attachment
}

func (s *fakeAttachmentStore) ReserveBlob(context.Context, int64, int64, string, time.Time) error {
	return nil
}
func (s *fakeAttachmentStore) AttachmentUsage(context.Context, int64) (int64, error) { return 0, nil }
func (s *fakeAttachmentStore) AddAttachment(_ context.Context, a Attachment, _ func(used, size int64) error) (Attachment, error) {
	s.added = append(s.added, a)
	return a, nil
}

// The type comes from the bytes, whatever the name says; sizes around the
// sniffed head and the cap.
func TestUploadSniffsAndCounts(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 600)...)
	pdf := []byte("%PDF-1.7\n...")
	html := []byte("<!DOCTYPE html><script>alert(1)</script>")
	for _, tc := range []struct {
		name     string
		data     []byte
		wantType string
		wantErr  apperr.Code
	}{
		{"empty", nil, "application/octet-stream", ""},
		{"one byte", []byte("x"), "text/plain; charset=utf-8", ""},
		{"png named txt", png, "image/png", ""},
		{"pdf", pdf, "application/pdf", ""},
		{"html", html, "text/html; charset=utf-8", ""},
		{"binary", []byte{0, 1, 2, 3, 0xfe}, "application/octet-stream", ""},
		{"exactly the cap", bytes.Repeat([]byte("a"), 1000), "text/plain; charset=utf-8", ""},
		{"one over the cap", bytes.Repeat([]byte("a"), 1001), "", apperr.TooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, blobs := &fakeAttachmentStore{}, &fakeBlobs{data: map[string][]byte{}}
			svc := NewAttachments(store, blobs, AttachmentOptions{MaxBytes: 1000})
			a, err := svc.Upload(context.Background(), 7, 9, "x.txt", -1, bytes.NewReader(tc.data))
			if tc.wantErr != "" {
				if !apperr.Is(err, tc.wantErr) || len(store.added) != 0 {
					t.Fatalf("err %v, stored %d", err, len(store.added))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.ContentType != tc.wantType || a.Size != int64(len(tc.data)) || !bytes.Equal(blobs.data[a.Key], tc.data) {
				t.Fatalf("type %q size %d stored %d bytes", a.ContentType, a.Size, len(blobs.data[a.Key]))
			}
			if !strings.HasPrefix(a.Key, "7_9_") || a.CustomerID != 7 || a.MessageID != 9 || a.FileName != "x.txt" {
				t.Fatalf("attachment %+v", a)
			}
		})
	}
}
