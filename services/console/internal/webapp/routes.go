package webapp

import (
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/webfiles"
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
	security := webfiles.SecurityHeaders(ContentSecurityPolicy)
	g := e.Group("/", security)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		g.Handle(method, "/", handle(a.serveIndex))
		g.Handle(method, "/index.html", handle(a.serveIndex))
		g.Handle(method, "/assets/:file", handle(a.serveAsset))
		for name := range a.root {
			g.Handle(method, "/"+name, handle(a.serveRoot))
		}
	}
	e.NoRoute(security, handle(a.serveAppRoute))
}

// ContentSecurityPolicy lets the app load its script, styles and images from
// its own origin and call the API there; mail bodies are shown in sandboxed
// srcdoc frames (frame-src 'self'), which cannot run scripts either.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (a *App) serveIndex(c *gin.Context) error {
	webfiles.Serve(c.Writer, c.Request, a.index)
	return nil
}

func (a *App) serveAsset(c *gin.Context) error {
	f, ok := a.assets[c.Param("file")]
	if !ok {
		return apperr.E(apperr.NotFound, "no asset %q", c.Param("file"))
	}
	webfiles.Serve(c.Writer, c.Request, f)
	return nil
}

func (a *App) serveRoot(c *gin.Context) error {
	webfiles.Serve(c.Writer, c.Request, a.root[path.Base(c.FullPath())])
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
	webfiles.Serve(c.Writer, c.Request, a.index)
	return nil
}
