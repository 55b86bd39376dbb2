package httpserver

import (
	"encoding/json"
	"net/http"
)

// problemRender writes JSON without gin overriding our content type.
type problemRender struct{ p Problem }

func (r problemRender) Render(w http.ResponseWriter) error {
	if len(r.p.Extensions) == 0 {
		return json.NewEncoder(w).Encode(r.p)
	}
	return json.NewEncoder(w).Encode(r.p.members())
}

// members is the problem as one JSON object: the standard members and the
// extensions whose names are not standard ones.
func (p Problem) members() map[string]any {
	m := map[string]any{}
	for k, v := range p.Extensions {
		m[k] = v
	}
	std := map[string]any{"type": p.Type, "title": p.Title, "status": p.Status, "detail": p.Detail, "instance": p.Instance,
		"requestId": p.RequestID, "traceId": p.TraceID, "errors": p.Errors}
	for k, v := range std {
		delete(m, k)
		switch v := v.(type) {
		case string:
			if v == "" {
				continue
			}
		case map[string]string:
			if len(v) == 0 {
				continue
			}
		}
		m[k] = v
	}
	return m
}

func (r problemRender) WriteContentType(w http.ResponseWriter) {
	w.Header().Set("Content-Type", ProblemContentType)
}
