package webapp

import (
	"bytes"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
)

// Routes registers every route of the console. Each answers GET and HEAD
// and carries the security headers:
//
//	/, /index.html      the app's page
//	/assets/:file       the hashed bundle, stylesheet and icons (404 problem when unknown)
//	/<file>             the other files of the build (the icon)
//	anything else       the page, when the last segment has no dot: the
//	                    app's own routes (/tickets/42) load it and route in
//	                    the browser; a missing file is a 404 problem
func (a *App) Routes(e *gin.Engine, handle func(func(*gin.Context) error) gin.HandlerFunc) {
	g := e.Group("/", securityHeaders)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		g.Handle(method, "/", handle(a.serveIndex))
		g.Handle(method, "/index.html", handle(a.serveIndex))
		g.Handle(method, "/assets/:file", handle(a.serveAsset))
		for name := range a.root {
			g.Handle(method, "/"+name, handle(a.serveRoot))
		}
	}
	e.NoRoute(securityHeaders, handle(a.serveAppRoute))
}

// ContentSecurityPolicy lets the app load its script, styles and images from
// its own origin and call the API there; mail bodies are shown in sandboxed
// srcdoc frames (frame-src 'self'), which cannot run scripts either.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func securityHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	c.Next()
}

func (a *App) serveIndex(c *gin.Context) error {
	serve(c, a.index)
	return nil
}

func (a *App) serveAsset(c *gin.Context) error {
	f, ok := a.assets[c.Param("file")]
	if !ok {
		return apperr.E(apperr.NotFound, "no asset %q", c.Param("file"))
	}
	serve(c, f)
	return nil
}

func (a *App) serveRoot(c *gin.Context) error {
	serve(c, a.root[path.Base(c.FullPath())])
	return nil
}

func (a *App) serveAppRoute(c *gin.Context) error {
	p := c.Request.URL.Path
	if m := c.Request.Method; m != http.MethodGet && m != http.MethodHead {
		return apperr.E(apperr.NotFound, "no route for %s %s", m, p)
	}
	if strings.Contains(path.Base(p), ".") || strings.HasPrefix(strings.ToLower(p), "/assets/") {
		return apperr.E(apperr.NotFound, "no file %s", p)
	}
	serve(c, a.index)
	return nil
}

// serve writes f in the first precompressed form the client accepts;
// http.ServeContent answers If-None-Match (304), HEAD and ranges.
func serve(c *gin.Context, f *file) {
	h := c.Writer.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", f.cache)
	body, etag := f.body, f.etag
	if len(f.encoded) > 0 {
		h.Add("Vary", "Accept-Encoding")
		accept := c.GetHeader("Accept-Encoding")
		for _, e := range encodings {
			if b, ok := f.encoded[e.name]; ok && accepts(accept, e.name) {
				body, etag = b, f.etag+"-"+e.name
				h.Set("Content-Encoding", e.name)
				break
			}
		}
	}
	h.Set("ETag", `"`+etag+`"`)
	http.ServeContent(c.Writer, c.Request, "", time.Time{}, bytes.NewReader(body))
}

// accepts reports whether an Accept-Encoding header value allows coding:
// named, or covered by *, with a quality above zero.
func accepts(header, coding string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		allowed := qualityAboveZero(params)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case coding:
			return allowed
		case "*":
			star = allowed
		}
	}
	return star
}

func qualityAboveZero(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q > 0
		}
	}
	return true
}
