// Package reference serves the API reference page: Swagger UI (vendored from
// the npm package swagger-ui-dist by `make docs-assets`) showing a copy of
// gateway/openapi.yaml, everything embedded in the binary. The page loads
// nothing from anywhere but its own origin, runs no inline script and can
// therefore be served with a strict Content-Security-Policy.
package reference

import (
	"embed"
	"fmt"
	"html"
	"io/fs"
	"path"
	"strings"

	"supportplatform.dev/pkg/placeholders"
	"supportplatform.dev/pkg/webfiles"
)

// Files are what the binary embeds: the OpenAPI document (a copy of
// gateway/openapi.yaml, kept equal by a test), the vendored viewer and the
// page's own files.
//
//go:embed openapi.yaml swaggerui page
var Files embed.FS

// Base is the path prefix of every route of the page (the gateway routes it
// to this service).
const Base = "/docs"

// SpecFile is the name of the embedded OpenAPI document.
const SpecFile = "openapi.yaml"

// Cache-Control values: the page and the document are revalidated (ETag) so
// that a new deployment is seen at once; assets with the content hash in
// their name never change, so browsers may keep them for a year.
const (
	cacheRevalidate = "no-cache"
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheLicense    = "public, max-age=3600"
)

// Site is the page and its files, prepared once at start.
type Site struct {
	page   *webfiles.File
	spec   *webfiles.File
	assets map[string]*webfiles.File // by served file name
	// names maps each page asset's source name to its served (hashed) name.
	names map[string]string
}

// pageAssets are referenced by the page; they are served under names that
// contain their content hash.
var pageAssets = []string{
	"swaggerui/swagger-ui.css",
	"swaggerui/swagger-ui-bundle.js",
	"swaggerui/favicon-32x32.png",
	"page/docs.css",
	"page/docs.js",
}

// licenseFiles of the vendored viewer, served under their own names.
var licenseFiles = []string{
	"swaggerui/LICENSE",
	"swaggerui/NOTICE",
	"swaggerui/swagger-ui-bundle.js.LICENSE.txt",
}

// New prepares the site from files (Files in production).
func New(files fs.FS) (*Site, error) {
	s := &Site{assets: map[string]*webfiles.File{}, names: map[string]string{}}
	for _, src := range pageAssets {
		a, err := load(files, src, cacheImmutable)
		if err != nil {
			return nil, err
		}
		name := hashedName(path.Base(src), a.ETag)
		s.assets[name] = a
		s.names[src] = name
	}
	for _, src := range licenseFiles {
		a, err := load(files, src, cacheLicense)
		if err != nil {
			return nil, err
		}
		s.assets[path.Base(src)] = a
	}
	spec, err := load(files, SpecFile, cacheRevalidate)
	if err != nil {
		return nil, err
	}
	s.spec = spec

	tmpl, err := fs.ReadFile(files, "page/index.html.tmpl")
	if err != nil {
		return nil, err
	}
	url := func(src string) string { return Base + "/assets/" + s.names[src] }
	page, err := fill(string(tmpl), map[string]string{
		"CSS":      url("swaggerui/swagger-ui.css"),
		"PageCSS":  url("page/docs.css"),
		"Bundle":   url("swaggerui/swagger-ui-bundle.js"),
		"PageJS":   url("page/docs.js"),
		"Icon":     url("swaggerui/favicon-32x32.png"),
		"SpecURL":  Base + "/" + SpecFile,
		"Licenses": Base + "/assets/LICENSE",
		"Version":  version(files),
	})
	if err != nil {
		return nil, err
	}
	s.page = webfiles.New("text/html; charset=utf-8", cacheRevalidate, []byte(page))
	s.page.Gzip()
	return s, nil
}

// fill replaces each {{.Key}} of the page template with the value of Key,
// HTML-escaped (the values are paths and a version, in attributes and
// text); another placeholder is an error. Not html/template: see package
// placeholders.
func fill(tmpl string, values map[string]string) (string, error) {
	page, err := placeholders.Fill(tmpl, func(key string) (string, bool) {
		v, ok := values[key]
		return html.EscapeString(v), ok
	})
	if err != nil {
		return "", fmt.Errorf("reference: the page template: %w", err)
	}
	return page, nil
}

// AssetURL is the path the page uses for the embedded file src (for
// example "swaggerui/swagger-ui-bundle.js"); "" when src is not one.
func (s *Site) AssetURL(src string) string {
	if name, ok := s.names[src]; ok {
		return Base + "/assets/" + name
	}
	return ""
}

// load reads src and gzips it now, when that pays.
func load(files fs.FS, src, cache string) (*webfiles.File, error) {
	body, err := fs.ReadFile(files, src)
	if err != nil {
		return nil, fmt.Errorf("reference: %w (run make docs-assets)", err)
	}
	ct, ok := contentTypes[path.Ext(src)]
	if !ok {
		ct = "text/plain; charset=utf-8" // LICENSE, NOTICE
	}
	f := webfiles.New(ct, cache, body)
	f.Gzip()
	return f, nil
}

var contentTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".png":  "image/png",
	".txt":  "text/plain; charset=utf-8",
	".yaml": "application/yaml; charset=utf-8", // RFC 9512
}

// hashedName puts hash before the extension: swagger-ui.css becomes
// swagger-ui.<hash>.css.
func hashedName(name, hash string) string {
	ext := path.Ext(name)
	return strings.TrimSuffix(name, ext) + "." + hash[:12] + ext
}

func version(files fs.FS) string {
	b, err := fs.ReadFile(files, "swaggerui/VERSION")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
