package e2erecovery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/randid"
)

// op is one kind of request of the load mix.
type op struct {
	name string
	// req builds the request; seq is unique per call.
	req func(seq int64) (method, path, token string, body any)
	// created reads the id of the record a 2xx answer made (nil: the op
	// writes nothing the test follows).
	created func(body []byte) int64
}

// outcome is what one request got.
type outcome struct {
	op      string
	phase   string
	status  int // 0: no HTTP answer
	err     error
	body    []byte
	header  http.Header
	started time.Time
	took    time.Duration
	id      int64 // the record a 2xx create made
}

// load sends the mix through the gateway from a few goroutines and records
// every answer under the phase the test is in when the request starts.
type load struct {
	t      *testing.T
	client *http.Client
	ops    []op
	phase  atomic.Value
	seq    atomic.Int64

	mu  sync.Mutex
	out []outcome

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// startLoad starts workers goroutines, each going round the mix with a
// short pause between requests; Stop ends them.
func startLoad(t *testing.T, ops []op, workers int) *load {
	l := &load{t: t, client: stk.HTTPClient(), ops: ops}
	l.phase.Store("steady")
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	l.stop = cancel
	for w := range workers {
		l.wg.Go(func() {
			for i := w; ctx.Err() == nil; i++ {
				l.do(ctx, ops[i%len(ops)])
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Millisecond):
				}
			}
		})
	}
	t.Cleanup(l.Stop)
	return l
}

// Stop ends the load and waits for the requests under way.
func (l *load) Stop() {
	l.stop()
	l.wg.Wait()
}

func (l *load) setPhase(p string) { l.phase.Store(p) }

func (l *load) do(ctx context.Context, o op) {
	seq := l.seq.Add(1)
	method, path, token, body := o.req(seq)
	var r io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		r = bytes.NewReader(data)
	}
	// Not the load's own context: a request under way when the test stops
	// the load still gets its answer.
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), method, stk.HTTPSURL+path, r)
	if err != nil {
		l.t.Error(err)
		return
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res := outcome{op: o.name, phase: l.phase.Load().(string), started: time.Now()}
	resp, err := l.client.Do(req)
	if err == nil {
		res.status, res.header = resp.StatusCode, resp.Header
		res.body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	res.took = time.Since(res.started)
	res.err = err
	if err == nil && res.status/100 == 2 && o.created != nil {
		res.id = o.created(res.body)
	}
	if err == nil {
		if verr := validate(req, res); verr != nil {
			res.err = verr
		}
	}
	l.mu.Lock()
	l.out = append(l.out, res)
	l.mu.Unlock()
}

// validate checks an answer against the contract: a success or a 503 as
// documented for the operation, another error as a problem body.
func validate(req *http.Request, res outcome) error {
	if res.status/100 == 2 || res.status == http.StatusServiceUnavailable {
		return api.ValidateResponse(req, res.status, res.header, res.body)
	}
	return api.ValidateProblem(res.status, res.header, res.body)
}

// outcomes returns the recorded answers of the phases given (all when
// none).
func (l *load) outcomes(phases ...string) []outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []outcome
	for _, o := range l.out {
		if len(phases) == 0 || slices.Contains(phases, o.phase) {
			out = append(out, o)
		}
	}
	return out
}

// internals are texts of the platform's insides that no answer may show.
var internals = []string{"dial tcp", "connection refused", "pgx", "pgconn", "sqlstate", "redis", "nats", "jetstream",
	"127.0.0.1", "eof", "broken pipe", "context deadline", "goroutine", "panic"}

// FastLimit bounds every answer during an outage: far under the services'
// REQUEST_TIMEOUT (60 s), so a request that waited for a dead dependency
// until its deadline fails the test. NATS requests sent just before the
// connection drops wait natsbus.RequestTimeout (5 s) for their reply.
const FastLimit = 8 * time.Second

// checkAnswers fails t for every outcome that is not a success or a 503
// problem (no transport error, no 500, no 502/504 of the gateway), that
// took longer than FastLimit, or whose body shows the internals.
func checkAnswers(t *testing.T, what string, outs []outcome) {
	t.Helper()
	bad := 0
	report := func(o outcome, format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf("%s: %s (%s) after %s: %s", what, o.op, o.phase, o.took.Round(time.Millisecond), fmt.Sprintf(format, args...))
		}
	}
	for _, o := range outs {
		switch {
		case o.err != nil && o.status == 0:
			report(o, "no answer: %v", o.err)
			continue
		case o.err != nil:
			report(o, "%d does not match the contract: %v", o.status, o.err)
		case o.status/100 != 2 && o.status != http.StatusServiceUnavailable:
			report(o, "status %d: %s%s", o.status, truncate(o.body), serverLog(o.body))
		}
		if o.took > FastLimit {
			report(o, "status %d took longer than %s", o.status, FastLimit)
		}
		if o.status/100 != 2 {
			low := strings.ToLower(string(o.body))
			for _, s := range internals {
				if strings.Contains(low, s) {
					report(o, "the %d answer shows %q: %s", o.status, s, truncate(o.body))
				}
			}
		}
	}
	if bad > 10 {
		t.Errorf("%s: %d bad answers in all", what, bad)
	}
}

// summary counts outcomes by op and status, and gives the slowest 503.
func summary(outs []outcome) string {
	counts := map[string]map[int]int{}
	var slowest time.Duration
	for _, o := range outs {
		if counts[o.op] == nil {
			counts[o.op] = map[int]int{}
		}
		counts[o.op][o.status]++
		if o.status == http.StatusServiceUnavailable && o.took > slowest {
			slowest = o.took
		}
	}
	var names []string
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s %v; ", n, counts[n])
	}
	fmt.Fprintf(&b, "slowest 503 %s", slowest.Round(time.Millisecond))
	return b.String()
}

// quantile is the q-quantile of the durations of outs with status.
func quantile(outs []outcome, status int, q float64) time.Duration {
	var ds []time.Duration
	for _, o := range outs {
		if o.status == status {
			ds = append(ds, o.took)
		}
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// fixture is the tenant the load works for.
type fixture struct {
	tn        e2ekit.Tenant
	channelID int64
	endUserID int64
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	c := e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
	f := fixture{tn: e2ekit.NewTenant(t, stk, c, "Recovery")}
	var ch struct {
		ChannelID int64 `json:"channelID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Channels", f.tn.AdminToken,
		map[string]any{"name": "Web " + randid.Hex(3), "kind": "web"}), http.StatusCreated, &ch)
	f.channelID = ch.ChannelID
	var u struct {
		EndUserID int64 `json:"endUserID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/EndUsers", f.tn.AgentToken,
		map[string]any{"name": "Load customer", "email": "load-" + randid.Hex(4) + "@example.com"}), http.StatusCreated, &u)
	f.endUserID = u.EndUserID
	return f
}

func idOf(field string) func([]byte) int64 {
	return func(b []byte) int64 {
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return 0
		}
		var id int64
		_ = json.Unmarshal(m[field], &id)
		return id
	}
}

// mix is the load: a login, the caller's account, topics written and
// listed, end users and tickets written (a ticket asks mailingest for its
// channel over NATS), and an offline translation lookup (translation asks
// auth over NATS whether the customer exists).
func (f fixture) mix(run string) []op {
	demo := stk.Demo
	return []op{
		{name: "login", req: func(int64) (string, string, string, any) {
			return http.MethodPost, "/api/Auth/login", "", map[string]string{"email": demo.Email, "password": demo.Password}
		}},
		{name: "me", req: func(int64) (string, string, string, any) {
			return http.MethodGet, "/api/Customers/me", f.tn.AgentToken, nil
		}},
		{name: "topic-create", created: idOf("topicID"), req: func(seq int64) (string, string, string, any) {
			return http.MethodPost, "/api/Topics", f.tn.AdminToken,
				map[string]any{"name": fmt.Sprintf("Load %s %d", run, seq), "description": "written under load"}
		}},
		{name: "topic-list", req: func(int64) (string, string, string, any) {
			return http.MethodGet, "/api/Topics?pageSize=5", f.tn.AgentToken, nil
		}},
		{name: "enduser-create", created: idOf("endUserID"), req: func(seq int64) (string, string, string, any) {
			return http.MethodPost, "/api/EndUsers", f.tn.AgentToken,
				map[string]any{"name": fmt.Sprintf("User %d", seq), "email": fmt.Sprintf("u%s-%d@example.com", run, seq)}
		}},
		{name: "ticket-create", created: idOf("ticketID"), req: func(seq int64) (string, string, string, any) {
			return http.MethodPost, "/api/Tickets", f.tn.AgentToken,
				map[string]any{"subject": fmt.Sprintf("Ticket %d", seq), "channelID": f.channelID, "endUserID": f.endUserID}
		}},
		{name: "language", req: func(int64) (string, string, string, any) {
			return http.MethodGet, "/api/Translations/detect-language-ai?country=FR", f.tn.AgentToken, nil
		}},
	}
}

// eventsOf returns the data of the customer's events of a type in the
// EVENTS stream.
func eventsOf(t *testing.T, typ string, customerID int64) []map[string]any {
	t.Helper()
	return e2ekit.Events(t, backends, typ, customerID, func(map[string]any) bool { return true })
}

// serverLog returns the services' log lines of the problem's request id
// (their error lines say what went wrong), so that an unexpected answer
// can be explained from the test's output alone.
func serverLog(body []byte) string {
	var p struct {
		RequestID string `json:"requestId"`
	}
	if json.Unmarshal(body, &p) != nil || p.RequestID == "" {
		return ""
	}
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(stk.DataDir, "logs", "*.log"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, p.RequestID) {
				fmt.Fprintf(&b, "\n\t[%s] %s", strings.TrimSuffix(filepath.Base(f), ".log"), line)
			}
		}
	}
	return b.String()
}
