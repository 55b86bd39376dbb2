package reference

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/webfiles"
)

// Routes registers every route of the page. Each answers GET and HEAD, needs
// no token (the document is public, like the API it describes) and carries
// the security headers; anything else under /docs is the engine's 404
// problem.
func (s *Site) Routes(e *gin.Engine, handle func(func(*gin.Context) error) gin.HandlerFunc) {
	g := e.Group(Base, webfiles.SecurityHeaders(ContentSecurityPolicy))
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

func (s *Site) servePage(c *gin.Context) error {
	webfiles.Serve(c.Writer, c.Request, s.page)
	return nil
}

func (s *Site) serveSpec(c *gin.Context) error {
	webfiles.Serve(c.Writer, c.Request, s.spec)
	return nil
}

func (s *Site) serveAsset(c *gin.Context) error {
	a, ok := s.assets[c.Param("file")]
	if !ok {
		return apperr.E(apperr.NotFound, "no asset %q", c.Param("file"))
	}
	webfiles.Serve(c.Writer, c.Request, a)
	return nil
}
