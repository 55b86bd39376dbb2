package e2ecluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/graphfake"
)

// mails is the burst's size.
const mails = 1000

// statuses tallies the gateway's answers to the fake Graph's notifications.
type statuses struct {
	mu     sync.Mutex
	byCode map[int]int
	errs   int // transport errors (none expected: Traefik stays up)
}

func (s *statuses) add(code int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs++
		return
	}
	s.byCode[code]++
}

// faultLog records what the faults did and when, for the closing figures.
type faultLog struct {
	mu    sync.Mutex
	start time.Time
	lines []string
}

func (f *faultLog) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, fmt.Sprintf("%6s ", time.Since(f.start).Round(100*time.Millisecond))+fmt.Sprintf(format, args...))
}

// A burst of 1,000 mails, each notified by the fake Graph (twice, as Graph
// does) from 8 senders at once, while the JetStream meta leader is killed
// with SIGKILL and started again, then the MAIL_INBOUND stream's leader:
// every mail whose notification the gateway acknowledged is a ticket, once,
// with one message; the gateway answered nothing 5xx but mailingest's
// documented 503 (Retry-After, Graph sends again); and the cluster has its
// three servers current again at the end.
func TestLeaderKillsDuringABurst(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	wantReplicas(t, ctx)
	tn := e2ekit.NewTenant(t, stk, client(t), "Cluster")
	ch, folder := e2ekit.SubscribedFolder(t, client(t), graph, tn)
	mailbox, subID := *ch.EmailAddress, *folder.ProviderSubscriptionID

	st := &statuses{byCode: map[int]int{}}
	faults := &faultLog{start: time.Now()}
	var delivered atomic.Int64
	reached := func(n int64) <-chan struct{} {
		c := make(chan struct{})
		go func() {
			defer close(c)
			for delivered.Load() < n && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
			}
		}()
		return c
	}
	// The last 150 mails wait until both faults are over, so that both
	// happen while the burst runs.
	faultsDone := make(chan error, 1)
	ready := &readiness{byService: map[string]map[int]int{}}
	go func() {
		<-reached(150)
		pollCtx, stopPolling := context.WithCancel(ctx)
		polled := make(chan struct{})
		go func() { defer close(polled); ready.poll(pollCtx) }()
		err := runFaults(ctx, faults, reached)
		stopPolling()
		<-polled
		faultsDone <- err
	}()
	var faultErr error
	var faultOnce sync.Once
	waitFaults := func() {
		faultOnce.Do(func() {
			select {
			case faultErr = <-faultsDone:
			case <-ctx.Done():
				faultErr = ctx.Err()
			}
		})
	}

	start := faults.start
	var next atomic.Int64
	var acked sync.Map // subject -> true once its notification was acknowledged
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > mails {
					return
				}
				if i > mails-150 {
					waitFaults()
				}
				subject := fmt.Sprintf("Cluster %04d", i)
				if _, err := graph.AddMail(graphfake.DeliverMail{Mailbox: mailbox, Subject: subject,
					From: graphfake.Address{Address: fmt.Sprintf("cluster-%d@customer.example", i%50)}, Text: fmt.Sprintf("mail %d", i)}); err != nil {
					errs <- err
					return
				}
				if err := notifyUntilAcknowledged(ctx, st, subID); err != nil {
					errs <- fmt.Errorf("%s: %w", subject, err)
					return
				}
				acked.Store(subject, true)
				delivered.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFaults()
	if faultErr != nil {
		t.Fatalf("faults: %v", faultErr)
	}
	deliveredIn := time.Since(start)

	// Every acknowledged mail becomes a ticket.
	count := func() (tickets, messages, distinct int) {
		err := backends.DB.QueryRow(ctx, `SELECT count(DISTINCT t.ticket_id), count(m.message_id), count(DISTINCT m.provider_message_id)
			FROM tickets.tickets t JOIN tickets.ticket_messages m ON m.ticket_id = t.ticket_id WHERE t.channel_id = $1`,
			ch.ChannelID).Scan(&tickets, &messages, &distinct)
		if err != nil {
			t.Fatal(err)
		}
		return tickets, messages, distinct
	}
	for {
		if n, _, _ := count(); n >= mails {
			break
		}
		if ctx.Err() != nil {
			n, _, _ := count()
			t.Fatalf("%d of %d mails imported within the bound", n, mails)
		}
		time.Sleep(200 * time.Millisecond)
	}
	importedIn := time.Since(start)
	// Anything still on its way (a duplicate) would be there by now.
	time.Sleep(2 * time.Second)
	tickets, messages, distinct := count()
	if tickets != mails || messages != mails || distinct != mails {
		t.Fatalf("%d tickets, %d messages, %d distinct mails; want %d each", tickets, messages, distinct, mails)
	}
	rows, err := backends.DB.Query(ctx, `SELECT subject FROM tickets.tickets WHERE channel_id = $1`, ch.ChannelID)
	if err != nil {
		t.Fatal(err)
	}
	imported := map[string]bool{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		imported[s] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	ackedN := 0
	acked.Range(func(k, _ any) bool {
		ackedN++
		if !imported[k.(string)] {
			t.Errorf("acknowledged mail %q is not a ticket", k)
		}
		return true
	})
	if ackedN != mails {
		t.Fatalf("%d of %d notifications acknowledged", ackedN, mails)
	}

	// Nothing 5xx but the documented 503, at Graph's door or anywhere
	// else behind the gateway (the harness's own requests included).
	st.mu.Lock()
	codes := st.byCode
	st.mu.Unlock()
	for code, n := range codes {
		if code/100 == 5 && code != http.StatusServiceUnavailable || code/100 != 2 && code/100 != 5 {
			t.Errorf("%d notifications answered %d", n, code)
		}
	}
	if st.errs > 0 {
		t.Errorf("%d notifications failed in transport", st.errs)
	}
	gateway5xx := accessLog5xx(t)
	for code, n := range gateway5xx {
		if code != http.StatusServiceUnavailable {
			t.Errorf("the gateway answered %d requests with %d", n, code)
		}
	}

	healthyAt := time.Now()
	if err := waitHealthy(ctx, 60*time.Second); err != nil {
		t.Fatalf("the cluster after the faults: %v", err)
	}
	// Readiness told the truth: every service is ready again (its NATS
	// connection on a live server, JetStream answering).
	for _, svc := range stk.Services {
		url := stk.ServiceURLs[svc] + "/readyz"
		e2ekit.Eventually(t, 30*time.Second, svc+" ready after the faults", func() bool { return getStatus(ctx, url) == http.StatusOK })
	}
	t.Logf("/readyz during the faults, by service and status: %v", ready.snapshot())
	requests := 0
	for _, n := range codes {
		requests += n
	}
	t.Logf("faults:\n  %s", strings.Join(faults.lines, "\n  "))
	t.Logf("%d mails: %d notification requests (%v by status), %d answered 503 (%d 503s in the gateway's log); all acknowledged after %s, all imported after %s; cluster healthy %s after that",
		mails, requests, codes, codes[http.StatusServiceUnavailable], gateway5xx[http.StatusServiceUnavailable],
		deliveredIn.Round(time.Millisecond), importedIn.Round(time.Millisecond), time.Since(healthyAt).Round(time.Millisecond))
}

// notifyUntilAcknowledged posts the folder's notification (two items) until
// the gateway acknowledges it, as Graph retries a 503 (after its
// Retry-After; here a quarter of a second, to press the cluster).
func notifyUntilAcknowledged(ctx context.Context, st *statuses, subID string) error {
	for {
		code, err := graph.Notify(ctx, subID, 2)
		st.add(code, err)
		if err == nil && code/100 == 2 {
			return nil
		}
		if err == nil && code/100 == 4 {
			return fmt.Errorf("notification refused: %d", code)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err, fmt.Errorf("last status %d", code))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// runFaults kills the meta leader, starts it again once another leads,
// waits for the cluster's health, then does the same to MAIL_INBOUND's
// leader.
func runFaults(ctx context.Context, log *faultLog, reached func(int64) <-chan struct{}) error {
	inbound := backends.Names.Stream(contracts.StreamMailInbound)
	steps := []struct {
		what   string
		leader func(context.Context) (string, error)
	}{
		{"JetStream meta leader", stk.NATSMetaLeader},
		{inbound + " stream leader", func(ctx context.Context) (string, error) { return stk.NATSStreamLeader(ctx, inbound) }},
	}
	for i, step := range steps {
		if i > 0 {
			// Some mails in between, with the whole cluster back.
			<-reached(500)
		}
		leader, err := step.leader(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", step.what, err)
		}
		if err := stk.KillNATSNode(leader); err != nil {
			return err
		}
		killed := time.Now()
		log.add("SIGKILL %s (%s)", leader, step.what)
		var next string
		for {
			if next, err = step.leader(ctx); err == nil && next != leader {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("no new %s after killing %s: %v", step.what, leader, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		log.add("new %s: %s after %s", step.what, next, time.Since(killed).Round(time.Millisecond))
		if err := stk.StartNATSNode(ctx, leader); err != nil {
			return err
		}
		log.add("%s restarted and healthy, %s after its kill", leader, time.Since(killed).Round(time.Millisecond))
		if err := waitHealthy(ctx, 60*time.Second); err != nil {
			return err
		}
		log.add("cluster healthy, %s after the kill", time.Since(killed).Round(time.Millisecond))
	}
	return nil
}

func waitHealthy(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		err := stk.NATSClusterHealthy(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not healthy within %s: %w", d, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// wantReplicas checks that every stream and bucket the services declared
// keeps three copies.
func wantReplicas(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, base := range []string{contracts.StreamEvents, contracts.StreamMailImport, contracts.StreamMailInbound,
		contracts.ObjectStream(backends.Names.Stream(contracts.BucketAttachments)), contracts.ObjectStream(backends.Names.Stream(contracts.BucketMailAttachments))} {
		name := base
		if !strings.HasPrefix(base, "OBJ_") {
			name = backends.Names.Stream(base)
		}
		s, err := backends.JS.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 3 {
			t.Errorf("stream %s has %d replicas, want 3", name, r)
		}
	}
}

// accessLog5xx counts the gateway's 5xx answers by status.
func accessLog5xx(t *testing.T) map[int]int {
	t.Helper()
	f, err := os.Open(stk.Gateway.AccessLogFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			DownstreamStatus int `json:"DownstreamStatus"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.DownstreamStatus/100 == 5 {
			out[e.DownstreamStatus]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func client(t testing.TB) *e2ekit.Client {
	return e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
}

// readiness tallies the services' /readyz answers while the faults run.
type readiness struct {
	mu        sync.Mutex
	byService map[string]map[int]int
}

func (r *readiness) poll(ctx context.Context) {
	for ctx.Err() == nil {
		for _, svc := range stk.Services {
			code := getStatus(ctx, stk.ServiceURLs[svc]+"/readyz")
			if ctx.Err() != nil {
				return
			}
			r.mu.Lock()
			if r.byService[svc] == nil {
				r.byService[svc] = map[int]int{}
			}
			r.byService[svc][code]++
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (r *readiness) snapshot() map[string]map[int]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]map[int]int{}
	for svc, m := range r.byService {
		out[svc] = maps.Clone(m)
	}
	return out
}

// getStatus is the status of a GET (0 when it fails).
func getStatus(ctx context.Context, url string) int {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
