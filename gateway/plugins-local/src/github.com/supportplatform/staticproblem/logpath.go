package staticproblem

import (
	"net/http"
	"strings"
)

// The gateway's access log must not keep secrets that clients send in query
// strings (the feedback link's token, Graph's validationToken, the sign-in
// answer's code and state). Traefik v3.6 logs RequestPath with its query and
// cannot drop only the query, so the access log drops RequestPath and keeps
// this request header instead, which the plugin sets on every request it
// sees: the path, and the query's parameter names with every value
// redacted, as Traefik's tracing redacts them. A client's own value of the
// header is overwritten. (The same function is in both local plugins: Yaegi
// loads each plugin on its own, with the standard library only.)

// maxLogPath bounds the header: a path or query of any length is cut.
const maxLogPath = 2048

// setLogPath sets header name to req's redacted path; no name, no header.
func setLogPath(req *http.Request, name string) {
	if name == "" {
		return
	}
	req.Header.Set(name, redactedPath(req.URL.EscapedPath(), req.URL.RawQuery))
}

// redactedPath is path?name=REDACTED&... cut at maxLogPath bytes.
func redactedPath(path, rawQuery string) string {
	var b strings.Builder
	b.WriteString(path)
	if rawQuery != "" {
		for i, part := range strings.Split(rawQuery, "&") {
			if b.Len() > maxLogPath {
				break
			}
			if i == 0 {
				b.WriteByte('?')
			} else {
				b.WriteByte('&')
			}
			name, _, hasValue := strings.Cut(part, "=")
			b.WriteString(name)
			if hasValue {
				b.WriteString("=REDACTED")
			}
		}
	}
	s := b.String()
	if len(s) > maxLogPath {
		s = s[:maxLogPath] + "..."
	}
	return s
}
