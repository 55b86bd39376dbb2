package reference

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
)

// Routes registers every route of the page. Each answers GET and HEAD, needs
// no token (the document is public, like the API it describes) and carries
// the security headers; anything else under /docs is the engine's 404
// problem.
func (s *Site) Routes(e *gin.Engine, handle func(func(*gin.Context) error) gin.HandlerFunc) {
	g := e.Group(Base, securityHeaders)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		g.Handle(method, "", handle(s.servePage))
		g.Handle(method, "/", handle(s.servePage))
		g.Handle(method, "/"+SpecFile, handle(s.serveSpec))
		g.Handle(method, "/assets/:file", handle(s.serveAsset))
	}
}

// ContentSecurityPolicy allows the page to load scripts, styles, the icon and
// the OpenAPI document from its own origin only: no inline script, no eval,
// no outside host, no framing. Swagger UI's stylesheet draws its icons with
// data: URLs.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

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

func (s *Site) servePage(c *gin.Context) error {
	serve(c, &s.page, "no-cache")
	return nil
}

// serveSpec answers the OpenAPI document; browsers revalidate it (ETag) so
// a new deployment's document is seen at once.
func (s *Site) serveSpec(c *gin.Context) error {
	serve(c, &s.spec, "no-cache")
	return nil
}

func (s *Site) serveAsset(c *gin.Context) error {
	a, ok := s.assets[c.Param("file")]
	if !ok {
		return apperr.E(apperr.NotFound, "no asset %q", c.Param("file"))
	}
	cache := "public, max-age=3600"
	if a.immutable {
		cache = "public, max-age=31536000, immutable"
	}
	serve(c, a, cache)
	return nil
}

// serve writes a, gzipped when the client accepts it and that pays;
// http.ServeContent answers If-None-Match (304), HEAD and ranges.
func serve(c *gin.Context, a *asset, cacheControl string) {
	h := c.Writer.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", cacheControl)
	body, etag := a.body, a.etag
	if a.gzipped != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(c.GetHeader("Accept-Encoding")) {
			body, etag = a.gzipped, a.etag+"-gzip"
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("ETag", `"`+etag+`"`)
	http.ServeContent(c.Writer, c.Request, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding header value allows gzip:
// named, or covered by *, with a quality above zero.
func acceptsGzip(header string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		allowed := qualityAboveZero(params)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "gzip":
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
