package e2erecovery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// outage is one dependency going down and coming back.
type outage struct {
	name string
	stop func() error
	// start brings it back (same data, same address).
	start func(ctx context.Context) error
	// unready are the services whose /readyz must say 503 meanwhile; the
	// others must stay ready.
	unready []string
	// failing are the ops that need the dependency: each must have been
	// refused with 503 during the outage.
	failing []string
}

// PostgreSQL, then Redis, then NATS stop for a few seconds while the load
// runs through the gateway. During each outage every answer is a success
// or a fast 503 problem showing nothing of the internals, the services
// that depend on the server say they are not ready (and only they), and
// the requests that need it are refused; afterwards every service recovers
// by itself and the same requests succeed again. In the end every record
// a 201 announced exists, its event is in JetStream (the outbox relays
// what was committed), and a token logged out before the Redis restart is
// still refused after it.
func TestOutagesUnderLoad(t *testing.T) {
	f := newFixture(t)
	run := randid.Hex(3)
	l := startLoad(t, f.mix(run), 4)
	t.Cleanup(func() {
		// A failed test must leave the servers up for the stack to stop.
		if !pg.Running() {
			_ = pg.Start(context.WithoutCancel(t.Context()))
		}
		if !rdb.Running() {
			_ = rdb.Start(context.WithoutCancel(t.Context()))
		}
	})
	steady(t, l, "steady", 2*time.Second)

	withDB := []string{"auth", "topics", "mailingest", "tickets"}
	revoked := ""
	for _, o := range []outage{
		{name: "postgres", stop: pg.Stop, start: pg.Start, unready: withDB,
			failing: []string{"login", "me", "topic-create", "topic-list", "enduser-create", "ticket-create"}},
		{name: "redis", stop: func() error {
			revoked = loggedOutToken(t)
			return rdb.Stop()
		}, start: rdb.Start, unready: services,
			failing: []string{"login", "me", "topic-create", "topic-list", "enduser-create", "ticket-create", "language"}},
		{name: "nats", stop: stk.StopNATS, start: stk.StartNATS, unready: services,
			failing: []string{"ticket-create"}},
	} {
		if !t.Run(o.name, func(t *testing.T) { runOutage(t, l, o) }) {
			t.FailNow()
		}
		if o.name == "redis" {
			// The revocation list survived the restart (Redis keeps it in
			// its append-only file): a logged-out token stays refused.
			c := e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
			if r := c.Do(http.MethodGet, "/api/Customers/me", revoked, nil); r.Status != http.StatusUnauthorized {
				t.Errorf("a token logged out before the Redis restart: %d %s", r.Status, r.String())
			}
		}
	}
	l.Stop()
	checkAnswers(t, "whole run", l.outcomes())
	checkWritesKept(t, f, l.outcomes())
}

// steady runs the load for d in phase and requires every answer to be a
// success.
func steady(t *testing.T, l *load, phase string, d time.Duration) {
	t.Helper()
	l.setPhase(phase)
	time.Sleep(d)
	l.setPhase(phase + " (done)")
	outs := l.outcomes(phase)
	if len(outs) == 0 {
		t.Fatalf("%s: no request was answered", phase)
	}
	for _, o := range outs {
		if o.err != nil || o.status/100 != 2 {
			t.Errorf("%s: %s answered %d (%v): %s", phase, o.op, o.status, o.err, truncate(o.body))
		}
	}
	t.Logf("%s: %d requests: %s", phase, len(outs), summary(outs))
}

func runOutage(t *testing.T, l *load, o outage) {
	down, back := o.name+" down", o.name+" recovering"
	l.setPhase(down)
	stoppedAt := time.Now()
	if err := o.stop(); err != nil {
		t.Fatalf("stop %s: %v", o.name, err)
	}
	t.Logf("%s stopped in %s", o.name, time.Since(stoppedAt).Round(time.Millisecond))
	waitReadiness(t, o, false)
	// The outage lasts a few seconds more under load.
	time.Sleep(3 * time.Second)
	l.setPhase(o.name + " restarting")
	if err := o.start(t.Context()); err != nil {
		t.Fatalf("start %s again: %v", o.name, err)
	}
	restartedAt := time.Now()
	l.setPhase(back)
	outs := l.outcomes(down)
	checkAnswers(t, down, outs)
	for _, name := range o.failing {
		if !slices.ContainsFunc(outs, func(x outcome) bool { return x.op == name && x.status == http.StatusServiceUnavailable }) {
			t.Errorf("%s: %s was never refused with 503", down, name)
		}
	}
	if p90 := quantile(outs, http.StatusServiceUnavailable, 0.9); p90 > 2*time.Second {
		t.Errorf("%s: 90%% of the 503 answers took up to %s, not failing fast", down, p90)
	}
	t.Logf("%s: %d requests: %s; p90 of 503s %s", down, len(outs), summary(outs),
		quantile(outs, http.StatusServiceUnavailable, 0.9).Round(time.Millisecond))

	// Every service is ready again and every op has succeeded again,
	// without restarting any service.
	pids := stk.PIDs()
	waitReadiness(t, o, true)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok := map[string]bool{}
		for _, x := range l.outcomes(back) {
			if x.status/100 == 2 && x.started.After(restartedAt) {
				ok[x.op] = true
			}
		}
		if len(ok) == len(l.ops) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: within 60 s only %v succeeded again; %s", back, ok, summary(l.outcomes(back)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s: every request succeeds again %s after the restart", back, time.Since(restartedAt).Round(time.Millisecond))
	checkAnswers(t, back, l.outcomes(back))
	steady(t, l, "after "+o.name, 2*time.Second)
	for name, pid := range stk.PIDs() {
		if name != "nats" && pids[name] != pid {
			t.Errorf("%s was restarted (pid %d, then %d)", name, pids[name], pid)
		}
	}
}

// waitReadiness waits until the /readyz of every service answers as the
// outage says: during it (ready false) 503 problems naming the failed
// check, without its error text, from the services that depend on the
// server, and 200 from the others; after it (ready true) 200 from all.
func waitReadiness(t *testing.T, o outage, ready bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var wrong []string
		for _, svc := range services {
			want := http.StatusOK
			if !ready && slices.Contains(o.unready, svc) {
				want = http.StatusServiceUnavailable
			}
			status, header, body, err := get(stk.ServiceURLs[svc] + "/readyz")
			switch {
			case err != nil:
				wrong = append(wrong, fmt.Sprintf("%s: %v", svc, err))
			case status != want:
				wrong = append(wrong, fmt.Sprintf("%s: %d, want %d", svc, status, want))
			case status != http.StatusOK:
				if err := api.ValidateProblem(status, header, body); err != nil {
					t.Fatalf("%s /readyz: %v", svc, err)
				}
				var p e2ekit.Problem
				_ = json.Unmarshal(body, &p)
				if p.Errors[o.name] == "" {
					t.Fatalf("%s /readyz does not name %s: %s", svc, o.name, body)
				}
				// The check names are the dependencies' own ("redis"); what
				// is said about them must not carry the error.
				texts := []string{p.Title, p.Detail}
				for _, v := range p.Errors {
					texts = append(texts, v)
				}
				for _, s := range internals {
					if strings.Contains(strings.ToLower(strings.Join(texts, " ")), s) {
						t.Fatalf("%s /readyz shows %q: %s", svc, s, body)
					}
				}
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("readiness (ready=%v) not reached within 30 s: %s", ready, strings.Join(wrong, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get(url string) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body, err
}

// loggedOutToken logs the demo account in and out: the token is on the
// revocation list in Redis.
func loggedOutToken(t *testing.T) string {
	t.Helper()
	c := e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
	tok := c.Login(stk.Demo.Email, stk.Demo.Password)
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Auth/logout", tok, nil), http.StatusNoContent, nil)
	if r := c.Do(http.MethodGet, "/api/Customers/me", tok, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("a logged-out token: %d", r.Status)
	}
	return tok
}

// checkWritesKept: every record a 2xx create announced exists, and the
// events of the topics and end users are in the EVENTS stream (relayed
// from the outbox, some after the outage that held them up).
func checkWritesKept(t *testing.T, f fixture, outs []outcome) {
	t.Helper()
	ids := map[string][]int64{}
	for _, o := range outs {
		if o.id != 0 {
			ids[o.op] = append(ids[o.op], o.id)
		}
	}
	for _, c := range []struct{ op, table, column string }{
		{"topic-create", "topics.topics", "topic_id"},
		{"enduser-create", "tickets.end_users", "end_user_id"},
		{"ticket-create", "tickets.tickets", "ticket_id"},
	} {
		if len(ids[c.op]) == 0 {
			t.Errorf("no %s succeeded", c.op)
			continue
		}
		var n int
		err := backends.DB.QueryRow(t.Context(), "SELECT count(*) FROM "+c.table+" WHERE "+c.column+" = ANY($1)", ids[c.op]).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(ids[c.op]) {
			t.Errorf("%s: %d of the %d acknowledged records exist", c.op, n, len(ids[c.op]))
		}
		t.Logf("%s: all %d acknowledged records exist", c.op, n)
	}
	for _, c := range []struct{ op, event, field string }{
		{"topic-create", contracts.EventTopicCreated, "topicID"},
		{"enduser-create", contracts.EventEndUserCreated, "endUserID"},
	} {
		var missing []int64
		deadline := time.Now().Add(30 * time.Second)
		for {
			seen := map[int64]bool{}
			for _, data := range eventsOf(t, c.event, f.tn.CustomerID) {
				if id, ok := data[c.field].(float64); ok {
					seen[int64(id)] = true
				}
			}
			missing = missing[:0]
			for _, id := range ids[c.op] {
				if !seen[id] {
					missing = append(missing, id)
				}
			}
			if len(missing) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if len(missing) > 0 {
			t.Errorf("%s: %d of %d events never reached JetStream, e.g. %v", c.event, len(missing), len(ids[c.op]), missing[:min(5, len(missing))])
		} else {
			t.Logf("%s: all %d events are in JetStream", c.event, len(ids[c.op]))
		}
	}
}
