// Package webapp serves the agent console: the single-page app that Vite
// builds from ../../web into dist (committed; `make console-assets`
// rebuilds it), embedded in the binary. Every file comes with its gzip and
// brotli forms, compressed by the build, so the binary compresses nothing
// and needs no brotli encoder. The app runs no inline script and loads
// nothing from another origin: it is served with a strict
// Content-Security-Policy.
package webapp

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"supportplatform.dev/pkg/webfiles"
)

// Files are what the binary embeds: the build output.
//
//go:embed all:dist
var Files embed.FS

// Root is the directory of the build inside Files.
const Root = "dist"

// extensions of the precompressed forms the build writes next to each file,
// by Content-Encoding.
var extensions = map[string]string{"br": ".br", "gzip": ".gz"}

// App is the build, read once at start.
type App struct {
	index *webfiles.File
	// assets are under /assets/ by name (Vite puts the content hash in
	// each name); root are the other files at the top (the icon).
	assets map[string]*webfiles.File
	root   map[string]*webfiles.File
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
	a := &App{assets: map[string]*webfiles.File{}, root: map[string]*webfiles.File{}}
	err = fs.WalkDir(dist, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || isEncoded(p) {
			return err
		}
		switch dir, name := path.Split(p); {
		case p == "index.html":
			a.index, err = load(dist, p, cacheIndex)
		case dir == "assets/":
			a.assets[name], err = load(dist, p, cacheImmutable)
		case dir == "":
			a.root[name], err = load(dist, p, cacheRoot)
		default:
			return fmt.Errorf("webapp: unexpected file %s in the build", p)
		}
		return err
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
	for _, ext := range extensions {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// load reads p and the precompressed forms the build made of it.
func load(dist fs.FS, p, cache string) (*webfiles.File, error) {
	body, err := fs.ReadFile(dist, p)
	if err != nil {
		return nil, err
	}
	ct, ok := contentTypes[path.Ext(p)]
	if !ok {
		return nil, fmt.Errorf("webapp: no content type for %s", p)
	}
	f := webfiles.New(ct, cache, body)
	for name, ext := range extensions {
		if b, err := fs.ReadFile(dist, p+ext); err == nil {
			f.Encoded[name] = b
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
