package e2email

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
)

// What the tests look at behind the API: the mail schema (as the database
// administrator) and the MAIL_IMPORT stream (as the NATS harness user).
var (
	adminDB *pgxpool.Pool
	js      jetstream.JetStream
	names   contracts.Names
)

func openBackends(ctx context.Context) (func(), error) {
	var err error
	if adminDB, err = pgxpool.New(ctx, stk.DatabaseURL); err != nil {
		return nil, err
	}
	nc, err := nats.Connect(stk.NATSURL, nats.CustomInboxPrefix(contracts.InboxPrefix(contracts.HarnessUser)))
	if err != nil {
		adminDB.Close()
		return nil, err
	}
	if js, err = jetstream.New(nc); err != nil {
		nc.Close()
		adminDB.Close()
		return nil, err
	}
	names = contracts.Names{Prefix: stk.NATSPrefix}
	return func() { nc.Close(); adminDB.Close() }, nil
}

// exec runs SQL on the mail schema as the administrator (to put a folder
// in a state the API cannot, such as an expiry within the hour).
func exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := adminDB.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// imports returns the import requests queued for a folder, oldest first.
func imports(t *testing.T, folderID int64) []contracts.MailImportRequest {
	t.Helper()
	ctx := t.Context()
	st, err := js.Stream(ctx, names.Stream(contracts.StreamMailImport))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	subject := names.Subject(contracts.MailImportSubject(folderID))
	var out []contracts.MailImportRequest
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			t.Fatalf("get import after %d: %v", seq, err)
		}
		var r contracts.MailImportRequest
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
		seq = m.Sequence + 1
	}
}

// eventually polls cond every 50 ms for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metric reads a counter of mailingest's /metrics (sum over label sets
// containing every label given, e.g. `reason="forged"`).
func metric(t *testing.T, service, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(stk.ServiceURLs[service] + "/metrics")
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

// interrupt stops a child process the way the supervisor does.
var interrupt = os.Interrupt

// jetstreamSubject is the GetMsg option that finds the next message on a
// subject.
func jetstreamSubject(subject string) jetstream.GetMsgOpt {
	return jetstream.WithGetMsgSubject(subject)
}
