package webfiles

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAccepts(t *testing.T) {
	cases := []struct {
		name, header, coding string
		want                 bool
	}{
		{"no header", "", "gzip", false},
		{"named", "gzip, deflate, br", "gzip", true},
		{"named with spaces and case", " GZip ;q=0.5", "gzip", true},
		{"refused", "gzip;q=0, br", "gzip", false},
		{"refused with q=0.000", "gzip; q=0.000", "gzip", false},
		{"bad quality", "gzip;q=x", "gzip", false},
		{"any", "*", "br", true},
		{"any but gzip", "*, gzip;q=0", "gzip", false},
		{"any refused", "*;q=0", "gzip", false},
		{"another coding only", "br", "gzip", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Accepts(tc.header, tc.coding); got != tc.want {
				t.Errorf("Accepts(%q, %q) = %v, want %v", tc.header, tc.coding, got, tc.want)
			}
		})
	}
}

func serve(f *File, method string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/f", nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	Serve(w, req, f)
	return w
}

// The first encoding the file has and the client takes is sent, with its
// own ETag; every form revalidates to 304 with its ETag.
func TestServeNegotiates(t *testing.T) {
	body := []byte(strings.Repeat("let x = 1;\n", 200))
	f := New("text/javascript; charset=utf-8", "public, max-age=31536000, immutable", body)
	f.Encoded["br"] = []byte("brotli form")
	f.Gzip()
	if f.Encoded["gzip"] == nil {
		t.Fatal("Gzip made no gzip form of a repetitive 2 KB script")
	}
	cases := []struct{ accept, want string }{
		{"", ""},
		{"identity", ""},
		{"gzip, deflate, br, zstd", "br"},
		{"gzip", "gzip"},
		{"br;q=0, gzip", "gzip"},
		{"*", "br"},
		{"*, br;q=0", "gzip"},
		{"deflate", ""},
	}
	for _, tc := range cases {
		t.Run(tc.accept, func(t *testing.T) {
			r := serve(f, http.MethodGet, map[string]string{"Accept-Encoding": tc.accept})
			h := r.Header()
			if r.Code != http.StatusOK || h.Get("Content-Type") != f.ContentType || h.Get("Cache-Control") != f.Cache {
				t.Fatalf("%d %v", r.Code, h)
			}
			if h.Get("Vary") != "Accept-Encoding" {
				t.Errorf("Vary %q", h.Get("Vary"))
			}
			if got := h.Get("Content-Encoding"); got != tc.want {
				t.Fatalf("Content-Encoding %q, want %q", got, tc.want)
			}
			wantETag, want := `"`+f.ETag+`"`, body
			if tc.want != "" {
				wantETag, want = `"`+f.ETag+"-"+tc.want+`"`, f.Encoded[tc.want]
			}
			if h.Get("ETag") != wantETag || !bytes.Equal(r.Body.Bytes(), want) {
				t.Errorf("ETag %s (want %s), %d bytes (want %d)", h.Get("ETag"), wantETag, r.Body.Len(), len(want))
			}
			nm := serve(f, http.MethodGet, map[string]string{"Accept-Encoding": tc.accept, "If-None-Match": h.Get("ETag")})
			if nm.Code != http.StatusNotModified || nm.Body.Len() != 0 {
				t.Errorf("If-None-Match %s: %d with %d bytes", h.Get("ETag"), nm.Code, nm.Body.Len())
			}
		})
	}
	zr, err := gzip.NewReader(bytes.NewReader(f.Encoded["gzip"]))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(zr); err != nil || !bytes.Equal(b, body) {
		t.Errorf("the gzip form is not the body (%v)", err)
	}
}

// A file without compressed forms does not vary by Accept-Encoding.
func TestServeIdentityOnly(t *testing.T) {
	f := New("image/png", "public, max-age=3600", []byte("\x89PNG"))
	r := serve(f, http.MethodGet, map[string]string{"Accept-Encoding": "gzip, br"})
	if r.Code != http.StatusOK || r.Header().Get("Vary") != "" || r.Header().Get("Content-Encoding") != "" || r.Body.String() != "\x89PNG" {
		t.Errorf("%d %v %q", r.Code, r.Header(), r.Body.String())
	}
	if r.Header().Get("ETag") != `"`+f.ETag+`"` || len(f.ETag) != 16 {
		t.Errorf("ETag %q of %q", r.Header().Get("ETag"), f.ETag)
	}
	if g := New("image/png", "", []byte("\x89PNG")); g.ETag != f.ETag {
		t.Errorf("ETag differs for the same body: %s, %s", g.ETag, f.ETag)
	}
	if g := New("image/png", "", []byte("\x89PNG2")); g.ETag == f.ETag {
		t.Errorf("ETag %s for two bodies", g.ETag)
	}
}

func TestServeHead(t *testing.T) {
	f := New("text/plain; charset=utf-8", "no-cache", []byte("hello"))
	r := serve(f, http.MethodHead, nil)
	if r.Code != http.StatusOK || r.Body.Len() != 0 || r.Header().Get("Content-Length") != "5" || r.Header().Get("ETag") == "" {
		t.Errorf("HEAD: %d, %d bytes, %v", r.Code, r.Body.Len(), r.Header())
	}
}

// Gzip keeps only forms that pay: not of images, small files or
// incompressible bodies.
func TestGzipOnlyWhenItPays(t *testing.T) {
	// A hash chain: as good as random to gzip, and the same every run.
	var random []byte
	sum := sha256.Sum256(nil)
	for len(random) < 4096 {
		sum = sha256.Sum256(sum[:])
		random = append(random, sum[:]...)
	}
	text := []byte(strings.Repeat("body { color: red }\n", 100))
	cases := []struct {
		name, contentType string
		body              []byte
		want              bool
	}{
		{"text", "text/css; charset=utf-8", text, true},
		{"image", "image/svg+xml", text, false},
		{"small", "text/css; charset=utf-8", text[:1023], false},
		{"incompressible", "application/octet-stream", random, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := New(tc.contentType, "", tc.body)
			f.Gzip()
			if got := f.Encoded["gzip"] != nil; got != tc.want {
				t.Errorf("gzip form %v, want %v", got, tc.want)
			}
		})
	}
}
