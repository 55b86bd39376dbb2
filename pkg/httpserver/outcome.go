package httpserver

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
)

// Outcome classifies err as Fail would answer it (the outage rule first, a
// spent request budget as unavailable) and logs a server error as Fail
// does, but writes nothing: for a route that tells a browser the outcome
// with a redirect instead of a problem document. The code is one of
// apperr's (an unknown one is internal).
func (s *Server) Outcome(c *gin.Context, err error) apperr.Code {
	if s.outage != nil {
		if o := s.outage(err); o != nil {
			err = o
		}
	}
	code := apperr.CodeOf(err)
	if code == apperr.Internal && errors.Is(err, context.DeadlineExceeded) && c.Request.Context().Err() != nil {
		code = apperr.Unavailable
	}
	m, ok := statusOf[code]
	if !ok {
		code, m = apperr.Internal, statusOf[apperr.Internal]
	}
	if m.status >= 500 {
		s.log.ErrorContext(c.Request.Context(), "request failed", "error", err.Error(),
			"method", c.Request.Method, "path", c.Request.URL.Path)
	}
	return code
}

// PrefersHTML reports whether an Accept header ranks text/html above
// application/json: a browser's navigation (Chromium, Firefox and Safari
// send text/html first and JSON only through */* with a lower q). A
// missing header, */*, or a tie is an API client's and answers false.
// Each type takes the q of the most specific range that matches it.
func PrefersHTML(accept string) bool {
	return acceptQ(accept, "text", "html") > acceptQ(accept, "application", "json")
}

// acceptQ is the quality the header gives the media type typ/sub (0 when
// no range matches).
func acceptQ(accept, typ, sub string) float64 {
	best, bestRank := 0.0, -1
	for _, part := range strings.Split(accept, ",") {
		params := strings.Split(part, ";")
		mr := strings.ToLower(strings.TrimSpace(params[0]))
		t, s, ok := strings.Cut(mr, "/")
		if !ok {
			continue
		}
		rank := -1
		switch {
		case t == typ && s == sub:
			rank = 2
		case t == typ && s == "*":
			rank = 1
		case t == "*" && s == "*":
			rank = 0
		}
		if rank < bestRank || rank < 0 {
			continue
		}
		q := 1.0
		for _, p := range params[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f < 0 || f > 1 {
					f = 0
				}
				q = f
			}
		}
		if rank > bestRank || q > best {
			best, bestRank = q, rank
		}
	}
	return best
}
