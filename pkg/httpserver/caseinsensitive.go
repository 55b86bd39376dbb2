package httpserver

import (
	"net/http"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
)

// CaseInsensitive rewrites each path segment that equals a static segment of a
// registered route, ignoring case, into the registered spelling before Gin
// routes it. Routes stay written in their canonical casing (/api/Topics) while
// /API/topics and the mail provider's /api/providerwebhook reach them.
// Parameter values (ids) are left as sent unless they spell a static segment.
func CaseInsensitive(e *gin.Engine) http.Handler {
	var once sync.Once
	var canon map[string]string
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { canon = staticSegments(e.Routes()) })
		if p := canonicalPath(r.URL.Path, canon); p != r.URL.Path {
			r.URL.Path = p
			r.URL.RawPath = ""
		}
		e.ServeHTTP(w, r)
	})
}

func staticSegments(routes gin.RoutesInfo) map[string]string {
	canon := map[string]string{}
	for _, rt := range routes {
		for _, seg := range strings.Split(rt.Path, "/") {
			if seg == "" || seg[0] == ':' || seg[0] == '*' {
				continue
			}
			canon[strings.ToLower(seg)] = seg
		}
	}
	return canon
}

func canonicalPath(p string, canon map[string]string) string {
	segs := strings.Split(p, "/")
	changed := false
	for i, s := range segs {
		if s == "" {
			continue
		}
		if c, ok := canon[strings.ToLower(s)]; ok && c != s {
			segs[i] = c
			changed = true
		}
	}
	if !changed {
		return p
	}
	return strings.Join(segs, "/")
}

// RouteKeys lists the engine's routes as "METHOD /path/{param}" (OpenAPI
// style), leaving out the health and metrics endpoints, so tests can check
// that the served API and the documented one are the same.
func RouteKeys(e *gin.Engine) map[string]bool {
	out := map[string]bool{}
	for _, r := range e.Routes() {
		switch r.Path {
		case "/healthz", "/readyz", "/metrics":
			continue
		}
		segs := strings.Split(r.Path, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, ":") {
				segs[i] = "{" + s[1:] + "}"
			}
		}
		out[r.Method+" "+strings.Join(segs, "/")] = true
	}
	return out
}
