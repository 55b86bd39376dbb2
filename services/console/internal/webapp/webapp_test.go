package webapp

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"supportplatform.dev/pkg/httpserver"
)

const repoRoot = "../../../.."

// inputsHash is the hash postbuild.mjs records in BUILD_INPUTS: sha256 over
// "<path>\n<sha256 of the file>\n" for every file of services/console/web
// but node_modules, and gateway/openapi.yaml, sorted by path from the
// repository root.
func inputsHash(t *testing.T) string {
	t.Helper()
	var paths []string
	web := filepath.Join(repoRoot, "services", "console", "web")
	err := filepath.WalkDir(web, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join(repoRoot, "gateway", "openapi.yaml"))
	rel := make([]string, len(paths))
	for i, p := range paths {
		r, err := filepath.Rel(repoRoot, p)
		if err != nil {
			t.Fatal(err)
		}
		rel[i] = filepath.ToSlash(r)
	}
	slices.Sort(rel)
	h := sha256.New()
	for _, p := range rel {
		b, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		io.WriteString(h, p+"\n"+hex.EncodeToString(sum[:])+"\n")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The embedded build is the build of the sources and of the contract as
// they are: a change to web/ or to gateway/openapi.yaml (whose types the
// app is compiled against) needs `make console-assets`.
func TestBuildIsCurrent(t *testing.T) {
	recorded, err := os.ReadFile("BUILD_INPUTS")
	if err != nil {
		t.Fatalf("%v: run make console-assets", err)
	}
	if got, want := strings.TrimSpace(string(recorded)), inputsHash(t); got != want {
		t.Fatalf("the embedded console build is stale (inputs %s, build made from %s): run make console-assets", want, got)
	}
}

// Dependencies are pinned: exact versions in package.json, resolved by the
// lock file.
func TestDependenciesArePinned(t *testing.T) {
	var pkg struct {
		Dependencies, DevDependencies map[string]string
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
	exact := regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	for _, deps := range []map[string]string{pkg.Dependencies, pkg.DevDependencies} {
		for name, v := range deps {
			if !exact.MatchString(v) {
				t.Errorf("package.json: %s %q is not an exact version", name, v)
			}
			if got := lock.Packages["node_modules/"+name].Version; got != v {
				t.Errorf("package-lock.json resolves %s %s, package.json pins %s", name, got, v)
			}
		}
	}
}

// The initial JavaScript stays within the budget of 250 KB
// compressed.
func TestInitialJavaScriptBudget(t *testing.T) {
	app, err := New(Files)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, src := range scriptSrc.FindAllSubmatch(app.index.Body, -1) {
		f := app.assets[strings.TrimPrefix(string(src[1]), "/assets/")]
		if f == nil {
			t.Fatalf("the page loads %s, not in the build", src[1])
		}
		total += len(f.Encoded["gzip"])
	}
	if total == 0 || total > 250_000 {
		t.Fatalf("initial JavaScript %d bytes gzipped, budget 250000", total)
	}
	t.Logf("initial JavaScript: %d bytes gzipped", total)
}

var scriptSrc = regexp.MustCompile(`<script[^>]*src="([^"]+)"`)

func newServer(t *testing.T, files fs.FS) http.Handler {
	t.Helper()
	app, err := New(files)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpserver.New(httpserver.Options{Service: "console", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	app.Routes(srv.Engine, srv.Handle)
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

func checkSecurityHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": ContentSecurityPolicy,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"X-Frame-Options":         "DENY",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %s %q, want %q", what, k, got, v)
		}
	}
}

var (
	scriptTag     = regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`)
	localRef      = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	inlineHandler = regexp.MustCompile(`\son[a-z]+\s*=`)
)

// The page and the app's own routes: index.html, revalidated (no-cache +
// ETag), with no inline script or style, referencing only files it serves.
func TestPageAndAppRoutes(t *testing.T) {
	h := newServer(t, Files)
	var etag string
	for _, p := range []string{"/", "/index.html", "/tickets/42", "/signin", "/Tickets/42/", "/some/deep/route"} {
		r := do(t, h, http.MethodGet, p, nil)
		if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("GET %s: %d %q", p, r.status, r.header.Get("Content-Type"))
		}
		checkSecurityHeaders(t, "GET "+p, r.header)
		if r.header.Get("Cache-Control") != "no-cache" || r.header.Get("ETag") == "" {
			t.Errorf("GET %s caching: %q, ETag %q", p, r.header.Get("Cache-Control"), r.header.Get("ETag"))
		}
		if etag != "" && r.header.Get("ETag") != etag {
			t.Errorf("GET %s: another page (ETag %s, want %s)", p, r.header.Get("ETag"), etag)
		}
		etag = r.header.Get("ETag")
	}
	if r := do(t, h, http.MethodGet, "/tickets/42", map[string]string{"If-None-Match": etag}); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Errorf("If-None-Match: %d with %d bytes", r.status, len(r.body))
	}
	if r := do(t, h, http.MethodHead, "/tickets/42", nil); r.status != http.StatusOK || len(r.body) != 0 {
		t.Errorf("HEAD: %d with %d bytes", r.status, len(r.body))
	}

	page := do(t, h, http.MethodGet, "/", nil).body
	scripts := scriptTag.FindAllSubmatch(page, -1)
	if len(scripts) == 0 {
		t.Fatalf("no script in the page:\n%s", page)
	}
	for _, s := range scripts {
		if !bytes.Contains(s[1], []byte(`src="/assets/`)) || len(bytes.TrimSpace(s[2])) != 0 {
			t.Errorf("script %s is inline or not an asset", s[0])
		}
	}
	if bytes.Contains(page, []byte(" style=")) || bytes.Contains(page, []byte("<style")) || inlineHandler.Match(page) {
		t.Errorf("inline style or event handler in the page:\n%s", page)
	}
	for _, ref := range localRef.FindAllSubmatch(page, -1) {
		u := string(ref[1])
		r := do(t, h, http.MethodGet, u, nil)
		if !strings.HasPrefix(u, "/") || strings.HasPrefix(u, "//") || r.status != http.StatusOK {
			t.Errorf("the page references %s: %d", u, r.status)
		}
	}
}

// Hashed assets are cached for a year and sent in the best encoding the
// client takes; a file at the top (the icon) for an hour.
func TestAssets(t *testing.T) {
	h := newServer(t, Files)
	page := do(t, h, http.MethodGet, "/", nil).body
	script := string(scriptSrc.FindSubmatch(page)[1])
	plain := do(t, h, http.MethodGet, script, map[string]string{"Accept-Encoding": "identity"})
	if plain.status != http.StatusOK || plain.header.Get("Content-Type") != "text/javascript; charset=utf-8" ||
		plain.header.Get("Cache-Control") != "public, max-age=31536000, immutable" || plain.header.Get("Content-Encoding") != "" {
		t.Fatalf("GET %s: %d %v", script, plain.status, plain.header)
	}
	checkSecurityHeaders(t, "GET "+script, plain.header)
	for _, tc := range []struct{ accept, want string }{
		// The parsing of Accept-Encoding (q-values, *) is tested in
		// pkg/webfiles; these check that both precompressed forms are loaded.
		{"gzip, deflate, br, zstd", "br"},
		{"gzip", "gzip"},
		{"deflate", ""},
	} {
		r := do(t, h, http.MethodGet, script, map[string]string{"Accept-Encoding": tc.accept})
		if got := r.header.Get("Content-Encoding"); got != tc.want || !strings.Contains(r.header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q (want %q), Vary %q", tc.accept, got, tc.want, r.header.Get("Vary"))
		}
		if tc.want == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(zr); err != nil || !bytes.Equal(b, plain.body) {
				t.Errorf("the gzipped script is not the script (%v)", err)
			}
		}
		if tc.want != "" && r.header.Get("ETag") == plain.header.Get("ETag") {
			t.Errorf("%s form has the identity ETag", tc.want)
		}
	}
	icon := do(t, h, http.MethodGet, "/favicon.svg", nil)
	if icon.status != http.StatusOK || icon.header.Get("Content-Type") != "image/svg+xml" || icon.header.Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("GET /favicon.svg: %d %v", icon.status, icon.header)
	}
}

// Unknown files are 404 problems, not the page: a stale script URL after a
// deployment must fail visibly, not load HTML as JavaScript.
func TestNotFound(t *testing.T) {
	h := newServer(t, Files)
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/assets/index-old.js"},
		{http.MethodGet, "/assets/"},
		{http.MethodGet, "/assets/sub/x.js"},
		{http.MethodGet, "/favicon.ico"},
		{http.MethodGet, "/tickets/1/attachment.pdf"},
		{http.MethodPost, "/tickets/1"},
	} {
		r := do(t, h, tc.method, tc.path, nil)
		if r.status != http.StatusNotFound || r.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: %d %q %s", tc.method, tc.path, r.status, r.header.Get("Content-Type"), r.body)
		}
	}
	if r := do(t, h, http.MethodPost, "/", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", r.status)
	}
}

// New refuses a build without its page or its assets, and a file it has
// no content type for.
func TestNewRefusesBrokenBuilds(t *testing.T) {
	page := &fstest.MapFile{Data: []byte("<!doctype html>")}
	asset := &fstest.MapFile{Data: []byte("console.log(1)")}
	for name, files := range map[string]fstest.MapFS{
		"empty":        {},
		"no assets":    {"dist/index.html": page},
		"no page":      {"dist/assets/a.js": asset},
		"unknown type": {"dist/index.html": page, "dist/assets/a.js": asset, "dist/a.exe": asset},
		"nested":       {"dist/index.html": page, "dist/assets/a.js": asset, "dist/x/y.js": asset},
	} {
		if _, err := New(files); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := New(fstest.MapFS{"dist/index.html": page, "dist/assets/a.js": asset}); err != nil {
		t.Errorf("a minimal build: %v", err)
	}
}
