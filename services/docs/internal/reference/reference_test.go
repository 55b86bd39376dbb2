package reference

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"supportplatform.dev/pkg/httpserver"
)

// The page shows the document the gateway serves: the embedded copy must
// be gateway/openapi.yaml byte for byte.
func TestEmbeddedSpecIsTheGatewayDocument(t *testing.T) {
	want, err := os.ReadFile("../../../../gateway/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := fs.ReadFile(Files, SpecFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("services/docs/internal/reference/openapi.yaml differs from gateway/openapi.yaml: run make docs-assets")
	}
}

// The vendored viewer is the version package.json pins and the lock file
// resolves.
func TestVendoredViewerIsThePinnedVersion(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	for file, dst := range map[string]any{"../../web/package.json": &pkg, "../../web/package-lock.json": &lock} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	pinned := pkg.Dependencies["swagger-ui-dist"]
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(pinned) {
		t.Fatalf("package.json: swagger-ui-dist %q is not an exact version", pinned)
	}
	if got := lock.Packages["node_modules/swagger-ui-dist"].Version; got != pinned {
		t.Fatalf("package-lock.json resolves swagger-ui-dist %s, package.json pins %s", got, pinned)
	}
	if got := version(Files); got != pinned {
		t.Fatalf("vendored swagger-ui-dist %s, package.json pins %s: run make docs-assets", got, pinned)
	}
}

// site is prepared once for the tests (compressing the bundle is most of
// the work, and slow under -race).
var site = sync.OnceValues(func() (*Site, error) { return New(Files) })

func newServer(t *testing.T) http.Handler {
	t.Helper()
	site, err := site()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpserver.New(httpserver.Options{Service: "docs", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	site.Routes(srv.Engine, srv.Handle)
	return srv.Handler()
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, h http.Handler, method, target string, header map[string]string) response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return response{w.Code, w.Header(), w.Body.Bytes()}
}

var (
	scriptTag = regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`)
	localRef  = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	// inlineHandler is an event handler attribute (onclick=...).
	inlineHandler = regexp.MustCompile(`\son[a-z]+\s*=`)
)

func TestPage(t *testing.T) {
	h := newServer(t)
	for _, p := range []string{"/docs", "/docs/", "/DOCS", "/Docs/"} {
		t.Run(p, func(t *testing.T) {
			r := do(t, h, http.MethodGet, p, nil)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Fatalf("GET %s: %d %s", p, r.status, r.header.Get("Content-Type"))
			}
			checkSecurityHeaders(t, r.header)
			if r.header.Get("Cache-Control") != "no-cache" || r.header.Get("ETag") == "" {
				t.Errorf("page caching: %q, ETag %q", r.header.Get("Cache-Control"), r.header.Get("ETag"))
			}
		})
	}

	page := do(t, h, http.MethodGet, "/docs", nil).body
	// No inline script: every script element loads a file and has no body,
	// so script-src 'self' suffices.
	scripts := scriptTag.FindAllSubmatch(page, -1)
	if len(scripts) != 2 {
		t.Fatalf("%d script elements, want the bundle and docs.js:\n%s", len(scripts), page)
	}
	for _, s := range scripts {
		if !bytes.Contains(s[1], []byte(`src="/docs/assets/`)) || len(bytes.TrimSpace(s[2])) != 0 {
			t.Errorf("script %s is inline or not an asset", s[0])
		}
	}
	if bytes.Contains(page, []byte(" style=")) || bytes.Contains(page, []byte("<style")) || inlineHandler.Match(page) {
		t.Errorf("inline style or event handler in the page:\n%s", page)
	}
	// Everything the page references is served from this origin.
	refs := localRef.FindAllSubmatch(page, -1)
	if len(refs) < 6 {
		t.Fatalf("only %d references in the page", len(refs))
	}
	for _, ref := range refs {
		u := string(ref[1])
		if !strings.HasPrefix(u, "/docs/") {
			t.Errorf("the page references %s, outside /docs", u)
			continue
		}
		if r := do(t, h, http.MethodGet, u, nil); r.status != http.StatusOK {
			t.Errorf("GET %s (referenced by the page): %d", u, r.status)
		}
	}
	if !bytes.Contains(page, []byte(`data-spec-url="/docs/openapi.yaml"`)) {
		t.Errorf("the page does not point the viewer at /docs/openapi.yaml")
	}
}

func checkSecurityHeaders(t *testing.T, h http.Header) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": ContentSecurityPolicy,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"X-Frame-Options":         "DENY",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if csp := h.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-") || !strings.Contains(csp, "script-src 'self';") {
		t.Errorf("CSP %q is not strict", csp)
	}
}

func TestSpec(t *testing.T) {
	h := newServer(t)
	want, _ := fs.ReadFile(Files, SpecFile)
	r := do(t, h, http.MethodGet, "/docs/openapi.yaml", nil)
	if r.status != http.StatusOK || !bytes.Equal(r.body, want) {
		t.Fatalf("GET /docs/openapi.yaml: %d, %d bytes (want %d)", r.status, len(r.body), len(want))
	}
	if ct := r.header.Get("Content-Type"); ct != "application/yaml; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	checkSecurityHeaders(t, r.header)
	if r.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("Cache-Control %q: browsers must revalidate the document", r.header.Get("Cache-Control"))
	}
	// Revalidation: the same ETag gives 304 without a body.
	r2 := do(t, h, http.MethodGet, "/docs/openapi.yaml", map[string]string{"If-None-Match": r.header.Get("ETag")})
	if r2.status != http.StatusNotModified || len(r2.body) != 0 {
		t.Errorf("If-None-Match: %d with %d bytes", r2.status, len(r2.body))
	}
}

func TestAssets(t *testing.T) {
	site, err := site()
	if err != nil {
		t.Fatal(err)
	}
	h := newServer(t)
	bundleURL := site.AssetURL("swaggerui/swagger-ui-bundle.js")
	if !regexp.MustCompile(`^/docs/assets/swagger-ui-bundle\.[0-9a-f]{12}\.js$`).MatchString(bundleURL) {
		t.Fatalf("bundle URL %q has no content hash", bundleURL)
	}
	bundle, _ := fs.ReadFile(Files, "swaggerui/swagger-ui-bundle.js")

	cases := []struct {
		name           string
		acceptEncoding string
		gzipped        bool
	}{
		// The parsing of Accept-Encoding (q-values, *) is tested in
		// pkg/webfiles; these check that the bundle is gzipped at start.
		{"no Accept-Encoding", "", false},
		{"gzip", "gzip, deflate, br", true},
		{"br only", "br", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, h, http.MethodGet, bundleURL, map[string]string{"Accept-Encoding": tc.acceptEncoding})
			if r.status != http.StatusOK {
				t.Fatalf("GET %s: %d", bundleURL, r.status)
			}
			checkSecurityHeaders(t, r.header)
			if cc := r.header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
				t.Errorf("Cache-Control %q", cc)
			}
			if ct := r.header.Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if r.header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("Vary %q", r.header.Get("Vary"))
			}
			body := r.body
			if got := r.header.Get("Content-Encoding") == "gzip"; got != tc.gzipped {
				t.Fatalf("Content-Encoding %q, want gzip %v", r.header.Get("Content-Encoding"), tc.gzipped)
			}
			if tc.gzipped {
				zr, err := gzip.NewReader(bytes.NewReader(r.body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				if len(r.body) >= len(bundle)/2 {
					t.Errorf("gzipped bundle %d bytes of %d", len(r.body), len(bundle))
				}
			}
			if !bytes.Equal(body, bundle) {
				t.Errorf("body is not the vendored bundle (%d bytes, want %d)", len(body), len(bundle))
			}
			nm := do(t, h, http.MethodGet, bundleURL, map[string]string{"Accept-Encoding": tc.acceptEncoding, "If-None-Match": r.header.Get("ETag")})
			if nm.status != http.StatusNotModified {
				t.Errorf("If-None-Match %s: %d", r.header.Get("ETag"), nm.status)
			}
		})
	}

	// HEAD answers the headers only.
	r := do(t, h, http.MethodHead, bundleURL, nil)
	if r.status != http.StatusOK || len(r.body) != 0 || r.header.Get("Content-Length") == "" {
		t.Errorf("HEAD: %d, %d bytes, Content-Length %q", r.status, len(r.body), r.header.Get("Content-Length"))
	}
	// The licences travel with the viewer.
	for _, name := range []string{"LICENSE", "NOTICE", "swagger-ui-bundle.js.LICENSE.txt"} {
		r := do(t, h, http.MethodGet, "/docs/assets/"+name, nil)
		if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/plain; charset=utf-8" || len(r.body) == 0 {
			t.Errorf("GET %s: %d %q", name, r.status, r.header.Get("Content-Type"))
		}
	}
}

func TestUnknownPathsAreProblems(t *testing.T) {
	h := newServer(t)
	cases := []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/docs/nope", http.StatusNotFound},
		{http.MethodGet, "/docs/assets/nope.js", http.StatusNotFound},
		// Only hashed names are served for the page's files.
		{http.MethodGet, "/docs/assets/swagger-ui-bundle.js", http.StatusNotFound},
		{http.MethodGet, "/docs/assets/../openapi.yaml/x", http.StatusNotFound},
		{http.MethodGet, "/docs/assets/", http.StatusNotFound},
		{http.MethodGet, "/docs/openapi.json", http.StatusNotFound},
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, "/api/Topics", http.StatusNotFound},
		{http.MethodPost, "/docs", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/docs/openapi.yaml", http.StatusMethodNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := do(t, h, tc.method, tc.path, nil)
			if r.status != tc.status || r.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %q, want %d problem+json: %s", r.status, r.header.Get("Content-Type"), tc.status, r.body)
			}
			var p struct {
				Status int `json:"status"`
			}
			if err := json.Unmarshal(r.body, &p); err != nil || p.Status != tc.status {
				t.Errorf("body %s", r.body)
			}
		})
	}
}

// A missing vendored file (make docs-assets not run) stops the binary at
// start with a message saying so, rather than serving a broken page.
func TestMissingAssetsFailAtStart(t *testing.T) {
	files := fstest.MapFS{}
	if err := fs.WalkDir(Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "swaggerui/swagger-ui-bundle.js" {
			return err
		}
		b, err := fs.ReadFile(Files, p)
		files[p] = &fstest.MapFile{Data: b}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(files); err == nil || !strings.Contains(err.Error(), "make docs-assets") {
		t.Fatalf("New without the bundle: %v", err)
	}
}

// fill escapes values and refuses a placeholder it has no value for.
func TestFill(t *testing.T) {
	got, err := fill(`<a href="{{.URL}}">{{ .Text }}</a>`, map[string]string{"URL": "/a?b=1&c=2", "Text": "<x>"})
	if err != nil || got != `<a href="/a?b=1&amp;c=2">&lt;x&gt;</a>` {
		t.Errorf("got %q, %v", got, err)
	}
	for _, bad := range []string{"{{.Missing}}", "{{.URL", "{{URL}}"} {
		if _, err := fill(bad, map[string]string{"URL": "/"}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
