package e2email

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
)

// backends are the stack's database (as its administrator) and JetStream
// (as the NATS harness user).
var backends *e2ekit.Backends

// exec runs SQL on the mail schema as the administrator (to put a folder
// in a state the API cannot, such as an expiry within the hour).
func exec(t *testing.T, sql string, args ...any) { t.Helper(); backends.Exec(t, sql, args...) }

// imports returns the import requests queued for a folder, oldest first.
func imports(t *testing.T, folderID int64) []contracts.MailImportRequest {
	t.Helper()
	var out []contracts.MailImportRequest
	for _, data := range backends.Messages(t, contracts.StreamMailImport, contracts.MailImportSubject(folderID)) {
		var r contracts.MailImportRequest
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// eventually is e2ekit.Eventually.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	e2ekit.Eventually(t, d, what, cond)
}

// metric reads a counter of a service's /metrics (sum over label sets
// containing every label given, e.g. `reason="forged"`).
func metric(t *testing.T, service, name string, labels ...string) float64 {
	t.Helper()
	return metricAt(t, stk.ServiceURLs[service], name, labels...)
}

// metricAt is metric of the process at base (a replica's URL).
func metricAt(t *testing.T, base, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		rest := line[len(name):]
		if rest != "" && rest[0] != '{' && rest[0] != ' ' {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(rest, l)
		}
		if !ok {
			continue
		}
		var v float64
		if i := strings.LastIndexByte(rest, ' '); i >= 0 {
			if err := json.Unmarshal([]byte(rest[i+1:]), &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}
