package e2epgbouncer

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// counting counts the requests a client sends through the gateway and
// those that failed: no answer, or a 5xx.
type counting struct {
	next             http.RoundTripper
	requests, errors atomic.Int64
	mu               sync.Mutex
	failures         []string
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	resp, err := c.next.RoundTrip(r)
	if err != nil || resp.StatusCode >= 500 {
		c.errors.Add(1)
		what := fmt.Sprint(err)
		if err == nil {
			what = resp.Status
		}
		c.mu.Lock()
		c.failures = append(c.failures, r.Method+" "+r.URL.Path+": "+what)
		c.mu.Unlock()
	}
	return resp, err
}

// peaks samples SHOW POOLS while the load runs: the most server
// connections each pool held, and the longest wait of a client.
type peaks struct {
	mu      sync.Mutex
	servers map[string]int
	clients map[string]int
	maxWait int
	samples int
}

func (p *peaks) sample(ctx context.Context, db string) error {
	pools, err := pgb.Pools(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.samples++
	for _, pl := range pools {
		if !strings.HasPrefix(pl.Database, db) {
			continue
		}
		key := pl.Database[len(db):] + "/" + pl.User
		p.servers[key] = max(p.servers[key], pl.Servers())
		p.clients[key] = max(p.clients[key], pl.ClientActive+pl.ClientWaiting)
		p.maxWait = max(p.maxWait, pl.MaxWait)
	}
	return nil
}

type ticketMessage struct {
	MessageID int64 `json:"messageID"`
	TicketID  int64 `json:"ticketID"`
}

type ticket struct {
	TicketID int64  `json:"ticketID"`
	Subject  string `json:"subject"`
}

const (
	tenants           = 8 // concurrent workers, a customer each
	topicsPerTenant   = 4
	ticketsPerTenant  = 6
	mails             = 8 // into one subscribed mailbox at once
	pagesPerTenant    = 15
	messagesPerTicket = 2
)

// The main routes through the gateway, every service's database through
// pgbouncer in transaction mode: no request fails, every event reaches
// NATS, the imported mails become tickets, the relays LISTEN on their
// session connections, and each pool ran on at most poolSize server
// connections.
func TestMainRoutesThroughPgBouncer(t *testing.T) {
	ct := &counting{next: stk.HTTPClient().Transport}
	hc := stk.HTTPClient()
	hc.Transport = ct
	client := func(t testing.TB) *e2ekit.Client { return e2ekit.NewClient(t, stk.HTTPSURL, hc, api) }

	db := stk.Database
	pk := &peaks{servers: map[string]int{}, clients: map[string]int{}}
	sampleCtx, stopSampling := context.WithCancel(t.Context())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampleCtx.Err() == nil {
			if err := pk.sample(sampleCtx, db); err != nil && sampleCtx.Err() == nil {
				t.Errorf("SHOW POOLS: %v", err)
				return
			}
			select {
			case <-sampleCtx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	start := time.Now()
	customers := make([]int64, tenants+1)
	t.Run("load", func(t *testing.T) {
		for w := range tenants {
			t.Run(fmt.Sprint("tenant", w), func(t *testing.T) {
				t.Parallel()
				customers[w] = apiWork(t, client(t))
			})
		}
		t.Run("mail", func(t *testing.T) {
			t.Parallel()
			customers[tenants] = mailWork(t, client(t))
		})
	})
	elapsed := time.Since(start)
	stopSampling()
	<-sampled
	if err := pk.sample(t.Context(), db); err != nil {
		t.Fatal(err)
	}

	// Every outbox event reached NATS: the relays (LISTEN on the session
	// alias, or their poll) published what the transactions committed.
	events := 0
	for w := range tenants {
		for typ, want := range map[string]int{contracts.EventTopicCreated: topicsPerTenant, contracts.EventChannelCreated: 1,
			contracts.EventEndUserCreated: 1, contracts.EventTicketCreated: ticketsPerTenant,
			contracts.EventMessageCreated: ticketsPerTenant * messagesPerTicket} {
			var got int
			e2ekit.Eventually(t, 15*time.Second, fmt.Sprintf("%d %s events of tenant %d", want, typ, w), func() bool {
				got = len(e2ekit.Events(t, backends, typ, customers[w], func(map[string]any) bool { return true }))
				return got >= want
			})
			if got != want {
				t.Errorf("tenant %d: %d %s events, want %d", w, got, typ, want)
			}
			events += got
		}
	}

	// Each service relaying an outbox LISTENs on a connection of the
	// session alias (DATABASE_SESSION_URL), not through the transaction
	// pool.
	for _, schema := range []string{"auth", "topics", "mail", "tickets"} {
		var n int
		e2ekit.Eventually(t, 10*time.Second, "the "+schema+" relay's LISTEN", func() bool {
			if err := backends.DB.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
				WHERE datname = $1 AND usename = $2 AND query = $3`, db, "sp_"+schema, `LISTEN "outbox_`+schema+`"`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n > 0
		})
	}

	pools, err := pgb.Pools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var backendsUsed int
	if err := backends.DB.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND usename LIKE 'sp\_%'`, db).Scan(&backendsUsed); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(pk.servers))
	for k := range pk.servers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var report strings.Builder
	fmt.Fprintf(&report, "through pgbouncer %s in transaction mode (default_pool_size %d): %d requests in %s (%.0f/s), %d errors; %d events on NATS\n",
		pgb.Addr, poolSize, ct.requests.Load(), elapsed.Round(time.Millisecond), float64(ct.requests.Load())/elapsed.Seconds(), ct.errors.Load(), events)
	fmt.Fprintf(&report, "SHOW POOLS sampled %d times; per pool (\"\" transaction, \"_session\" session alias): peak server connections / peak client connections (active or waiting):\n", pk.samples)
	for _, k := range keys {
		fmt.Fprintf(&report, "  %-24s %d / %d\n", k, pk.servers[k], pk.clients[k])
	}
	fmt.Fprintf(&report, "longest client wait %ds; PostgreSQL sessions of the services' roles now: %d\n", pk.maxWait, backendsUsed)
	t.Log(report.String())
	fmt.Print(report.String())

	if n := ct.errors.Load(); n > 0 {
		t.Errorf("%d requests failed: %v", n, ct.failures)
	}
	for _, p := range pools {
		if !strings.HasPrefix(p.Database, db) {
			continue
		}
		if p.Database == db && p.Mode != "transaction" || p.Database == db+"_session" && p.Mode != "session" {
			t.Errorf("pool %s/%s in %s mode", p.Database, p.User, p.Mode)
		}
	}
	for k, n := range pk.servers {
		if strings.HasPrefix(k, "/") && n > poolSize {
			t.Errorf("transaction pool %s held %d server connections, more than default_pool_size %d", k, n, poolSize)
		}
	}
	if pk.servers["/sp_tickets"] == 0 || pk.servers["_session/sp_mail"] == 0 {
		t.Errorf("the pools the run must have used are empty: %v", pk.servers)
	}
}

// apiWork is one tenant's share: a customer and an agent (bootstrap,
// logins, accounts), topics, a channel, an end user, tickets opened by
// messages with a reply each, and lists. It returns the customer's id.
func apiWork(t *testing.T, c *e2ekit.Client) int64 {
	tn := e2ekit.NewTenant(t, stk, c, "Pool")
	for i := range topicsPerTenant {
		e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Topics", tn.AdminToken,
			map[string]any{"name": fmt.Sprintf("Topic %d %s", i, randid.Hex(3)), "description": "through pgbouncer"}), http.StatusCreated, nil)
	}
	var ch struct {
		ChannelID int64 `json:"channelID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Channels", tn.AdminToken, map[string]any{"name": "Web " + randid.Hex(3), "kind": "web"}), http.StatusCreated, &ch)
	var u struct {
		EndUserID int64 `json:"endUserID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/EndUsers", tn.AgentToken, map[string]any{"name": "Grace Hopper",
		"email": "grace-" + randid.Hex(4) + "@example.org"}), http.StatusCreated, &u)
	for i := range ticketsPerTenant {
		var m ticketMessage
		e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/TicketMessages", tn.AgentToken, map[string]any{"message": "Help " + randid.Hex(4),
			"senderType": "EndUser", "subject": fmt.Sprintf("Question %d", i), "channelID": ch.ChannelID, "endUserID": u.EndUserID}), http.StatusCreated, &m)
		e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/TicketMessages", tn.AgentToken, map[string]any{"ticketID": m.TicketID,
			"message": "On it.", "senderType": "Agent"}), http.StatusCreated, nil)
		e2ekit.WantStatus(t, c.Do(http.MethodGet, fmt.Sprintf("/api/Tickets/%d", m.TicketID), tn.AgentToken, nil), http.StatusOK, nil)
	}
	for range pagesPerTenant {
		var l e2ekit.List[ticket]
		e2ekit.WantStatus(t, c.Do(http.MethodGet, "/api/Tickets?pageSize=100", tn.AgentToken, nil), http.StatusOK, &l)
		if l.TotalCount != ticketsPerTenant {
			t.Fatalf("%d tickets listed, want %d", l.TotalCount, ticketsPerTenant)
		}
		e2ekit.WantStatus(t, c.Do(http.MethodGet, "/api/Topics?pageSize=100", tn.AgentToken, nil), http.StatusOK, nil)
		e2ekit.WantStatus(t, c.Do(http.MethodGet, "/api/Customers/me", tn.AgentToken, nil), http.StatusOK, nil)
	}
	return tn.CustomerID
}

// mailWork connects a tenant of the fake Graph, subscribes a mailbox,
// delivers mails at once and waits for each to become a ticket (mailingest
// takes the notifications, importreply imports under its session locks,
// tickets makes the tickets). It returns the customer's id.
func mailWork(t *testing.T, c *e2ekit.Client) int64 {
	tn := e2ekit.NewTenant(t, stk, c, "Mail")
	ch, _ := e2ekit.SubscribedFolder(t, c, graph, tn)
	subjects := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, mails)
	for i := range mails {
		subject := fmt.Sprintf("Mail %d %s", i, randid.Hex(3))
		subjects[subject] = true
		wg.Go(func() {
			_, err := graph.Deliver(t.Context(), graphfake.DeliverMail{Mailbox: *ch.EmailAddress, Subject: subject,
				From: graphfake.Address{Name: "Customer", Address: "c-" + randid.Hex(4) + "@customer.example"}, Text: "Hello."})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("deliver: %v", err)
		}
	}
	e2ekit.Eventually(t, 60*time.Second, fmt.Sprintf("%d mails as tickets", mails), func() bool {
		var l e2ekit.List[ticket]
		e2ekit.WantStatus(t, c.Do(http.MethodGet, fmt.Sprintf("/api/Tickets?channelId=%d&pageSize=100", ch.ChannelID), tn.AgentToken, nil), http.StatusOK, &l)
		found := 0
		for _, tk := range l.Items {
			if subjects[tk.Subject] {
				found++
			}
		}
		return found == mails
	})
	return tn.CustomerID
}
