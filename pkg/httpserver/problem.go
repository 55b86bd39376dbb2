package httpserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/requestid"
	"supportplatform.dev/pkg/telemetry"
)

// ProblemContentType is the RFC 9457 media type of every error answer.
const ProblemContentType = "application/problem+json"

// Problem is the RFC 9457 body. TraceID is the request's trace (W3C, 32 hex
// digits) when it has one: the key to its spans in the tracing back end.
type Problem struct {
	Type      string            `json:"type"`
	Title     string            `json:"title"`
	Status    int               `json:"status"`
	Detail    string            `json:"detail,omitempty"`
	Instance  string            `json:"instance,omitempty"`
	RequestID string            `json:"requestId,omitempty"`
	TraceID   string            `json:"traceId,omitempty"`
	Errors    map[string]string `json:"errors,omitempty"`
	// Extensions are written as members of the problem object beside the
	// standard ones (which they never replace).
	Extensions map[string]any `json:"-"`
}

// methodNotAllowed is a transport-level code only this package produces.
const methodNotAllowed apperr.Code = "method_not_allowed"

type mapping struct {
	status int
	title  string
}

// statusOf is the single mapping from application error codes to HTTP.
var statusOf = map[apperr.Code]mapping{
	apperr.Invalid:         {http.StatusBadRequest, "Bad Request"},
	apperr.Unauthorized:    {http.StatusUnauthorized, "Unauthorized"},
	apperr.Forbidden:       {http.StatusForbidden, "Forbidden"},
	apperr.NotFound:        {http.StatusNotFound, "Not Found"},
	apperr.Conflict:        {http.StatusConflict, "Conflict"},
	apperr.Unprocessable:   {http.StatusUnprocessableEntity, "Unprocessable Content"},
	apperr.TooLarge:        {http.StatusRequestEntityTooLarge, "Content Too Large"},
	apperr.UnsupportedType: {http.StatusUnsupportedMediaType, "Unsupported Media Type"},
	apperr.RateLimited:     {http.StatusTooManyRequests, "Too Many Requests"},
	apperr.Unavailable:     {http.StatusServiceUnavailable, "Service Unavailable"},
	apperr.Internal:        {http.StatusInternalServerError, "Internal Server Error"},
	methodNotAllowed:       {http.StatusMethodNotAllowed, "Method Not Allowed"},
}

// ProblemTypeBase prefixes the problem type URIs; the suffix is the code.
const ProblemTypeBase = "https://supportplatform.dev/problems/"

// StatusFor returns the HTTP status for an error.
func StatusFor(err error) int { return statusOf[apperr.CodeOf(err)].status }

// WriteError answers with the problem for err. Internal errors are logged with
// the request id and their text never reaches the client. It first drains
// the rest of the request body (bounded by DrainBytes) so that a client still
// sending one, like a body over the limit, sees the answer.
func WriteError(c *gin.Context, log *slog.Logger, err error) {
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code == apperr.Internal {
		if errors.Is(err, context.DeadlineExceeded) && c.Request.Context().Err() != nil {
			// The request's own budget (REQUEST_TIMEOUT) ran out: not a bug.
			ae = &apperr.Error{Code: apperr.Unavailable, Err: err,
				Message: "the request did not finish within the time allowed; try again later"}
		} else if ae == nil {
			ae = &apperr.Error{Code: apperr.Internal, Err: err}
		}
	}
	m, ok := statusOf[ae.Code]
	if !ok {
		m = statusOf[apperr.Internal]
	}
	detail := ae.Message
	if m.status >= 500 {
		log.ErrorContext(c.Request.Context(), "request failed", "error", err.Error(),
			"method", c.Request.Method, "path", c.Request.URL.Path)
		if ae.Code == apperr.Internal || detail == "" {
			detail = "an unexpected error occurred; quote the request id when reporting it"
		}
	}
	drainUnread(c)
	if ae.RetryAfterSeconds > 0 {
		c.Header("Retry-After", strconv.Itoa(ae.RetryAfterSeconds))
	}
	p := Problem{
		Type:       ProblemTypeBase + string(ae.Code),
		Title:      m.title,
		Status:     m.status,
		Detail:     detail,
		Instance:   c.Request.URL.Path,
		RequestID:  requestid.From(c.Request.Context()),
		TraceID:    telemetry.TraceID(c.Request.Context()),
		Errors:     ae.Fields,
		Extensions: ae.Extensions,
	}
	c.Header("Content-Type", ProblemContentType)
	c.Render(m.status, problemRender{p})
	c.Abort()
}
