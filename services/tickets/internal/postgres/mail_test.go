package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

const mailChannel int64 = 31

// mailOf is a prepared mail of customer through mailChannel from
// ada@example.com, its own thread unless changed.
func mailOf(customerID int64, id string) tickets.MailImport {
	return tickets.MailImport{
		CustomerID: customerID,
		Sender:     contracts.MailAddress{Name: "Ada Lovelace", Address: "ada@example.com"},
		Subject:    "Printer on fire " + id,
		Text:       "It is on fire. " + id,
		Mail: tickets.MailFacts{
			ChannelID: mailChannel, ProviderMessageID: "AAMk-" + id, InternetMessageID: "<" + id + "@mail.example>",
			ConversationID: "conv-" + id, From: contracts.MailAddress{Name: "Ada Lovelace", Address: "ada@example.com"},
			To:      []contracts.MailAddress{{Name: "Support", Address: "support@shop.example"}},
			Cc:      []contracts.MailAddress{{Address: "bob@example.com"}},
			Subject: "Printer on fire " + id, ReceivedAt: clock.Add(-time.Minute), HTML: "<p>It is on fire.</p>",
		},
		QuotaBytes: tickets.DefaultAttachmentQuota,
	}
}

func importMail(t *testing.T, s *postgres.Store, in tickets.MailImport) tickets.MailImported {
	t.Helper()
	out, err := s.ImportMail(context.Background(), in, tickets.ImportDecisions(in, storeClock))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func eventTypes(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	var types []string
	for _, e := range msgEvents(t, pool, contracts.EventEndUserCreated, contracts.EventTicketCreated, contracts.EventTicketUpdated,
		contracts.EventMessageCreated) {
		types = append(types, e.Type)
	}
	return types
}

func TestImportMailOpensATicketOnce(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	in := mailOf(tenantA, "1")
	in.Mail.Skipped = []tickets.SkippedAttachment{{Name: "big.iso", Size: 1 << 30, Reason: "too-large"}}
	out := importMail(t, s, in)
	if out.Outcome != tickets.MailNewTicket || out.TicketID == 0 || out.MessageID == 0 {
		t.Fatalf("import %+v", out)
	}
	tk, err := s.TicketDetails(ctx, tenantA, out.TicketID)
	if err != nil || tk.Subject != in.Subject || tk.Status != tickets.StatusOpen || tk.ChannelID != mailChannel {
		t.Fatalf("ticket %+v %v", tk, err)
	}
	u, err := s.EndUser(ctx, tenantA, tk.EndUserID)
	if err != nil || u.Email != "ada@example.com" || u.Name != "Ada Lovelace" {
		t.Fatalf("end user %+v %v", u, err)
	}
	m, err := s.Message(ctx, tenantA, out.MessageID)
	if err != nil || m.SenderType != tickets.SenderEndUser || m.Text != in.Text || !m.CreatedAt.Equal(clock) || m.Delivery != nil {
		t.Fatalf("message %+v %v", m, err)
	}
	want := in.Mail
	if m.Mail == nil || !m.Mail.ReceivedAt.Equal(want.ReceivedAt) {
		t.Fatalf("mail %+v", m.Mail)
	}
	m.Mail.ReceivedAt = want.ReceivedAt
	if !reflect.DeepEqual(*m.Mail, want) {
		t.Fatalf("mail\n%+v\nwant\n%+v", *m.Mail, want)
	}
	wantEvents := []string{contracts.EventEndUserCreated, contracts.EventTicketCreated, contracts.EventMessageCreated}
	if got := eventTypes(t, pool); !reflect.DeepEqual(got, wantEvents) {
		t.Fatalf("events %v", got)
	}
	if d := msgData[contracts.MessageChanged](t, msgEvents(t, pool, contracts.EventMessageCreated)[0]); d.MessageID != out.MessageID ||
		d.SenderType != "EndUser" || d.ChannelID != mailChannel || d.TicketID != out.TicketID {
		t.Fatalf("message event %+v", d)
	}

	// Again, also with a changed copy: a duplicate, nothing written.
	in.Text, in.Mail.ConversationID = "changed", "another-conversation"
	for range 2 {
		if again := importMail(t, s, in); again != (tickets.MailImported{Outcome: tickets.MailDuplicate, TicketID: out.TicketID, MessageID: out.MessageID}) {
			t.Fatalf("again %+v", again)
		}
	}
	if got := eventTypes(t, pool); len(got) != 3 {
		t.Fatalf("events after duplicates %v", got)
	}
	if n := count(t, pool, `SELECT count(*) FROM ticket_messages`); n != 1 {
		t.Fatalf("%d messages", n)
	}
	// The same provider id in another channel, or of another customer, is
	// another mail.
	other := mailOf(tenantA, "1")
	other.Mail.ChannelID = mailChannel + 1
	if o := importMail(t, s, other); o.Outcome != tickets.MailNewTicket {
		t.Fatalf("other channel %+v", o)
	}
	if o := importMail(t, s, mailOf(tenantB, "1")); o.Outcome != tickets.MailNewTicket {
		t.Fatalf("other customer %+v", o)
	}
	// A message made by the API has no mail.
	api, err := s.AddMessage(ctx, tenantA, out.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderAgent, Text: "on it",
		CustomFields: []byte(`{}`)}, storeClock))
	if err != nil || api.Mail != nil {
		t.Fatalf("api message %+v %v", api, err)
	}
}

// Eight handlers of one mail at once: one message, seven duplicates.
func TestImportMailConcurrently(t *testing.T) {
	for _, sameThread := range []bool{true, false} {
		t.Run(fmt.Sprintf("same thread key %v", sameThread), func(t *testing.T) {
			s, pool := newStore(t)
			var wg sync.WaitGroup
			outs := make([]tickets.MailImported, 8)
			errs := make([]error, 8)
			for i := range outs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					in := mailOf(tenantA, "race")
					if !sameThread {
						// Copies naming different threads take different
						// advisory locks: the unique index decides.
						in.Mail.ConversationID = fmt.Sprintf("conv-%d", i)
					}
					outs[i], errs[i] = s.ImportMail(context.Background(), in, tickets.ImportDecisions(in, storeClock))
				}()
			}
			wg.Wait()
			created := 0
			for i, o := range outs {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if o.Outcome == tickets.MailNewTicket {
					created++
				} else if o.Outcome != tickets.MailDuplicate {
					t.Fatalf("outcome %+v", o)
				}
				if o.MessageID != outs[0].MessageID || o.TicketID != outs[0].TicketID {
					t.Fatalf("outcomes %+v", outs)
				}
			}
			if created != 1 || count(t, pool, `SELECT count(*) FROM ticket_messages`) != 1 ||
				count(t, pool, `SELECT count(*) FROM tickets`) != 1 || count(t, pool, `SELECT count(*) FROM end_users`) != 1 {
				t.Fatalf("created %d", created)
			}
			if got := eventTypes(t, pool); len(got) != 3 {
				t.Fatalf("events %v", got)
			}
		})
	}
}

func TestImportMailThreading(t *testing.T) {
	s, pool := newStore(t)
	a := importMail(t, s, mailOf(tenantA, "a"))
	b := importMail(t, s, mailOf(tenantA, "b"))
	if a.TicketID == b.TicketID {
		t.Fatal("two threads, one ticket")
	}
	foreign := importMail(t, s, mailOf(tenantB, "f"))
	reply := func(id string, change func(*tickets.MailImport)) tickets.MailImport {
		in := mailOf(tenantA, id)
		in.Mail.ConversationID = "conv-" + id
		change(&in)
		return in
	}
	tests := []struct {
		name string
		in   tickets.MailImport
		want int64 // 0: a new ticket
	}{
		{"In-Reply-To first", reply("r1", func(in *tickets.MailImport) {
			in.ThreadIDs = []string{"<a@mail.example>", "<b@mail.example>"}
			in.Mail.ConversationID = "conv-b"
			in.SubjectTicketID = b.TicketID
		}), a.TicketID},
		{"then References, newest first", reply("r2", func(in *tickets.MailImport) {
			in.ThreadIDs = []string{"<unknown@x>", "<b@mail.example>", "<a@mail.example>"}
		}), b.TicketID},
		{"then the conversation", reply("r3", func(in *tickets.MailImport) {
			in.ThreadIDs = []string{"<unknown@x>"}
			in.Mail.ConversationID = "conv-a"
			in.SubjectTicketID = b.TicketID
		}), a.TicketID},
		{"then the subject's ticket", reply("r4", func(in *tickets.MailImport) {
			in.ThreadIDs = []string{"<unknown@x>"}
			in.SubjectTicketID = b.TicketID
		}), b.TicketID},
		{"a Message-ID of another channel does not thread", reply("r5", func(in *tickets.MailImport) {
			in.Mail.ChannelID = mailChannel + 1
			in.ThreadIDs = []string{"<a@mail.example>"}
			in.Mail.ConversationID = "conv-a"
			in.SubjectTicketID = a.TicketID
		}), 0},
		{"another customer's ticket does not thread", reply("r6", func(in *tickets.MailImport) {
			in.ThreadIDs = []string{"<f@mail.example>"}
			in.Mail.ConversationID = "conv-f"
			in.SubjectTicketID = foreign.TicketID
		}), 0},
		{"an unknown ticket in the subject opens one", reply("r7", func(in *tickets.MailImport) {
			in.SubjectTicketID = 999999
		}), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := importMail(t, s, tt.in)
			if tt.want == 0 {
				if out.Outcome != tickets.MailNewTicket || out.TicketID == a.TicketID || out.TicketID == b.TicketID || out.TicketID == foreign.TicketID {
					t.Fatalf("import %+v, want a new ticket", out)
				}
				return
			}
			if out.Outcome != tickets.MailJoined || out.TicketID != tt.want {
				t.Fatalf("import %+v, want ticket %d", out, tt.want)
			}
		})
	}
	// A deleted ticket's thread opens a new ticket.
	c := importMail(t, s, mailOf(tenantA, "c"))
	if err := s.DeleteTicket(context.Background(), tenantA, c.TicketID); err != nil {
		t.Fatal(err)
	}
	if out := importMail(t, s, reply("r8", func(in *tickets.MailImport) {
		in.Mail.ConversationID = "conv-c"
		in.ThreadIDs = []string{"<c@mail.example>"}
	})); out.Outcome != tickets.MailNewTicket {
		t.Fatalf("deleted ticket's thread %+v", out)
	}
	if n := count(t, pool, `SELECT count(*) FROM tickets WHERE customer_id = $1`, tenantA); n != 6 { // a, b, r5, r6, r7, r8
		t.Fatalf("%d tickets", n)
	}
}

// A ticket reference in the subject joins its ticket only for its end user
// and the people already on its mail thread; a stranger naming it opens a
// ticket of their own. In-Reply-To/References and the conversation id need
// no participant (they name a mail only its recipients know).
func TestImportMailSubjectRefNeedsParticipant(t *testing.T) {
	s, pool := newStore(t)
	a := importMail(t, s, mailOf(tenantA, "a")) // from ada, Cc bob, to support@shop.example
	from := func(id, address string, change func(*tickets.MailImport)) tickets.MailImport {
		in := mailOf(tenantA, id)
		in.Sender = contracts.MailAddress{Name: address, Address: address}
		in.Mail.From, in.Mail.Cc = in.Sender, nil
		in.Mailbox = "support@shop.example"
		if change != nil {
			change(&in)
		}
		return in
	}
	bySubject := func(in *tickets.MailImport) { in.SubjectTicketID = a.TicketID }
	tests := []struct {
		name string
		in   tickets.MailImport
		join bool
	}{
		{"a stranger naming the ticket opens a new one", from("s1", "mallory@evil.example", bySubject), false},
		{"the mailbox's own address is no participant", from("s2", "support@shop.example", bySubject), false},
		{"the end user joins", from("s3", "ada@example.com", bySubject), true},
		{"a colleague in Cc of a mail of the thread joins", from("s4", "bob@example.com", bySubject), true},
		{"a stranger answering a mail of the thread (In-Reply-To) joins", from("s5", "carol@example.net", func(in *tickets.MailImport) {
			in.ThreadIDs = []string{"<a@mail.example>"}
		}), true},
		{"a stranger in the thread's conversation joins", from("s6", "dave@example.net", func(in *tickets.MailImport) {
			in.Mail.ConversationID = "conv-a"
		}), true},
		{"who joined by a header is on the thread afterwards", from("s7", "carol@example.net", bySubject), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := importMail(t, s, tt.in)
			if tt.join != (out.Outcome == tickets.MailJoined && out.TicketID == a.TicketID) {
				t.Fatalf("import %+v, join %v", out, tt.join)
			}
			if !tt.join && out.Outcome != tickets.MailNewTicket {
				t.Fatalf("import %+v, want a new ticket", out)
			}
		})
	}
	if n := count(t, pool, `SELECT count(*) FROM ticket_messages WHERE customer_id = $1 AND ticket_id = $2`, tenantA, a.TicketID); n != 6 {
		t.Fatalf("%d messages in the ticket", n)
	}
}

// Two mails of one new conversation at once open one ticket.
func TestImportMailOneTicketPerNewConversation(t *testing.T) {
	s, pool := newStore(t)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := mailOf(tenantA, fmt.Sprint("m", i))
			in.Mail.ConversationID = "conv-shared"
			if _, err := s.ImportMail(context.Background(), in, tickets.ImportDecisions(in, storeClock)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := count(t, pool, `SELECT count(*) FROM tickets`); n != 1 {
		t.Fatalf("%d tickets", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM ticket_messages`); n != 6 {
		t.Fatalf("%d messages", n)
	}
}

func TestImportMailReopens(t *testing.T) {
	s, pool := newStore(t)
	first := importMail(t, s, mailOf(tenantA, "1"))
	for _, st := range []tickets.Status{tickets.StatusResolved, tickets.StatusClosed} {
		msgSetStatus(t, pool, first.TicketID, st)
		in := mailOf(tenantA, "reply-"+string(st))
		in.ThreadIDs = []string{"<1@mail.example>"}
		if out := importMail(t, s, in); out.Outcome != tickets.MailJoined || out.TicketID != first.TicketID {
			t.Fatalf("reply %+v", out)
		}
		if got := msgStatus(t, pool, first.TicketID); got != tickets.StatusOpen {
			t.Fatalf("status %s after a reply to a %s ticket", got, st)
		}
		evs := msgEvents(t, pool, contracts.EventTicketUpdated)
		if d := msgData[contracts.TicketChanged](t, evs[len(evs)-1]); d.PreviousStatus != string(st) || d.Status != "Open" {
			t.Fatalf("ticket.updated %+v", d)
		}
	}
	// An Escalated ticket stays Escalated (AfterEndUserMessage).
	msgSetStatus(t, pool, first.TicketID, tickets.StatusEscalated)
	in := mailOf(tenantA, "reply-escalated")
	in.ThreadIDs = []string{"<1@mail.example>"}
	importMail(t, s, in)
	if got := msgStatus(t, pool, first.TicketID); got != tickets.StatusEscalated {
		t.Fatalf("status %s", got)
	}
}

// Imports of one new sender at once end with one end user; an existing
// end user (any case of the address) is found, not created.
func TestImportMailEndUserFindOrCreate(t *testing.T) {
	s, pool := newStore(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := mailOf(tenantA, fmt.Sprint("u", i))
			in.Sender.Address = "grace@example.com"
			if _, err := s.ImportMail(context.Background(), in, tickets.ImportDecisions(in, storeClock)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := count(t, pool, `SELECT count(*) FROM end_users WHERE customer_id = $1 AND email = 'grace@example.com'`, tenantA); n != 1 {
		t.Fatalf("%d end users", n)
	}
	if n := len(msgEvents(t, pool, contracts.EventEndUserCreated)); n != 1 {
		t.Fatalf("%d end-user.created", n)
	}
	if n := count(t, pool, `SELECT count(DISTINCT end_user_id) FROM tickets`); n != 1 {
		t.Fatalf("tickets of %d end users", n)
	}

	existing := create(t, s, tenantA, "Known", "known@example.com")
	in := mailOf(tenantA, "known")
	in.Sender = contracts.MailAddress{Name: "Someone Else", Address: "known@example.com"} // Prepare lower-cases
	out := importMail(t, s, in)
	tk, _ := s.TicketDetails(context.Background(), tenantA, out.TicketID)
	if tk.EndUserID != existing.ID {
		t.Fatalf("ticket of end user %d, want %d", tk.EndUserID, existing.ID)
	}
	if n := len(msgEvents(t, pool, contracts.EventEndUserCreated)); n != 2 { // grace and Known (by the API)
		t.Fatalf("%d end-user.created", n)
	}
}

func TestImportMailAttachments(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	keys := []string{"1_mail_" + randid.Hex(16), "1_mail_" + randid.Hex(16)}
	if err := s.ReserveBlobs(ctx, keys, clock.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	in := mailOf(tenantA, "att")
	for i, k := range keys {
		in.Attachments = append(in.Attachments, tickets.Attachment{FileName: fmt.Sprint("f", i, ".txt"), ContentType: "text/plain; charset=utf-8",
			Size: int64(i + 1), SHA256: fmt.Sprint("sum", i), Key: k})
	}
	out := importMail(t, s, in)
	got, err := s.Attachments(ctx, tenantA, out.MessageID)
	if err != nil || len(got) != 2 || got[0].Key != keys[0] || got[1].FileName != "f1.txt" || got[1].Size != 2 || got[0].SHA256 != "sum0" {
		t.Fatalf("attachments %+v %v", got, err)
	}

	if g := garbage(t, pool); len(g) != 0 {
		t.Fatalf("garbage %v", g)
	}
	if m, _ := s.Message(ctx, tenantA, out.MessageID); m.Attachments != 2 {
		t.Fatalf("message counts %d attachments", m.Attachments)
	}

	// A key the sweeper took: nothing is written, the mail may come again.
	in = mailOf(tenantA, "late")
	in.Attachments = []tickets.Attachment{{FileName: "x", ContentType: "text/plain", Key: "1_mail_" + randid.Hex(16), SHA256: "s"}}
	if _, err := s.ImportMail(ctx, in, tickets.ImportDecisions(in, storeClock)); !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("swept key: %v", err)
	}
	if _, dup, _ := s.ImportedMail(ctx, tenantA, mailChannel, in.Mail.ProviderMessageID); dup {
		t.Fatal("a failed import was kept")
	}

	// Discarded keys fall due at once.
	k := "1_mail_" + randid.Hex(16)
	if err := s.ReserveBlobs(ctx, []string{k}, clock.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.DiscardBlobs(ctx, []string{k}); err != nil {
		t.Fatal(err)
	}
	if g := garbage(t, pool); len(g) != 1 || g[k] != nil {
		t.Fatalf("garbage %v", g)
	}
	// Over the customer's quota (3 bytes used of 4): the import is refused
	// whole (the importer then imports the mail without the attachments).
	over := mailOf(tenantA, "over")
	overKey := "1_mail_" + randid.Hex(16)
	if err := s.ReserveBlobs(ctx, []string{overKey}, clock.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	over.QuotaBytes = 4
	over.Attachments = []tickets.Attachment{{FileName: "big.txt", ContentType: "text/plain", Size: 2, SHA256: "x", Key: overKey}}
	if _, err := s.ImportMail(ctx, over, tickets.ImportDecisions(over, storeClock)); !errors.Is(err, tickets.ErrQuota) || !apperr.Is(err, apperr.TooLarge) {
		t.Fatalf("import over the quota: %v", err)
	}
	if _, dup, err := s.ImportedMail(ctx, tenantA, mailChannel, over.Mail.ProviderMessageID); dup || err != nil {
		t.Fatalf("the refused import left a message: %v %v", dup, err)
	}
	if _, ok := garbage(t, pool)[overKey]; !ok {
		t.Fatal("the refused import took its key off the garbage list")
	}
}

func TestSendReplyForMail(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	first := importMail(t, s, mailOf(tenantA, "1"))
	// A later mail of a colleague in the same ticket: the end user's own
	// mail is the one replied to.
	cc := mailOf(tenantA, "2")
	cc.Sender = contracts.MailAddress{Name: "Bob", Address: "bob@example.com"}
	cc.Mail.From = cc.Sender
	cc.ThreadIDs = []string{"<1@mail.example>"}
	importMail(t, s, cc)
	if err := msgPatch(t, s, tenantA, first.MessageID, `{"aiReply":{"text":"Unplug it."}}`); err != nil {
		t.Fatal(err)
	}
	refs, err := tickets.NewRefs("0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	sent, err := sendReply(ctx, s, tenantA, first.MessageID, tickets.ReplyInput{AccountID: 3, EmailChannelID: mailChannel, Refs: refs})
	if err != nil || sent.Delivery == nil || sent.Delivery.Status != tickets.DeliveryPending {
		t.Fatalf("sent %+v %v", sent, err)
	}
	evs := msgEvents(t, pool, contracts.EventReplySent)
	d := msgData[contracts.ReplySent](t, evs[0])
	want := contracts.ReplySent{MessageID: sent.ID, InReplyToID: first.MessageID, TicketID: first.TicketID, ChannelID: mailChannel,
		EndUserID: d.EndUserID, Text: "Unplug it.", Subject: "Printer on fire 1",
		To:                contracts.MailAddress{Name: "Ada Lovelace", Address: "ada@example.com"},
		ReplyToProviderID: "AAMk-1", ReplyToInternetMessageID: "<1@mail.example>",
		TicketRef: refs.Ref(tenantA, first.TicketID)}
	if d != want {
		t.Fatalf("reply.sent\n%+v\nwant\n%+v", d, want)
	}
	if ch, err := s.MessageChannel(ctx, tenantA, first.MessageID); err != nil || ch != mailChannel {
		t.Fatalf("channel %d %v", ch, err)
	}
	if _, err := s.MessageChannel(ctx, tenantB, first.MessageID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("foreign channel: %v", err)
	}

	// A ticket without mail, of a channel that is not an e-mail channel
	// (or no longer the ticket's): no delivery, no mail ids, and the end
	// user's address is "" when it has none.
	m := msgOpen(t, s, tenantA, "hello")
	if err := msgPatch(t, s, tenantA, m.ID, `{"aiReply":{"text":"hi"}}`); err != nil {
		t.Fatal(err)
	}
	sent, err = sendReply(ctx, s, tenantA, m.ID, tickets.ReplyInput{AccountID: 3, EmailChannelID: mailChannel})
	if err != nil || sent.Delivery != nil {
		t.Fatalf("sent %+v %v", sent, err)
	}
	if got, _ := s.Message(ctx, tenantA, sent.ID); got.Delivery != nil {
		t.Fatalf("delivery %+v", got.Delivery)
	}
	d = msgData[contracts.ReplySent](t, msgEvents(t, pool, contracts.EventReplySent)[1])
	if d.To != (contracts.MailAddress{Name: "Writer"}) || d.ReplyToProviderID != "" || d.ReplyToInternetMessageID != "" || d.Subject != "Help" {
		t.Fatalf("reply.sent %+v", d)
	}
}

// send-reply never answers a mail whose sender is not the ticket's end
// user: with only a colleague's mail left in the ticket, the reply is a new
// mail to the end user (no replyToProviderID).
func TestSendReplyNeverAnswersAnotherSender(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	first := importMail(t, s, mailOf(tenantA, "1"))
	other := mailOf(tenantA, "2")
	other.Sender = contracts.MailAddress{Name: "Mallory", Address: "mallory@evil.example"}
	other.Mail.From = other.Sender
	other.ThreadIDs = []string{"<1@mail.example>"}
	if out := importMail(t, s, other); out.TicketID != first.TicketID {
		t.Fatalf("other %+v", out)
	}
	if err := s.DeleteMessage(ctx, tenantA, first.MessageID); err != nil {
		t.Fatal(err)
	}
	m, err := s.AddMessage(ctx, tenantA, first.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderEndUser,
		Text: "by phone", CustomFields: []byte(`{}`)}, storeClock))
	if err != nil {
		t.Fatal(err)
	}
	if err := msgPatch(t, s, tenantA, m.ID, `{"aiReply":{"text":"Unplug it."}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := sendReply(ctx, s, tenantA, m.ID, tickets.ReplyInput{AccountID: 3, EmailChannelID: mailChannel}); err != nil {
		t.Fatal(err)
	}
	d := msgData[contracts.ReplySent](t, msgEvents(t, pool, contracts.EventReplySent)[0])
	if d.ReplyToProviderID != "" || d.ReplyToInternetMessageID != "" || d.To.Address != "ada@example.com" {
		t.Fatalf("reply.sent %+v", d)
	}
}

func TestSetDelivery(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	first := importMail(t, s, mailOf(tenantA, "1"))
	if err := msgPatch(t, s, tenantA, first.MessageID, `{"aiReply":{"text":"Unplug it."}}`); err != nil {
		t.Fatal(err)
	}
	sent, err := sendReply(ctx, s, tenantA, first.MessageID, tickets.ReplyInput{AccountID: 3, EmailChannelID: mailChannel})
	if err != nil {
		t.Fatal(err)
	}
	at := func(min int) time.Time { return clock.Add(time.Duration(min) * time.Minute) }
	steps := []struct {
		name    string
		id      int64
		d       tickets.Delivery
		applied bool
		want    tickets.Delivery
	}{
		// Pending gives way to any report, even one dated before it (clocks
		// of two services).
		{"failed after pending", sent.ID, tickets.Delivery{Status: "failed", Attempts: 1, Error: "429", UpdatedAt: at(-1)}, true,
			tickets.Delivery{Status: "failed", Attempts: 1, Error: "429", UpdatedAt: at(-1)}},
		{"sent later", sent.ID, tickets.Delivery{Status: "sent", Attempts: 2, UpdatedAt: at(2)}, true,
			tickets.Delivery{Status: "sent", Attempts: 2, UpdatedAt: at(2)}},
		{"an older failure does not overwrite", sent.ID, tickets.Delivery{Status: "failed", Attempts: 1, Error: "429", UpdatedAt: at(1)}, false,
			tickets.Delivery{Status: "sent", Attempts: 2, UpdatedAt: at(2)}},
		{"the same report again changes nothing", sent.ID, tickets.Delivery{Status: "sent", Attempts: 2, UpdatedAt: at(2)}, false,
			tickets.Delivery{Status: "sent", Attempts: 2, UpdatedAt: at(2)}},
		{"an end-user message has no delivery", first.MessageID, tickets.Delivery{Status: "sent", Attempts: 1, UpdatedAt: at(3)}, false,
			tickets.Delivery{}},
	}
	for _, st := range steps {
		applied, err := s.SetDelivery(ctx, tenantA, st.id, st.d)
		if err != nil || applied != st.applied {
			t.Fatalf("%s: applied %v %v", st.name, applied, err)
		}
		m, _ := s.Message(ctx, tenantA, st.id)
		var got tickets.Delivery
		if m.Delivery != nil {
			got = *m.Delivery
			got.UpdatedAt = got.UpdatedAt.UTC()
		}
		if got != st.want {
			t.Fatalf("%s: delivery %+v, want %+v", st.name, got, st.want)
		}
	}
	if applied, err := s.SetDelivery(ctx, tenantB, sent.ID, tickets.Delivery{Status: "failed", UpdatedAt: at(9)}); err != nil || applied {
		t.Fatalf("another customer's message: %v %v", applied, err)
	}
}
