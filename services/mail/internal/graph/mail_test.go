package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/services/mail/internal/graph"
)

const mailbox = "agent@contoso.example"

func (f *fixture) addMail(d graphfake.DeliverMail) string {
	f.t.Helper()
	if d.Mailbox == "" {
		d.Mailbox = mailbox
	}
	id, err := f.fake.AddMail(d)
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// round runs a delta round to its deltaLink and returns its changes and the deltaLink.
func round(t *testing.T, c *graph.Client, q graph.DeltaQuery, link string) ([]graph.MessageChange, string, int) {
	t.Helper()
	var all []graph.MessageChange
	for pages := 1; ; pages++ {
		page, err := c.MessagesDelta(t.Context(), tenantA, q, link)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		all = append(all, page.Messages...)
		if page.DeltaLink != "" {
			return all, page.DeltaLink, pages
		}
		link = page.NextLink
	}
}

func TestMessagesDelta(t *testing.T) {
	f := newFixture(t)
	since := f.clock.Now().Add(-24 * time.Hour)
	f.addMail(graphfake.DeliverMail{Subject: "before the look-back", ReceivedDateTime: since.Add(-time.Second)})
	var want []string
	for i := range 5 {
		want = append(want, f.addMail(graphfake.DeliverMail{Subject: "mail " + string(rune('a'+i)),
			ReceivedDateTime: since.Add(time.Duration(i) * time.Hour), IsDraft: i == 4,
			From: graphfake.Address{Name: "Erin", Address: "erin@customer.example"}}))
	}
	q := graph.DeltaQuery{Mailbox: mailbox, FolderID: "inbox", Since: since, PageSize: 2}

	got, deltaLink, pages := round(t, f.client, q, "")
	if pages != 3 || len(got) != 5 {
		t.Fatalf("%d pages, %d messages; want 3 pages of 5", pages, len(got))
	}
	for i, m := range got {
		if m.ID != want[i] || m.Removed || m.Subject != "mail "+string(rune('a'+i)) || m.From.Address != "erin@customer.example" ||
			m.From.Name != "Erin" || !m.ReceivedDateTime.Equal(since.Add(time.Duration(i)*time.Hour)) || m.IsDraft != (i == 4) {
			t.Errorf("message %d: %+v", i, m)
		}
	}
	first := f.requests()[0]
	query, _ := url.ParseQuery(first.query)
	if first.path != "/v1.0/users/"+mailbox+"/mailFolders/inbox/messages/delta" ||
		query.Get("$select") != "id,receivedDateTime,from,subject,isDraft" ||
		query.Get("$filter") != "receivedDateTime ge "+since.UTC().Format(time.RFC3339) ||
		!strings.Contains(first.prefer, `IdType="ImmutableId"`) || !strings.Contains(first.prefer, "odata.maxpagesize=2") {
		t.Errorf("first request %s ?%s Prefer %q", first.path, first.query, first.prefer)
	}
	if strings.Contains(first.query, "+") {
		t.Errorf("spaces in the query as '+': %s", first.query)
	}

	// The next round brings what arrived since, and removals.
	newer := f.addMail(graphfake.DeliverMail{Subject: "newer"})
	f.fake.RemoveMail(mailbox, want[1])
	got, deltaLink, _ = round(t, f.client, q, deltaLink)
	if len(got) != 2 || got[0].ID != newer || got[0].Subject != "newer" || got[1].ID != want[1] || !got[1].Removed {
		t.Errorf("second round %+v", got)
	}
	if got, _, _ := round(t, f.client, q, deltaLink); len(got) != 0 {
		t.Errorf("third round %+v", got)
	}
	if st := f.fake.MailboxStats(mailbox); st.WithoutImmutableID != 0 {
		t.Errorf("%d calls without IdType", st.WithoutImmutableID)
	}
}

func TestMessagesDeltaSyncStateNotFound(t *testing.T) {
	f := newFixture(t)
	for range 3 {
		f.addMail(graphfake.DeliverMail{})
	}
	q := graph.DeltaQuery{Mailbox: mailbox, FolderID: "inbox", PageSize: 1}
	page, err := f.client.MessagesDelta(t.Context(), tenantA, q, "")
	if err != nil || page.NextLink == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	_, deltaLink, _ := round(t, f.client, q, "")
	f.fake.ExpireDeltaTokens(mailbox)
	for name, link := range map[string]string{"nextLink": page.NextLink, "deltaLink": deltaLink} {
		_, err := f.client.MessagesDelta(t.Context(), tenantA, q, link)
		var ge *graph.Error
		if !errors.Is(err, graph.ErrSyncStateNotFound) || !errors.As(err, &ge) || ge.Status != http.StatusGone {
			t.Errorf("%s after expiry: %v", name, err)
		}
	}
	if got, _, _ := round(t, f.client, q, ""); len(got) != 3 {
		t.Errorf("resync: %d messages", len(got))
	}

	// Graph may also say so with a code rather than 410.
	for _, code := range []string{"syncStateNotFound", "resyncRequired"} {
		c := stubGraph(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":"`+code+`","message":"resync"}}`)
		})
		if _, err := c.MessagesDelta(t.Context(), tenantA, q, ""); !errors.Is(err, graph.ErrSyncStateNotFound) {
			t.Errorf("code %s: %v", code, err)
		}
	}
	c := stubGraph(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadRequest) })
	if _, err := c.MessagesDelta(t.Context(), tenantA, q, ""); err == nil || errors.Is(err, graph.ErrSyncStateNotFound) {
		t.Errorf("plain 400: %v", err)
	}
}

func TestMessagesDeltaRefusesForeignLinks(t *testing.T) {
	var foreignHits atomic.Int32
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		foreignHits.Add(1)
		_, _ = io.WriteString(w, `{"value":[],"@odata.deltaLink":"x"}`)
	}))
	t.Cleanup(foreign.Close)
	q := graph.DeltaQuery{Mailbox: mailbox, FolderID: "inbox"}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		link    string
		wantErr string
	}{
		{name: "link to another host", link: foreign.URL + "/v1.0/users/x/mailFolders/inbox/messages/delta?$deltatoken=1", wantErr: "not followed"},
		{name: "reply with a foreign nextLink", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"value":[],"@odata.nextLink":"`+foreign.URL+`/v1.0/x"}`)
		}, wantErr: "not followed"},
		{name: "page without links", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"value":[]}`)
		}, wantErr: "malformed"},
		{name: "message without id", handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"value":[{"subject":"x"}],"@odata.deltaLink":"http://`+r.Host+`/d"}`)
		}, wantErr: "without id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.handler
			if h == nil {
				h = func(w http.ResponseWriter, _ *http.Request) { t.Error("the stub was called") }
			}
			_, err := stubGraph(t, h).MessagesDelta(t.Context(), tenantA, q, tt.link)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
	if n := foreignHits.Load(); n != 0 {
		t.Errorf("the foreign host got %d requests", n)
	}
}

func TestMailCallsHonourFractionalRetryAfter(t *testing.T) {
	f := newFixture(t)
	id := f.addMail(graphfake.DeliverMail{Subject: "s"})
	f.fake.Throttle(2, "0.15")
	start := time.Now()
	m, err := f.client.Message(t.Context(), tenantA, mailbox, id)
	if err != nil || m.ID != id {
		t.Fatalf("Message: %+v, %v", m, err)
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 2 throttled + 1", len(reqs))
	}
	for i := 1; i < 3; i++ {
		if gap := reqs[i].at.Sub(reqs[i-1].at); gap < 150*time.Millisecond {
			t.Errorf("retry %d came %v after the 429, before Retry-After 0.15", i, gap)
		}
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v", el)
	}
}

func TestMailRetrySchedule(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(f *fixture)
		retries    int
		wantCalls  int
		wantStatus int // 0: success
		checkWaits func(t *testing.T, waits []time.Duration)
	}{
		{name: "Graph's fractional Retry-After", setup: func(f *fixture) { f.fake.Throttle(2, "2.128") }, wantCalls: 3,
			checkWaits: func(t *testing.T, waits []time.Duration) {
				if len(waits) != 2 || waits[0] != 2128*time.Millisecond || waits[1] != 2128*time.Millisecond {
					t.Errorf("waits %v", waits)
				}
			}},
		{name: "exponential backoff without Retry-After", setup: func(f *fixture) { f.fake.Throttle(3, "") }, wantCalls: 4,
			checkWaits: func(t *testing.T, waits []time.Duration) {
				if len(waits) != 3 {
					t.Fatalf("waits %v", waits)
				}
				for i, w := range waits {
					base := time.Second << i
					if w < base/2 || w > base {
						t.Errorf("wait %d = %v, want within [%v, %v]", i, w, base/2, base)
					}
				}
			}},
		{name: "retries used up", setup: func(f *fixture) { f.fake.Throttle(10, "0") }, retries: 2, wantCalls: 3, wantStatus: 429},
		{name: "503 without Retry-After is not retried", setup: func(f *fixture) { f.fake.FailNext(1, 503) }, wantCalls: 1, wantStatus: 503},
		{name: "404 is an answer", setup: func(f *fixture) { f.fake.FailNext(1, 404) }, wantCalls: 1, wantStatus: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var mu sync.Mutex
			var waits []time.Duration
			c := f.newClient(clientSecret, func(cfg *graph.Config) {
				cfg.MailRetries = tt.retries
				cfg.Sleep = func(_ context.Context, d time.Duration) error {
					mu.Lock()
					defer mu.Unlock()
					waits = append(waits, d)
					return nil
				}
			})
			id := f.addMail(graphfake.DeliverMail{})
			tt.setup(f)
			_, err := c.Attachments(t.Context(), tenantA, mailbox, id)
			var ge *graph.Error
			switch {
			case tt.wantStatus == 0 && err != nil:
				t.Fatalf("err %v", err)
			case tt.wantStatus != 0 && (!errors.As(err, &ge) || ge.Status != tt.wantStatus):
				t.Fatalf("err %v, want status %d", err, tt.wantStatus)
			}
			if n := len(f.requests()); n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
			if tt.checkWaits != nil {
				tt.checkWaits(t, waits)
			}
		})
	}
}

func TestMailRetryAfter503AndDeadline(t *testing.T) {
	var calls atomic.Int32
	c := stubGraph(t, func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0.01")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{"value":[]}`)
	})
	if _, err := c.Attachments(t.Context(), tenantA, mailbox, "m"); err != nil || calls.Load() != 2 {
		t.Errorf("503 with Retry-After: %v after %d calls", err, calls.Load())
	}

	// A Retry-After beyond the caller's deadline fails at once instead of sleeping into it.
	f := newFixture(t)
	f.fake.Throttle(1, "30")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := f.client.Message(ctx, tenantA, mailbox, "x")
	if !graph.IsThrottled(err) || time.Since(start) > time.Second {
		t.Errorf("err %v after %v", err, time.Since(start))
	}
}

func TestMailRefreshesTheTokenOnceOn401(t *testing.T) {
	f := newFixture(t)
	id := f.addMail(graphfake.DeliverMail{})
	if _, err := f.client.Attachments(t.Context(), tenantA, mailbox, id); err != nil {
		t.Fatal(err)
	}
	f.fake.RevokeTokens(tenantA)
	if _, err := f.client.Attachments(t.Context(), tenantA, mailbox, id); err != nil {
		t.Fatalf("after revocation: %v", err)
	}
	if n := f.fake.TokenRequests(tenantA); n != 2 {
		t.Errorf("%d token requests, want 2", n)
	}

	before := len(f.requests())
	f.fake.FailNext(2, http.StatusUnauthorized)
	_, err := f.client.Attachments(t.Context(), tenantA, mailbox, id)
	var ge *graph.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusUnauthorized {
		t.Fatalf("two 401s: %v", err)
	}
	if n := len(f.requests()) - before; n != 2 {
		t.Errorf("%d attempts, want 2 (one refresh)", n)
	}
	if n := f.fake.TokenRequests(tenantA); n != 3 {
		t.Errorf("%d token requests, want 3", n)
	}
}

func TestMailboxConcurrencyLimit(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		want  int
	}{
		{name: "Graph's four", want: 4},
		{name: "configured two", limit: 2, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			c := f.newClient(clientSecret, func(cfg *graph.Config) { cfg.MailboxConcurrency = tt.limit })
			id := f.addMail(graphfake.DeliverMail{})
			other := f.addMail(graphfake.DeliverMail{Mailbox: "other@contoso.example"})
			f.fake.SetMailLatency(40 * time.Millisecond)
			var wg sync.WaitGroup
			for i := range 12 {
				// The limit is per mailbox, whatever the address's case.
				mb := mailbox
				if i%2 == 1 {
					mb = strings.ToUpper(mailbox)
				}
				wg.Go(func() {
					if _, err := c.Message(t.Context(), tenantA, mb, id); err != nil {
						t.Error(err)
					}
				})
				wg.Go(func() {
					if _, err := c.Message(t.Context(), tenantA, "other@contoso.example", other); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			a, b := f.fake.MailboxStats(mailbox), f.fake.MailboxStats("other@contoso.example")
			if a.Peak != tt.want || b.Peak != tt.want || a.MessageCalls != 12 {
				t.Errorf("peaks %d and %d (calls %d), want %d each", a.Peak, b.Peak, a.MessageCalls, tt.want)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	f := newFixture(t)
	received := f.clock.Now().Add(-time.Hour)
	id := f.addMail(graphfake.DeliverMail{
		Subject: "Printer on fire", ReceivedDateTime: received,
		From:    graphfake.Address{Name: "Erin", Address: "erin@customer.example"},
		Sender:  graphfake.Address{Name: "Assistant", Address: "pa@customer.example"},
		To:      []graphfake.Address{{Name: "Support", Address: mailbox}},
		Cc:      []graphfake.Address{{Address: "boss@customer.example"}},
		ReplyTo: []graphfake.Address{{Address: "tickets@customer.example"}},
		HTML:    "<p>It is <b>burning</b>.</p><p>Help!</p>", InternetMessageID: "<m1@customer.example>",
		ConversationID: "AAQkconv", InReplyTo: "<m0@contoso.example>",
		References:  []string{"<r1@x.example><r2@x.example>", "<m0@contoso.example>"},
		Headers:     map[string]string{"x-mailer": "Outlook"},
		Attachments: []graphfake.MailAttachment{{Name: "a.txt", Content: []byte("a")}},
	})
	m, err := f.client.Message(t.Context(), tenantA, mailbox, id)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != id || !m.ReceivedDateTime.Equal(received) || m.Subject != "Printer on fire" ||
		m.From != (graph.Address{Name: "Erin", Address: "erin@customer.example"}) || m.Sender.Address != "pa@customer.example" ||
		len(m.To) != 1 || m.To[0].Address != mailbox || len(m.Cc) != 1 || len(m.ReplyTo) != 1 || m.ReplyTo[0].Address != "tickets@customer.example" ||
		m.InternetMessageID != "<m1@customer.example>" || m.ConversationID != "AAQkconv" || !m.HasAttachments {
		t.Errorf("message %+v", m)
	}
	if m.InReplyTo != "<m0@contoso.example>" || strings.Join(m.References, " ") != "<r1@x.example> <r2@x.example> <m0@contoso.example>" {
		t.Errorf("threading: In-Reply-To %q References %q", m.InReplyTo, m.References)
	}
	if m.Headers["X-Mailer"] != "Outlook" || m.Headers["Message-Id"] != "<m1@customer.example>" {
		t.Errorf("headers %v", m.Headers)
	}
	if m.BodyHTML != "<p>It is <b>burning</b>.</p><p>Help!</p>" || m.BodyText != "It is burning.\n\nHelp!" {
		t.Errorf("bodies %q / %q", m.BodyHTML, m.BodyText)
	}
	reqs := f.requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].prefer, `outlook.body-content-type="text"`) ||
		!strings.Contains(reqs[0].query, "internetMessageHeaders") || strings.Contains(reqs[0].prefer, "outlook.body-content-type") {
		t.Errorf("requests %+v", reqs)
	}

	// A text mail needs one request and has no HTML.
	plain := f.addMail(graphfake.DeliverMail{Text: "just text"})
	m, err = f.client.Message(t.Context(), tenantA, mailbox, plain)
	if err != nil || m.BodyText != "just text" || m.BodyHTML != "" || m.InReplyTo != "" || m.References != nil {
		t.Errorf("plain mail %+v, %v", m, err)
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if _, err := f.client.Message(t.Context(), tenantA, mailbox, strings.ToLower(plain)); !graph.IsNotFound(err) {
		t.Errorf("ids are case-sensitive: %v", err)
	}
}

func TestAttachments(t *testing.T) {
	f := newFixture(t, func(o *graphfake.Options) { o.AttachmentPageSize = 2 })
	big := bytes.Repeat([]byte("\x00\xffPDF-1.7\r\n"), 300_000) // 3 MB: larger than any JSON reply cap
	id := f.addMail(graphfake.DeliverMail{Attachments: []graphfake.MailAttachment{
		{Name: "scan.pdf", ContentType: "application/pdf", Content: big},
		{Name: "logo.png", ContentType: "image/png", Content: []byte{0x89, 'P', 'N', 'G'}, IsInline: true, ContentID: "logo@contoso"},
		{Kind: graphfake.AttachmentItem, Name: "forwarded mail", Size: 1234},
		{Kind: graphfake.AttachmentReference, Name: "OneDrive link"},
		{Name: "empty.txt", ContentType: "text/plain"},
	}})
	atts, err := f.client.Attachments(t.Context(), tenantA, mailbox, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []graph.Attachment{
		{Name: "scan.pdf", ContentType: "application/pdf", Kind: graph.AttachmentFile, Size: int64(len(big))},
		{Name: "logo.png", ContentType: "image/png", Kind: graph.AttachmentFile, Size: 4, IsInline: true, ContentID: "logo@contoso"},
		{Name: "forwarded mail", Kind: graph.AttachmentItem, Size: 1234},
		{Name: "OneDrive link", Kind: graph.AttachmentReference},
		{Name: "empty.txt", ContentType: "text/plain", Kind: graph.AttachmentFile},
	}
	if len(atts) != len(want) {
		t.Fatalf("attachments %+v", atts)
	}
	for i := range want {
		want[i].ID = atts[i].ID
		if atts[i] != want[i] || atts[i].ID == "" {
			t.Errorf("attachment %d = %+v, want %+v", i, atts[i], want[i])
		}
	}
	if pages := f.fake.Calls(http.MethodGet); pages != 3 {
		t.Errorf("%d pages, want 3", pages)
	}
	for i, wantBytes := range [][]byte{big, {0x89, 'P', 'N', 'G'}, {}} {
		idx := []int{0, 1, 4}[i]
		rc, err := f.client.AttachmentContent(t.Context(), tenantA, mailbox, id, atts[idx].ID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, wantBytes) {
			t.Errorf("attachment %d: %d bytes (%v), want %d", idx, len(got), err, len(wantBytes))
		}
	}
	if _, err := f.client.AttachmentContent(t.Context(), tenantA, mailbox, id, "nope"); !graph.IsNotFound(err) {
		t.Errorf("unknown attachment: %v", err)
	}
}

// A download holds its mailbox slot until the reader is closed.
func TestAttachmentContentHoldsItsSlotUntilClosed(t *testing.T) {
	f := newFixture(t)
	c := f.newClient(clientSecret, func(cfg *graph.Config) { cfg.MailboxConcurrency = 1 })
	id := f.addMail(graphfake.DeliverMail{Attachments: []graphfake.MailAttachment{{Name: "a", Content: []byte("abc")}}})
	atts, err := c.Attachments(t.Context(), tenantA, mailbox, id)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.AttachmentContent(t.Context(), tenantA, mailbox, id, atts[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Message(ctx, tenantA, mailbox, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call while the download is open: %v, want it to wait", err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	_ = rc.Close() // twice is harmless
	if _, err := c.Message(t.Context(), tenantA, mailbox, id); err != nil {
		t.Errorf("after Close: %v", err)
	}
}

func TestReplyAndSendMail(t *testing.T) {
	f := newFixture(t)
	id := f.addMail(graphfake.DeliverMail{Subject: "Printer on fire", From: graphfake.Address{Address: "erin@customer.example"}})
	headers := map[string]string{"X-Support-Reply": "rp-1", "X-Ticket": "123"}
	if err := f.client.Reply(t.Context(), tenantA, mailbox, id, graph.OutgoingMail{Subject: "RE: Printer on fire [#123]",
		Text: "We are on it.\nAgent", Headers: headers}); err != nil {
		t.Fatal(err)
	}
	if err := f.client.SendMail(t.Context(), tenantA, mailbox, graph.OutgoingMail{Subject: "[#124] Your request", Text: "Hello",
		To: []graph.Address{{Name: "Dan", Address: "dan@customer.example"}}, Headers: headers}); err != nil {
		t.Fatal(err)
	}
	sent := f.fake.Sent()
	if len(sent) != 2 {
		t.Fatalf("sent %+v", sent)
	}
	if r := sent[0]; r.Kind != graphfake.SentReply || r.InReplyTo != id || r.Subject != "RE: Printer on fire [#123]" ||
		r.Text != "We are on it.\nAgent" || r.To[0].Address != "erin@customer.example" || len(r.Headers) != 2 || r.Headers["X-Ticket"] != "123" {
		t.Errorf("reply %+v", r)
	}
	if s := sent[1]; s.Kind != graphfake.SentSendMail || s.Subject != "[#124] Your request" || s.Text != "Hello" || s.ContentType != "text" ||
		len(s.To) != 1 || s.To[0] != (graphfake.Address{Name: "Dan", Address: "dan@customer.example"}) || s.Headers["X-Support-Reply"] != "rp-1" {
		t.Errorf("sendMail %+v", s)
	}

	// The wire shapes Graph documents: a reply's text is its comment, never also a body.
	reqs := f.requests()
	var reply map[string]any
	if err := json.Unmarshal(reqs[0].body, &reply); err != nil {
		t.Fatal(err)
	}
	msg, _ := reply["message"].(map[string]any)
	if reqs[0].path != "/v1.0/users/"+mailbox+"/messages/"+id+"/reply" || reply["comment"] != "We are on it.\nAgent" || msg == nil || msg["body"] != nil ||
		len(msg["internetMessageHeaders"].([]any)) != 2 {
		t.Errorf("reply request %s %s", reqs[0].path, reqs[0].body)
	}
	var send map[string]any
	if err := json.Unmarshal(reqs[1].body, &send); err != nil {
		t.Fatal(err)
	}
	if reqs[1].path != "/v1.0/users/"+mailbox+"/sendMail" || send["saveToSentItems"] != true ||
		send["message"].(map[string]any)["body"].(map[string]any)["contentType"] != "Text" {
		t.Errorf("sendMail request %s %s", reqs[1].path, reqs[1].body)
	}

	tests := []struct {
		name string
		call func() error
		want func(error) bool
	}{
		{name: "reply to an unknown message", call: func() error {
			return f.client.Reply(t.Context(), tenantA, mailbox, "AAkAunknown", graph.OutgoingMail{Text: "x"})
		}, want: graph.IsNotFound},
		{name: "a header Graph refuses", call: func() error {
			return f.client.Reply(t.Context(), tenantA, mailbox, id, graph.OutgoingMail{Text: "x", Headers: map[string]string{"Reply-To": "a@b"}})
		}, want: func(err error) bool { return errors.Is(err, graph.ErrInvalid) }},
		{name: "sendMail without recipient", call: func() error {
			return f.client.SendMail(t.Context(), tenantA, mailbox, graph.OutgoingMail{Text: "x"})
		}, want: func(err error) bool { return errors.Is(err, graph.ErrInvalid) }},
		{name: "reply without message id", call: func() error {
			return f.client.Reply(t.Context(), tenantA, mailbox, "", graph.OutgoingMail{Text: "x"})
		}, want: func(err error) bool { return errors.Is(err, graph.ErrInvalid) }},
		{name: "no mailbox", call: func() error {
			return f.client.Reply(t.Context(), tenantA, "", id, graph.OutgoingMail{Text: "x"})
		}, want: func(err error) bool { return errors.Is(err, graph.ErrInvalid) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.fake.Sent())
			if err := tt.call(); !tt.want(err) {
				t.Errorf("err %v", err)
			}
			if len(f.fake.Sent()) != before {
				t.Error("something was sent")
			}
		})
	}
}
