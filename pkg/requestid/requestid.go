// Package requestid carries the request id through contexts, HTTP headers and
// NATS headers so one id follows a request across services.
package requestid

import (
	"context"

	"supportplatform.dev/pkg/randid"
)

// Header is the HTTP and NATS header that carries the id.
const Header = "X-Request-ID"

type ctxKey struct{}

// With returns a context carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the id in ctx, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// New makes a random 128-bit id.
func New() string { return randid.Hex(16) }

// Valid accepts ids a client may choose: 1-128 visible, header-safe characters.
func Valid(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '-' || r == '_' || r == '.' || r == ':'
		if !ok {
			return false
		}
	}
	return true
}
