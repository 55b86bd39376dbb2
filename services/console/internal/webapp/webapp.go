// Package webapp serves the agent console: the single-page app that Vite
// builds from ../../web into dist (committed; `make console-assets`
// rebuilds it), embedded in the binary. Every file comes with its gzip and
// brotli forms, compressed by the build, so the binary compresses nothing
// and needs no brotli encoder. The app runs no inline script and loads
// nothing from another origin: it is served with a strict
// Content-Security-Policy.
package webapp

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Files are what the binary embeds: the build output.
//
//go:embed all:dist
var Files embed.FS

// Root is the directory of the build inside Files.
const Root = "dist"

// encodings a file may be precompressed in, by preference: the first the
// client accepts is sent.
var encodings = []struct{ name, ext string }{{"br", ".br"}, {"gzip", ".gz"}}

// file is one served file with its precompressed forms.
type file struct {
	contentType string
	body        []byte
	encoded     map[string][]byte // by Content-Encoding
	etag        string            // of body; the encoding is appended for an encoded form
	cache       string
}

// App is the build, read once at start.
type App struct {
	index *file
	// assets are under /assets/ by name (Vite puts the content hash in
	// each name); root are the other files at the top (the icon).
	assets map[string]*file
	root   map[string]*file
}

// Cache-Control values: the page is revalidated on every load so that a new
// deployment is picked up at once; hashed assets never change.
const (
	cacheIndex     = "no-cache"
	cacheImmutable = "public, max-age=31536000, immutable"
	cacheRoot      = "public, max-age=3600"
)

// New reads the build from files (Files in production).
func New(files fs.FS) (*App, error) {
	dist, err := fs.Sub(files, Root)
	if err != nil {
		return nil, err
	}
	a := &App{assets: map[string]*file{}, root: map[string]*file{}}
	err = fs.WalkDir(dist, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || isEncoded(p) {
			return err
		}
		f, err := load(dist, p)
		if err != nil {
			return err
		}
		switch dir, name := path.Split(p); {
		case p == "index.html":
			f.cache = cacheIndex
			a.index = f
		case dir == "assets/":
			f.cache = cacheImmutable
			a.assets[name] = f
		case dir == "":
			f.cache = cacheRoot
			a.root[name] = f
		default:
			return fmt.Errorf("webapp: unexpected file %s in the build", p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if a.index == nil || len(a.assets) == 0 {
		return nil, fmt.Errorf("webapp: no index.html or assets in the build (run make console-assets)")
	}
	return a, nil
}

func isEncoded(p string) bool {
	for _, e := range encodings {
		if strings.HasSuffix(p, e.ext) {
			return true
		}
	}
	return false
}

func load(dist fs.FS, p string) (*file, error) {
	body, err := fs.ReadFile(dist, p)
	if err != nil {
		return nil, err
	}
	ct, ok := contentTypes[path.Ext(p)]
	if !ok {
		return nil, fmt.Errorf("webapp: no content type for %s", p)
	}
	sum := sha256.Sum256(body)
	f := &file{contentType: ct, body: body, encoded: map[string][]byte{}, etag: hex.EncodeToString(sum[:8])}
	for _, e := range encodings {
		if b, err := fs.ReadFile(dist, p+e.ext); err == nil {
			f.encoded[e.name] = b
		}
	}
	return f, nil
}

var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".woff2": "font/woff2",
	".txt":   "text/plain; charset=utf-8",
	".json":  "application/json",
}
