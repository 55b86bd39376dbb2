package replier_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
	"supportplatform.dev/services/mail/internal/replier"
	"supportplatform.dev/services/mail/internal/seed"
)

// sent is one call the fake sender received.
type sent struct {
	Method, Tenant, Mailbox, MessageID string
	Mail                               replier.OutgoingMail
}

// fakeSender records calls and answers each with the next scripted error
// (nil when the script is used up).
type fakeSender struct {
	mu     sync.Mutex
	calls  []sent
	script []error
	// slow is how long each call takes.
	slow time.Duration
}

func (f *fakeSender) next(c sent) error {
	f.mu.Lock()
	slow := f.slow
	f.mu.Unlock()
	time.Sleep(slow)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	if len(f.script) == 0 {
		return nil
	}
	err := f.script[0]
	f.script = f.script[1:]
	return err
}

func (f *fakeSender) Reply(_ context.Context, tenant, mailbox, messageID string, m replier.OutgoingMail) error {
	return f.next(sent{Method: replier.MethodReply, Tenant: tenant, Mailbox: mailbox, MessageID: messageID, Mail: m})
}

func (f *fakeSender) SendMail(_ context.Context, tenant, mailbox string, m replier.OutgoingMail) error {
	return f.next(sent{Method: replier.MethodSendMail, Tenant: tenant, Mailbox: mailbox, Mail: m})
}

func (f *fakeSender) sent() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.calls...)
}

var start = time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)

const customer = 11

type env struct {
	store *postgres.Store
	pool  *pgxpool.Pool
	clock *clocktest.Clock
	// channels by name: mail (microsoft365), web, noprovider, deleted.
	channels map[string]mail.Channel
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	clock := clocktest.New(start)
	e := &env{store: postgres.New(pool, clock.Now), pool: pool, clock: clock, channels: map[string]mail.Channel{}}
	ctx := context.Background()
	seed.ConnectTenant(t, pool, customer, "contoso.onmicrosoft.com")
	for name, in := range map[string]mail.ChannelInput{
		"mail": {Name: "Support", Kind: mail.KindEmail, EmailAddress: "support@contoso.com", Provider: mail.ProviderMicrosoft365,
			ProviderTenantID: "contoso.onmicrosoft.com"},
		"web":        {Name: "Web", Kind: mail.KindWeb},
		"noprovider": {Name: "Plain", Kind: mail.KindEmail, EmailAddress: "plain@contoso.com", Provider: mail.ProviderNone},
		"deleted": {Name: "Old", Kind: mail.KindEmail, EmailAddress: "old@contoso.com", Provider: mail.ProviderMicrosoft365,
			ProviderTenantID: "contoso.onmicrosoft.com"},
	} {
		in, err := in.Normalize(true)
		if err != nil {
			t.Fatalf("channel %s: %v", name, err)
		}
		c, err := e.store.CreateChannel(ctx, customer, in)
		if err != nil {
			t.Fatalf("channel %s: %v", name, err)
		}
		e.channels[name] = c
	}
	if _, err := e.store.DeleteChannel(ctx, customer, e.channels["deleted"].ID); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) handler(s replier.Sender) *replier.Handler {
	return replier.NewHandler(e.store, s, replier.HandlerOptions{SendTimeout: 10 * time.Second, Now: e.clock.Now})
}

// event is a reply of ticket 7 in the named channel.
func (e *env) event(channel string, messageID int64, edit func(*contracts.ReplySent)) contracts.Event[contracts.ReplySent] {
	d := contracts.ReplySent{MessageID: messageID, InReplyToID: messageID - 1, TicketID: 7, ChannelID: e.channels[channel].ID,
		EndUserID: 3, Text: "Hello,\nplease restart the router.", Subject: "Internet down", TicketRef: "7-K7QX9M2PAB",
		To: contracts.MailAddress{Name: "Erika Muster", Address: "erika@example.org"}}
	if channel == "missing" {
		d.ChannelID = 99999
	}
	if edit != nil {
		edit(&d)
	}
	return contracts.Event[contracts.ReplySent]{ID: "ev-" + channel, Type: contracts.EventReplySent, CustomerID: customer,
		OccurredAt: start, Data: d}
}

// events are the reply events in the mail outbox.
func (e *env) events(t *testing.T) []contracts.Event[contracts.ReplyDelivery] {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT subject, data FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []contracts.Event[contracts.ReplyDelivery]
	for rows.Next() {
		var subject string
		var data []byte
		if err := rows.Scan(&subject, &data); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(subject, "events.message.reply.") {
			continue
		}
		var ev contracts.Event[contracts.ReplyDelivery]
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		if contracts.EventSubject(ev.Type) != subject {
			t.Fatalf("event %s on %s", ev.Type, subject)
		}
		out = append(out, ev)
	}
	return out
}

func (e *env) record(t *testing.T, messageID int64) replier.Record {
	t.Helper()
	r, err := e.store.SentReply(context.Background(), customer, messageID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func handle(t *testing.T, h *replier.Handler, ev contracts.Event[contracts.ReplySent], n int, last bool) replier.Result {
	t.Helper()
	res, err := h.Handle(context.Background(), ev, replier.Delivery{Number: n, Last: last})
	if err != nil {
		t.Fatalf("handle: %v", err)
	}
	return res
}

// sendErr is a send's failure as graph.ReplySender classes it.
func sendErr(class error, text string) *replier.SendError {
	return &replier.SendError{Class: class, Err: errors.New(text)}
}

func TestSendChoiceAndMail(t *testing.T) {
	e := newEnv(t)
	ch := e.channels["mail"]
	tests := []struct {
		name       string
		edit       func(*contracts.ReplySent)
		script     []error
		wantCalls  []string // methods in order
		wantMethod string
		wantSubj   string
	}{
		{name: "reply to the end user's mail", edit: func(d *contracts.ReplySent) { d.ReplyToProviderID = "AAMk-1" },
			wantCalls: []string{replier.MethodReply}, wantMethod: replier.MethodReply, wantSubj: "Re: Internet down [#7-K7QX9M2PAB]"},
		{name: "a new mail without a mail to answer", wantCalls: []string{replier.MethodSendMail}, wantMethod: replier.MethodSendMail,
			wantSubj: "Re: Internet down [#7-K7QX9M2PAB]"},
		{name: "the answered mail is gone: a new mail", edit: func(d *contracts.ReplySent) { d.ReplyToProviderID = "AAMk-gone" },
			script: []error{sendErr(replier.ErrNotFound, "status 404 ErrorItemNotFound")}, wantCalls: []string{replier.MethodReply, replier.MethodSendMail},
			wantMethod: replier.MethodSendMail, wantSubj: "Re: Internet down [#7-K7QX9M2PAB]"},
		{name: "subject with Re: and the reference already", edit: func(d *contracts.ReplySent) { d.Subject = "RE: Internet down [#7-K7QX9M2PAB]" },
			wantCalls: []string{replier.MethodSendMail}, wantMethod: replier.MethodSendMail, wantSubj: "RE: Internet down [#7-K7QX9M2PAB]"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &fakeSender{script: tc.script}
			id := int64(100 + i)
			ev := e.event("mail", id, tc.edit)
			res := handle(t, e.handler(s), ev, 1, false)
			if res.Outcome != replier.OutcomeSent || res.RetryIn != 0 {
				t.Fatalf("result %+v", res)
			}
			calls := s.sent()
			if len(calls) != len(tc.wantCalls) {
				t.Fatalf("calls %+v", calls)
			}
			for j, c := range calls {
				if c.Method != tc.wantCalls[j] || c.Tenant != ch.ProviderTenantID || c.Mailbox != ch.EmailAddress {
					t.Fatalf("call %d: %+v", j, c)
				}
				m := c.Mail
				if m.Text != ev.Data.Text || m.Subject != tc.wantSubj ||
					m.Headers[mail.HeaderReply] != "11."+itoa(id) || m.Headers[replier.HeaderTicket] != "7" || len(m.Headers) != 2 {
					t.Fatalf("call %d mail: %+v", j, m)
				}
				switch c.Method {
				case replier.MethodReply:
					if c.MessageID != ev.Data.ReplyToProviderID || len(m.To) != 0 {
						t.Fatalf("reply: %+v", c)
					}
				case replier.MethodSendMail:
					if len(m.To) != 1 || m.To[0] != (replier.Address{Name: "Erika Muster", Address: "erika@example.org"}) {
						t.Fatalf("sendMail to %+v", m.To)
					}
				}
			}
			rec := e.record(t, id)
			if rec.Status != replier.StatusSent || rec.Attempts != 1 || rec.Method != tc.wantMethod || rec.SentAt == nil {
				t.Fatalf("record %+v", rec)
			}
			// A redelivery after it was sent sends nothing.
			if res := handle(t, e.handler(s), ev, 2, false); res.Outcome != replier.OutcomeDuplicate || res.RetryIn != 0 {
				t.Fatalf("redelivery: %+v", res)
			}
			if n := len(s.sent()); n != len(tc.wantCalls) {
				t.Fatalf("%d calls after the redelivery", n)
			}
		})
	}
	evs := e.events(t)
	if len(evs) != len(tests) {
		t.Fatalf("%d events", len(evs))
	}
	for i, ev := range evs {
		if ev.Type != contracts.EventReplyDelivered || ev.CustomerID != customer ||
			ev.Data != (contracts.ReplyDelivery{MessageID: int64(100 + i), TicketID: 7, Attempts: 1}) {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestRetryThenSuccess(t *testing.T) {
	e := newEnv(t)
	s := &fakeSender{script: []error{sendErr(replier.ErrThrottled, "status 503 ServiceUnavailable"), &url.Error{Op: "Post", URL: "https://graph", Err: errors.New("connection reset")}}}
	h := e.handler(s)
	ev := e.event("mail", 200, nil)

	res := handle(t, h, ev, 1, false)
	if res.Outcome != replier.OutcomeRetry || res.RetryIn != time.Second {
		t.Fatalf("first: %+v", res)
	}
	rec := e.record(t, 200)
	if rec.Status != replier.StatusPending || rec.Attempts != 1 || !strings.Contains(rec.LastError, "503") ||
		rec.NextAttemptAt == nil || !rec.NextAttemptAt.Equal(start.Add(time.Second)) {
		t.Fatalf("after the first: %+v", rec)
	}
	e.clock.Advance(time.Second)
	res = handle(t, h, ev, 2, false)
	if res.Outcome != replier.OutcomeRetry || res.RetryIn != 5*time.Second {
		t.Fatalf("second (transport): %+v", res)
	}
	if n := len(e.events(t)); n != 0 {
		t.Fatalf("%d events while retrying", n)
	}
	e.clock.Advance(5 * time.Second)
	if res := handle(t, h, ev, 3, false); res.Outcome != replier.OutcomeSent {
		t.Fatalf("third: %+v", res)
	}
	rec = e.record(t, 200)
	if rec.Status != replier.StatusSent || rec.Attempts != 3 || rec.LastError != "" || rec.NextAttemptAt != nil {
		t.Fatalf("sent: %+v", rec)
	}
	evs := e.events(t)
	if len(evs) != 1 || evs[0].Type != contracts.EventReplyDelivered || evs[0].Data.Attempts != 3 {
		t.Fatalf("events %+v", evs)
	}
	if n := len(s.sent()); n != 3 {
		t.Fatalf("%d sends", n)
	}
}

func TestRetryAfterOutlastsBackoff(t *testing.T) {
	e := newEnv(t)
	throttled := sendErr(replier.ErrThrottled, "status 429 TooManyRequests")
	throttled.RetryAfter = 7500 * time.Millisecond
	res := handle(t, e.handler(&fakeSender{script: []error{throttled}}), e.event("mail", 300, nil), 1, false)
	if res.Outcome != replier.OutcomeRetry || res.RetryIn != 7500*time.Millisecond {
		t.Fatalf("%+v", res)
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		last    bool
		wantErr string
	}{
		{name: "forbidden mailbox", err: sendErr(replier.ErrRefused, "status 403 ErrorAccessDenied"), wantErr: "403"},
		{name: "token refused", err: sendErr(replier.ErrRefused,
			"token for tenant contoso.onmicrosoft.com: status 400 invalid_client: AADSTS7000215: Invalid client secret"), wantErr: "AADSTS7000215"},
		{name: "transient on the last attempt", err: sendErr(replier.ErrThrottled, "status 502 BadGateway"), last: true, wantErr: "502"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := &fakeSender{script: []error{tc.err}}
			ev := e.event("mail", 400, nil)
			n := 1
			if tc.last {
				n = 6
			}
			if res := handle(t, e.handler(s), ev, n, tc.last); res.Outcome != replier.OutcomeFailed || res.RetryIn != 0 {
				t.Fatalf("%+v", res)
			}
			rec := e.record(t, 400)
			if rec.Status != replier.StatusFailed || rec.Attempts != 1 || !strings.Contains(rec.LastError, tc.wantErr) {
				t.Fatalf("record %+v", rec)
			}
			evs := e.events(t)
			if len(evs) != 1 || evs[0].Type != contracts.EventReplyFailed || evs[0].Data.MessageID != 400 || evs[0].Data.TicketID != 7 ||
				evs[0].Data.Attempts != 1 || !strings.Contains(evs[0].Data.Error, tc.wantErr) {
				t.Fatalf("events %+v", evs)
			}
			// Failed is final: a redelivery sends nothing.
			if res := handle(t, e.handler(s), ev, 2, false); res.Outcome != replier.OutcomeDuplicate {
				t.Fatalf("redelivery %+v", res)
			}
			if n := len(s.sent()); n != 1 {
				t.Fatalf("%d sends", n)
			}
		})
	}
}

func TestNotSentByMail(t *testing.T) {
	e := newEnv(t)
	s := &fakeSender{}
	tests := []struct {
		name, channel string
		edit          func(*contracts.ReplySent)
		want, status  string
		reason        string
	}{
		{name: "web channel", channel: "web", want: replier.OutcomeSkipped, status: replier.StatusSkipped, reason: "not an e-mail channel"},
		{name: "e-mail channel without provider", channel: "noprovider", want: replier.OutcomeSkipped, status: replier.StatusSkipped, reason: "no mail provider"},
		{name: "deleted channel", channel: "deleted", want: replier.OutcomeSkipped, status: replier.StatusSkipped, reason: "deleted"},
		{name: "unknown channel", channel: "missing", want: replier.OutcomeSkipped, status: replier.StatusSkipped, reason: "not found"},
		{name: "end user without address", channel: "mail", edit: func(d *contracts.ReplySent) { d.To = contracts.MailAddress{Name: "Anon"} },
			want: replier.OutcomeFailed, status: replier.StatusFailed, reason: "no e-mail address"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := int64(500 + i)
			if res := handle(t, e.handler(s), e.event(tc.channel, id, tc.edit), 1, false); res.Outcome != tc.want || res.RetryIn != 0 {
				t.Fatalf("%+v", res)
			}
			if rec := e.record(t, id); rec.Status != tc.status || rec.Attempts != 0 || !strings.Contains(rec.LastError, tc.reason) {
				t.Fatalf("record %+v", rec)
			}
		})
	}
	if calls := s.sent(); len(calls) != 0 {
		t.Fatalf("sent %+v", calls)
	}
	// Only the reply that should have gone by mail is reported failed.
	evs := e.events(t)
	if len(evs) != 1 || evs[0].Type != contracts.EventReplyFailed || evs[0].Data.MessageID != 504 {
		t.Fatalf("events %+v", evs)
	}
}

// Issue 22, item 7: no Graph token is taken for a channel whose tenant is
// not connected to its customer (here: disconnected after the channel was
// made); the reply fails without a call.
func TestTenantNotConnectedSendsNothing(t *testing.T) {
	e := newEnv(t)
	s := &fakeSender{}
	if _, err := e.pool.Exec(context.Background(), `DELETE FROM provider_connections`); err != nil {
		t.Fatal(err)
	}
	res := handle(t, e.handler(s), e.event("mail", 600, nil), 1, false)
	if res.Outcome != replier.OutcomeFailed {
		t.Fatalf("%+v", res)
	}
	if rec := e.record(t, 600); rec.Status != replier.StatusFailed || !strings.Contains(rec.LastError, "not connected") {
		t.Fatalf("record %+v", rec)
	}
	if calls := s.sent(); len(calls) != 0 {
		t.Fatalf("sent %+v", calls)
	}
}

// A reply claimed by a delivery that is still sending is left to it; one
// whose claim lapsed (the worker died mid-call) is failed as outcome
// unknown, never sent a second time.
func TestInterruptedAttempt(t *testing.T) {
	e := newEnv(t)
	s := &fakeSender{}
	h := e.handler(s)
	ev := e.event("mail", 600, nil)
	r := replier.Reply{CustomerID: customer, MessageID: 600, TicketID: 7, ChannelID: e.channels["mail"].ID}
	lease := start.Add(25 * time.Second)
	if c, err := e.store.ClaimReply(context.Background(), r, replier.ClaimRequest{LeaseUntil: lease}); err != nil || !c.Claimed {
		t.Fatalf("claim %+v %v", c, err)
	}
	res := handle(t, h, ev, 2, false)
	if res.Outcome != replier.OutcomeBusy || res.RetryIn != 26*time.Second {
		t.Fatalf("while held: %+v", res)
	}
	e.clock.Set(lease)
	if res := handle(t, h, ev, 3, false); res.Outcome != replier.OutcomeUnknown || res.RetryIn != 0 {
		t.Fatalf("after the lease: %+v", res)
	}
	if calls := s.sent(); len(calls) != 0 {
		t.Fatalf("sent %+v", calls)
	}
	rec := e.record(t, 600)
	if rec.Status != replier.StatusFailed || rec.Attempts != 1 || rec.LastError != replier.ErrOutcomeUnknown.Error() {
		t.Fatalf("record %+v", rec)
	}
	evs := e.events(t)
	if len(evs) != 1 || evs[0].Type != contracts.EventReplyFailed || !strings.Contains(evs[0].Data.Error, "outcome unknown") {
		t.Fatalf("events %+v", evs)
	}
	if res := handle(t, h, ev, 4, false); res.Outcome != replier.OutcomeDuplicate {
		t.Fatalf("afterwards: %+v", res)
	}
}

func TestInvalidEvent(t *testing.T) {
	e := newEnv(t)
	s := &fakeSender{}
	ev := e.event("mail", 700, nil)
	ev.CustomerID = 0
	if res := handle(t, e.handler(s), ev, 1, false); res.Outcome != replier.OutcomeInvalid || res.RetryIn != 0 {
		t.Fatalf("%+v", res)
	}
	if len(s.sent()) != 0 {
		t.Fatal("sent")
	}
}

func TestSubject(t *testing.T) {
	const ref = "7-K7QX9M2PAB"
	tests := []struct{ name, in, ref, want string }{
		{"plain", "Internet down", ref, "Re: Internet down [#7-K7QX9M2PAB]"},
		{"with Re", "Re: Internet down", ref, "Re: Internet down [#7-K7QX9M2PAB]"},
		{"with RE and spaces", "  RE: Internet down  ", ref, "RE: Internet down [#7-K7QX9M2PAB]"},
		{"with the reference", "Internet down [#7-K7QX9M2PAB]", ref, "Re: Internet down [#7-K7QX9M2PAB]"},
		{"with a bare reference", "re: [#7] Internet down", ref, "re: Internet down [#7-K7QX9M2PAB]"},
		{"another ticket's reference goes", "Re: Internet down [#70-AAAAAAAAAA]", ref, "Re: Internet down [#7-K7QX9M2PAB]"},
		{"empty", "", ref, "Re: [#7-K7QX9M2PAB]"},
		{"Re without colon is a word", "Reset password", ref, "Re: Reset password [#7-K7QX9M2PAB]"},
		{"no reference in the event: none", "Internet down [#7]", "", "Re: Internet down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := replier.Subject(tc.in, tc.ref); got != tc.want {
				t.Fatalf("Subject(%q, %q) = %q, want %q", tc.in, tc.ref, got, tc.want)
			}
		})
	}
}

func TestTransient(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"throttled", sendErr(replier.ErrThrottled, "status 429"), true},
		{"refused", sendErr(replier.ErrRefused, "status 400 ErrorInvalidRecipients"), false},
		{"gone", sendErr(replier.ErrNotFound, "status 404"), false},
		{"wrapped refusal", fmt.Errorf("send: %w", sendErr(replier.ErrRefused, "status 403")), false},
		{"transport", &url.Error{Op: "Post", URL: "u", Err: errors.New("EOF")}, true},
		{"deadline", context.DeadlineExceeded, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := replier.Transient(tc.err); got != tc.want {
				t.Fatalf("Transient(%v) = %v", tc.err, got)
			}
		})
	}
}
