package staticproblem

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRedactedPath(t *testing.T) {
	tests := []struct {
		name, target, want string
	}{
		{"no query", "/api/Tickets/7", "/api/Tickets/7"},
		{"feedback token", "/api/TicketMessages/5/feedback?token=s3cr3t&vote=like", "/api/TicketMessages/5/feedback?token=REDACTED&vote=REDACTED"},
		{"validation token", "/api/providerwebhook?validationToken=Validation%3a+Testing", "/api/providerwebhook?validationToken=REDACTED"},
		{"name without value", "/api/Tickets?flag&pageSize=", "/api/Tickets?flag&pageSize=REDACTED"},
		{"escaped path kept", "/api/Topics/a%2Fb", "/api/Topics/a%2Fb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tt.target, nil)
			req.Header.Set("X-Log-Path", "spoofed by the client")
			setLogPath(req, "X-Log-Path")
			if got := req.Header.Get("X-Log-Path"); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	long := "/api/Tickets?" + strings.Repeat("q=secret&", 1000)
	if got := redactedPath(long[:12], long[13:]); len(got) > maxLogPath+3 || strings.Contains(got, "secret") {
		t.Fatalf("long query: %d bytes", len(got))
	}
	req := httptest.NewRequest("GET", "/x?token=1", nil)
	setLogPath(req, "")
	if len(req.Header) != 0 {
		t.Fatalf("no header name, headers %v", req.Header)
	}
}
