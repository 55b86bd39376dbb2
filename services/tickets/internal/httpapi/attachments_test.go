package httpapi

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"

	"supportplatform.dev/pkg/apperr"
)

func TestContentDisposition(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"report.pdf", `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`},
		{`a"b\c.txt`, `attachment; filename="a_b_c.txt"; filename*=UTF-8''a%22b%5Cc.txt`},
		{"Ünïcødé 1.txt", `attachment; filename="_n_c_d_ 1.txt"; filename*=UTF-8''%C3%9Cn%C3%AFc%C3%B8d%C3%A9%201.txt`},
		{"a;b,c=d%e'f", `attachment; filename="a;b,c=d%e'f"; filename*=UTF-8''a%3Bb%2Cc%3Dd%25e%27f`},
	} {
		if got := ContentDisposition(tc.name); got != tc.want {
			t.Errorf("ContentDisposition(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func multipartRequest(t *testing.T, parts map[string]string, order []string, file []byte) *http.Request {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for _, name := range order {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", parts[name])
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		data := []byte("field value")
		if strings.Contains(parts[name], `name="file"`) {
			data = file
		}
		if _, err := pw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/", &body)
	r.Header.Set("Content-Type", w.FormDataContentType())
	return r
}

// The file part is found after other parts, its name decoded; anything
// else is a 400 naming file.
func TestFilePart(t *testing.T) {
	parts := map[string]string{
		"note":    `form-data; name="note"`,
		"file":    `form-data; name="file"; filename="x.txt"`,
		"utf8":    `form-data; name="file"; filename*=UTF-8''%C3%A9t%C3%A9.txt`,
		"noname":  `form-data; name="file"`,
		"another": `form-data; name="upload"; filename="y.txt"`,
	}
	r := multipartRequest(t, parts, []string{"note", "another", "file"}, []byte("the file"))
	p, name, err := filePart(r)
	if err != nil || name != "x.txt" {
		t.Fatalf("%q, %v", name, err)
	}
	if data, _ := io.ReadAll(p); string(data) != "the file" {
		t.Fatalf("part %q", data)
	}
	if _, name, err := filePart(multipartRequest(t, parts, []string{"utf8"}, nil)); err != nil || name != "été.txt" {
		t.Fatalf("filename*: %q, %v", name, err)
	}
	for label, r := range map[string]*http.Request{
		"no file part":  multipartRequest(t, parts, []string{"note", "another"}, nil),
		"no file name":  multipartRequest(t, parts, []string{"noname"}, nil),
		"not multipart": httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`)),
		"broken": func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("--b\r\nbad"))
			r.Header.Set("Content-Type", "multipart/form-data; boundary=b")
			return r
		}(),
	} {
		if _, _, err := filePart(r); !apperr.Is(err, apperr.Invalid) || err.(*apperr.Error).Fields["file"] == "" {
			t.Errorf("%s: %v", label, err)
		}
	}
}

func TestBodyError(t *testing.T) {
	if err := bodyError(context.Background(), &http.MaxBytesError{Limit: 10}); !apperr.Is(err, apperr.TooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	if err := bodyError(context.Background(), io.ErrUnexpectedEOF); !apperr.Is(err, apperr.Invalid) {
		t.Errorf("cut short: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := bodyError(ctx, io.ErrUnexpectedEOF); !apperr.Is(err, apperr.Unavailable) {
		t.Errorf("timed out: %v", err)
	}
}
