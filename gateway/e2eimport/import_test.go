package e2eimport

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// A mail delivered to a subscribed inbox becomes a ticket: subject, sender
// as end user, the new text without the quoted history, the sanitised HTML,
// the attachments byte for byte.
func TestMailBecomesTicket(t *testing.T) {
	t.Parallel()
	mc := newMailChannel(t)
	from := sender("Ada Lovelace")
	subject := "Printer on fire " + randid.Hex(4)
	pdf := bytes.Repeat([]byte("%PDF-1.4 fake page\n"), 12_000) // about 220 KB
	one := []byte{0x42}
	html := `<html><body><p>Hello, my printer is <b>on fire</b>.</p><script>alert(1)</script>` +
		`<a href="javascript:alert(2)">click</a><blockquote>On Mon, Bob wrote:<br>old text</blockquote></body></html>`
	mc.deliver(t, graphfake.DeliverMail{
		Subject: subject, From: from, To: []graphfake.Address{{Address: mc.mailbox}},
		HTML: html, // Graph gives its text form too
		Attachments: []graphfake.MailAttachment{
			{Name: "invoice.pdf", ContentType: "application/octet-stream", Content: pdf},
			{Name: "one.bin", ContentType: "application/octet-stream", Content: one},
		},
	})
	tk := mc.waitTicket(t, subject)
	if tk.Status != "Open" || tk.IsClosed || tk.ChannelID != mc.channel.ChannelID {
		t.Fatalf("ticket %+v", tk)
	}
	u := mc.endUser(t, tk.EndUserID)
	if !strings.EqualFold(u.Email, from.Address) || u.Name != from.Name {
		t.Fatalf("end user %+v, want %s <%s>", u, from.Name, from.Address)
	}
	ms := mc.waitMessages(t, tk.TicketID, 1)
	m := ms[0]
	if m.SenderType != "EndUser" || !strings.Contains(m.Message, "my printer is on fire") || strings.Contains(m.Message, "old text") {
		t.Fatalf("message %q from %s", m.Message, m.SenderType)
	}
	if m.Mail == nil || !strings.EqualFold(m.Mail.From.Address, from.Address) || m.Mail.Subject != subject || m.Mail.InternetMessageID == "" {
		t.Fatalf("mail facts %+v", m.Mail)
	}
	if strings.Contains(m.Mail.HTML, "<script") || strings.Contains(m.Mail.HTML, "javascript:") || !strings.Contains(m.Mail.HTML, "on fire") {
		t.Fatalf("html not sanitised or lost: %s", m.Mail.HTML)
	}
	atts := mc.attachments(t, m.MessageID)
	if len(atts) != 2 || m.Attachments != 2 {
		t.Fatalf("attachments %+v (count %d)", atts, m.Attachments)
	}
	want := map[string][]byte{"invoice.pdf": pdf, "one.bin": one}
	for _, a := range atts {
		data, ct := mc.download(t, m.MessageID, a.ID)
		sum := sha256.Sum256(want[a.FileName])
		if !bytes.Equal(data, want[a.FileName]) || a.Size != int64(len(data)) || a.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s: %d bytes, size %d, sha %s", a.FileName, len(data), a.Size, a.SHA256)
		}
		if a.FileName == "invoice.pdf" && !strings.HasPrefix(ct, "application/pdf") {
			t.Errorf("invoice.pdf served as %q (sniffed type expected)", ct)
		}
	}
	// Another tenant sees none of it.
	other := newTenant(t)
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/Tickets/%d", tk.TicketID), other.AgentToken, nil), http.StatusNotFound, nil)
}

// Replies join their ticket: by In-Reply-To, by References, by the
// conversation, by the [#id] in the subject; a reply reopens a resolved
// ticket; an unrelated mail from the same sender is a new ticket with the
// same end user.
func TestRepliesJoinTheirTicket(t *testing.T) {
	t.Parallel()
	mc := newMailChannel(t)
	from := sender("Grace Hopper")
	subject := "Login broken " + randid.Hex(4)
	mc.deliver(t, graphfake.DeliverMail{Subject: subject, From: from, Text: "I cannot log in.", ConversationID: "conv-" + randid.Hex(6)})
	tk := mc.waitTicket(t, subject)
	first := mc.waitMessages(t, tk.TicketID, 1)[0]

	mc.deliver(t, graphfake.DeliverMail{Subject: "RE: " + subject, From: from, Text: "Still broken.",
		InReplyTo: first.Mail.InternetMessageID, ConversationID: "other-" + randid.Hex(6)})
	mc.waitMessages(t, tk.TicketID, 2)
	mc.deliver(t, graphfake.DeliverMail{Subject: "AW: " + subject, From: from, Text: "Any news?",
		References: []string{"<unknown-" + randid.Hex(4) + "@elsewhere>", first.Mail.InternetMessageID}})
	mc.waitMessages(t, tk.TicketID, 3)
	wantStatus(t, client(t).Do(http.MethodPut, fmt.Sprintf("/api/Tickets/%d", tk.TicketID), mc.tn.AgentToken,
		map[string]any{"status": "Resolved"}), http.StatusNoContent, nil)
	mc.deliver(t, graphfake.DeliverMail{Subject: "RE: " + subject, From: from, Text: "It broke again.",
		References: []string{first.Mail.InternetMessageID}})
	ms := mc.waitMessages(t, tk.TicketID, 4)
	if got := mc.ticket(t, tk.TicketID); got.Status != "Open" {
		t.Fatalf("a reply to a resolved ticket left it %s", got.Status)
	}
	for _, m := range ms {
		if m.SenderType != "EndUser" {
			t.Fatalf("message %+v", m)
		}
	}
	// A reference to another tenant's ticket number is no reference.
	other := newMailChannel(t)
	otherSubject := fmt.Sprintf("Hello [#%d] %s", tk.TicketID, randid.Hex(4))
	other.deliver(t, graphfake.DeliverMail{Subject: otherSubject, From: from, Text: "New here."})
	ot := other.waitTicket(t, otherSubject)
	if ot.TicketID == tk.TicketID {
		t.Fatal("a mail joined another tenant's ticket")
	}
	// Unrelated: a new ticket, the same end user.
	newSubject := "Different problem " + randid.Hex(4)
	mc.deliver(t, graphfake.DeliverMail{Subject: newSubject, From: graphfake.Address{Name: "G. Hopper", Address: strings.ToUpper(from.Address)}, Text: "Something else."})
	nt := mc.waitTicket(t, newSubject)
	if nt.TicketID == tk.TicketID || nt.EndUserID != tk.EndUserID {
		t.Fatalf("new ticket %+v, first %+v", nt, tk)
	}
	if us := mc.endUsersByEmail(t, from.Address); len(us) != 1 {
		t.Fatalf("end users for %s: %+v", from.Address, us)
	}
}

// Graph's duplicate notifications, a repeated notification after the
// import, and a resync after 410 Gone (which re-reads the whole look-back)
// leave one message per mail.
func TestDuplicatesMakeOneMessage(t *testing.T) {
	t.Parallel()
	mc := newMailChannel(t)
	from := sender("Alan Turing")
	three := 3
	subject := "Duplicate " + randid.Hex(4)
	id := mc.deliver(t, graphfake.DeliverMail{Subject: subject, From: from, Text: "once", Notifications: &three})
	tk := mc.waitTicket(t, subject)
	if _, err := graph.Notify(t.Context(), *mc.folder.ProviderSubscriptionID, 2); err != nil {
		t.Fatal(err)
	}
	// The delta links issued so far are gone: the next import resyncs the
	// look-back window, which holds the first mail again.
	graph.ExpireDeltaTokens(mc.mailbox)
	second := "After resync " + randid.Hex(4)
	mc.deliver(t, graphfake.DeliverMail{Subject: second, From: from, Text: "twice"})
	mc.waitTicket(t, second)
	// Nothing more comes: the resync and the repeats are done by the time
	// the second ticket is visible, and one more import proves it.
	third := "Third " + randid.Hex(4)
	mc.deliver(t, graphfake.DeliverMail{Subject: third, From: from, Text: "thrice"})
	mc.waitTicket(t, third)
	if l := mc.tickets(t); l.TotalCount != 3 {
		t.Fatalf("%d tickets, want 3: %+v", l.TotalCount, l.Items)
	}
	if ms := mc.messages(t, tk.TicketID); len(ms) != 1 {
		t.Fatalf("mail %s made %d messages", id, len(ms))
	}
}

// Mail the platform sent itself (from the channel's own address) is not
// imported; Graph's throttling (429 with a fractional Retry-After) delays
// the import and loses nothing.
func TestOwnMailSkippedAndThrottlingHonoured(t *testing.T) {
	t.Parallel()
	mc := newMailChannel(t)
	own := "Our own " + randid.Hex(4)
	mc.deliver(t, graphfake.DeliverMail{Subject: own, From: graphfake.Address{Name: "Support", Address: mc.mailbox}, Text: "from us"})
	graph.Throttle(3, "0.35")
	subject := "Throttled " + randid.Hex(4)
	start := time.Now()
	mc.deliver(t, graphfake.DeliverMail{Subject: subject, From: sender("Edsger Dijkstra"), Text: "slow but sure"})
	mc.waitTicket(t, subject)
	t.Logf("imported in %s with three 429s in the way", time.Since(start).Round(time.Millisecond))
	for _, tk := range mc.tickets(t).Items {
		if tk.Subject == own {
			t.Fatal("the platform's own mail became a ticket")
		}
	}
}

// An agent's reply goes out by mail once, as a Graph reply to the end
// user's mail, with the ticket reference; the message shows it delivered.
func TestReplyGoesOutByMail(t *testing.T) {
	t.Parallel()
	mc := newMailChannel(t)
	from := sender("Barbara Liskov")
	subject := "Refund " + randid.Hex(4)
	mailID := mc.deliver(t, graphfake.DeliverMail{Subject: subject, From: from, Text: "Where is my refund?"})
	tk := mc.waitTicket(t, subject)
	m := mc.waitMessages(t, tk.TicketID, 1)[0]
	answer := "Your refund left today. " + randid.Hex(4)
	wantStatus(t, client(t).Do(http.MethodPost, fmt.Sprintf("/api/TicketMessages/%d/send-reply", m.MessageID), mc.tn.AgentToken,
		map[string]any{"modifiedAnswer": answer}), http.StatusOK, nil)
	ms := mc.waitMessages(t, tk.TicketID, 2)
	agent := ms[1]
	if agent.SenderType != "Agent" || agent.Message != answer || agent.Delivery == nil {
		t.Fatalf("agent message %+v", agent)
	}
	var out []graphfake.SentMail
	e2ekit.Eventually(t, 15*time.Second, "the reply in the fake Graph's outbox", func() bool {
		out = sentFrom(mc.mailbox)
		return len(out) > 0
	})
	var reply messageBody
	e2ekit.Eventually(t, 15*time.Second, "delivery sent on the agent message", func() bool {
		wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/TicketMessages/%d", agent.MessageID), mc.tn.AgentToken, nil), http.StatusOK, &reply)
		return reply.Delivery != nil && reply.Delivery.Status == "sent"
	})
	out = sentFrom(mc.mailbox)
	if len(out) != 1 {
		t.Fatalf("%d mails sent, want 1: %+v", len(out), out)
	}
	s := out[0]
	if s.Kind != graphfake.SentReply || s.InReplyTo != mailID || !strings.Contains(s.Text, answer) ||
		!ticketRef(tk.TicketID).MatchString(s.Subject) || s.Headers["X-SupportPlatform-Reply"] == "" {
		t.Fatalf("sent %+v", s)
	}
	// The reply lands in Sent Items, not in the inbox: no new ticket, no new
	// end-user message (a later mail's import has run by the time its
	// ticket shows).
	marker := "Later " + randid.Hex(4)
	mc.deliver(t, graphfake.DeliverMail{Subject: marker, From: sender("Someone Else"), Text: "later"})
	mc.waitTicket(t, marker)
	if l := mc.tickets(t); l.TotalCount != 2 {
		t.Fatalf("%d tickets after the reply and one more mail, want 2", l.TotalCount)
	}
	if ms := mc.messages(t, tk.TicketID); len(ms) != 2 || ms[1].SenderType != "Agent" {
		t.Fatalf("messages after the reply: %+v", ms)
	}
}

// A reply in a ticket that did not come by mail (opened through the API on
// the e-mail channel) goes out as a new mail to the end user, with the
// ticket reference in the subject; a second send-reply of the same message
// is refused and sends nothing.
func TestReplyToAPITicketIsANewMail(t *testing.T) {
	t.Parallel()
	mc := newMailChannel(t)
	addr := "api-user-" + randid.Hex(4) + "@customer.example"
	var u endUserBody
	wantStatus(t, client(t).Do(http.MethodPost, "/api/EndUsers", mc.tn.AgentToken,
		map[string]any{"name": "Ken Thompson", "email": addr}), http.StatusCreated, &u)
	var m messageBody
	subject := "Phone call " + randid.Hex(4)
	wantStatus(t, client(t).Do(http.MethodPost, "/api/TicketMessages", mc.tn.AgentToken, map[string]any{
		"message": "Called about the invoice.", "senderType": "EndUser", "subject": subject,
		"channelID": mc.channel.ChannelID, "endUserID": u.EndUserID}), http.StatusCreated, &m)
	answer := "Here is the invoice you asked for. " + randid.Hex(4)
	send := func() int {
		return client(t).Do(http.MethodPost, fmt.Sprintf("/api/TicketMessages/%d/send-reply", m.MessageID), mc.tn.AgentToken,
			map[string]any{"modifiedAnswer": answer}).Status
	}
	if st := send(); st != http.StatusOK {
		t.Fatalf("send-reply %d", st)
	}
	var out []graphfake.SentMail
	e2ekit.Eventually(t, 15*time.Second, "the new mail in the fake Graph's outbox", func() bool {
		out = sentFrom(mc.mailbox)
		return len(out) > 0
	})
	s := out[0]
	if s.Kind != graphfake.SentSendMail || len(s.To) != 1 || !strings.EqualFold(s.To[0].Address, addr) ||
		!strings.HasPrefix(s.Subject, "Re: "+subject+" ") || !ticketRef(m.TicketID).MatchString(s.Subject) || !strings.Contains(s.Text, answer) {
		t.Fatalf("sent %+v", s)
	}
	if st := send(); st != http.StatusConflict {
		t.Fatalf("second send-reply %d, want 409", st)
	}
	ms := mc.waitMessages(t, m.TicketID, 2)
	e2ekit.Eventually(t, 15*time.Second, "delivery sent", func() bool {
		var r messageBody
		wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/TicketMessages/%d", ms[1].MessageID), mc.tn.AgentToken, nil), http.StatusOK, &r)
		return r.Delivery != nil && r.Delivery.Status == "sent"
	})
	if n := len(sentFrom(mc.mailbox)); n != 1 {
		t.Fatalf("%d mails sent, want 1", n)
	}
}

// ticketRef matches the signed reference of a ticket in a subject,
// "[#<id>-<tag>]" at its end.
func ticketRef(ticketID int64) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`\[#%d-[0-9A-HJKMNP-TV-Z]{10}\]$`, ticketID))
}

// The reference in a reply's subject joins the ticket only for its end
// user (or someone already on its thread): a stranger who writes with the
// very same subject, or with the bare "[#id]" of the old format, gets a
// ticket of their own, and the end user's bare "[#id]" is no reference
// either.
func TestSubjectReferenceJoinsOnlyParticipants(t *testing.T) {
	t.Parallel()
	mc := newMailChannel(t)
	from := sender("Frances Allen")
	subject := "Invoice wrong " + randid.Hex(4)
	mc.deliver(t, graphfake.DeliverMail{Subject: subject, From: from, Text: "The invoice is wrong."})
	tk := mc.waitTicket(t, subject)
	m := mc.waitMessages(t, tk.TicketID, 1)[0]
	wantStatus(t, client(t).Do(http.MethodPost, fmt.Sprintf("/api/TicketMessages/%d/send-reply", m.MessageID), mc.tn.AgentToken,
		map[string]any{"modifiedAnswer": "We will correct it."}), http.StatusOK, nil)
	var out []graphfake.SentMail
	e2ekit.Eventually(t, 15*time.Second, "the reply in the fake Graph's outbox", func() bool {
		out = sentFrom(mc.mailbox)
		return len(out) > 0
	})
	replySubject := out[0].Subject
	if !strings.HasPrefix(replySubject, "Re: "+subject+" ") || !ticketRef(tk.TicketID).MatchString(replySubject) {
		t.Fatalf("reply subject %q", replySubject)
	}

	// A stranger with the reply's subject, and with the bare id.
	stranger := sender("Mallory")
	mc.deliver(t, graphfake.DeliverMail{Subject: replySubject, From: stranger, Text: "Send me the refund instead."})
	own := mc.waitTicket(t, replySubject)
	bare := fmt.Sprintf("Re: x [#%d]", tk.TicketID)
	mc.deliver(t, graphfake.DeliverMail{Subject: bare, From: stranger, Text: "Me too."})
	own2 := mc.waitTicket(t, bare)
	if own.TicketID == tk.TicketID || own2.TicketID == tk.TicketID || own.EndUserID == tk.EndUserID {
		t.Fatalf("a stranger's mail joined ticket %d: %+v %+v", tk.TicketID, own, own2)
	}
	// The end user's bare reference opens a ticket too; the signed one
	// (without any threading header) joins.
	endUserBare := fmt.Sprintf("Re: y [#%d] %s", tk.TicketID, randid.Hex(3))
	mc.deliver(t, graphfake.DeliverMail{Subject: endUserBare, From: from, Text: "Bare."})
	if nt := mc.waitTicket(t, endUserBare); nt.TicketID == tk.TicketID {
		t.Fatal("a bare [#id] joined the ticket")
	}
	mc.deliver(t, graphfake.DeliverMail{Subject: "AW: " + replySubject, From: from, Text: "Thanks, waiting."})
	ms := mc.waitMessages(t, tk.TicketID, 3)
	if ms[2].SenderType != "EndUser" || ms[2].Message != "Thanks, waiting." {
		t.Fatalf("messages %+v", ms)
	}
	for _, m := range ms {
		if strings.Contains(m.Message, "refund instead") || m.Message == "Me too." {
			t.Fatalf("the stranger's mail is in the ticket: %+v", ms)
		}
	}
}
