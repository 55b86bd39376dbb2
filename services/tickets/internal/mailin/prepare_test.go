package mailin

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/tickets/internal/tickets"
)

func inbound() contracts.InboundMail {
	return contracts.InboundMail{
		CustomerID: 4, ChannelID: 7, FolderID: 2, Mailbox: "support@shop.example",
		ProviderMessageID: "AAMkAD=", InternetMessageID: " <new@mail.example> ", ConversationID: "AAQk=",
		InReplyTo: "<prev@shop.example>", References: []string{"<root@x>", "<mid@x>", "<prev@shop.example>"},
		Subject:  "Re: Order 4711 [#42]",
		From:     contracts.MailAddress{Name: "Ada Lovelace", Address: "Ada@Example.COM"},
		To:       []contracts.MailAddress{{Name: "Support", Address: "support@shop.example"}},
		Cc:       []contracts.MailAddress{{Name: "Bob\r\nX", Address: "bob@example.com"}},
		BodyText: "Thanks!\n\nOn Mon, Jan 8, 2024 at 9:15 AM Support <support@shop.example> wrote:\n> restart it\n",
		BodyHTML: `<p>Thanks!</p><script>x()</script>`, ReceivedAt: time.Date(2024, 1, 8, 10, 0, 0, 123456789, time.FixedZone("", 3600)),
		Attachments: []contracts.InboundAttachment{
			{Name: "log.txt", Size: 10, Object: "o1", SHA256: "ab"},
			{Name: "../huge.iso", Size: 1 << 30, Skipped: "too-large"},
			{Name: "item", Size: 5},
		},
		ImportedAt: time.Date(2024, 1, 8, 10, 0, 1, 0, time.UTC),
	}
}

func TestPrepare(t *testing.T) {
	in, err := Prepare(inbound())
	if err != nil {
		t.Fatal(err)
	}
	want := tickets.MailImport{
		CustomerID: 4,
		Sender:     contracts.MailAddress{Name: "Ada Lovelace", Address: "ada@example.com"},
		Subject:    "Re: Order 4711 [#42]",
		Text:       "Thanks!",
		ThreadIDs:  []string{"<prev@shop.example>", "<mid@x>", "<root@x>"},
		Mail: tickets.MailFacts{
			ChannelID: 7, ProviderMessageID: "AAMkAD=", InternetMessageID: "<new@mail.example>", ConversationID: "AAQk=",
			InReplyTo: "<prev@shop.example>", From: contracts.MailAddress{Name: "Ada Lovelace", Address: "ada@example.com"},
			To:         []contracts.MailAddress{{Name: "Support", Address: "support@shop.example"}},
			Cc:         []contracts.MailAddress{{Name: "Bob X", Address: "bob@example.com"}},
			Subject:    "Re: Order 4711 [#42]",
			ReceivedAt: time.Date(2024, 1, 8, 9, 0, 0, 123456000, time.UTC),
			HTML:       "<p>Thanks!</p>",
			Skipped: []tickets.SkippedAttachment{{Name: "huge.iso", Size: 1 << 30, Reason: "too-large"},
				{Name: "item", Size: 5, Reason: tickets.SkipNoBytes}},
		},
		// A reference is checked with the tickets secret (Importer), and
		// a bare "[#42]" is none.
		SubjectTicketID: 0,
	}
	if !reflect.DeepEqual(in, want) {
		t.Fatalf("prepared\n%+v\nwant\n%+v", in, want)
	}
}

func TestPrepareCases(t *testing.T) {
	long := strings.Repeat("é", tickets.MaxMessageLen+5)
	tests := []struct {
		name   string
		change func(*contracts.InboundMail)
		check  func(tickets.MailImport) bool
		reject bool
	}{
		{"no name: the local part", func(m *contracts.InboundMail) { m.From.Name = " " },
			func(in tickets.MailImport) bool { return in.Sender.Name == "Ada" && in.Mail.From.Name == "" }, false},
		{"no subject", func(m *contracts.InboundMail) { m.Subject = " \t" },
			func(in tickets.MailImport) bool {
				return in.Subject == NoSubject && in.Mail.Subject == "" && in.SubjectTicketID == 0
			}, false},
		{"a long subject is cut for the ticket", func(m *contracts.InboundMail) { m.Subject = strings.Repeat("s", 600) },
			func(in tickets.MailImport) bool {
				return len(in.Subject) == tickets.MaxSubjectLen && len(in.Mail.Subject) == 600
			}, false},
		{"a multi-line subject is one line", func(m *contracts.InboundMail) { m.Subject = "Order\r\n  4711\x00" },
			func(in tickets.MailImport) bool { return in.Subject == "Order 4711" }, false},
		{"no text: the subject", func(m *contracts.InboundMail) { m.BodyText, m.BodyHTML = "", "" },
			func(in tickets.MailImport) bool { return in.Text == "Re: Order 4711 [#42]" }, false},
		{"no text, no subject", func(m *contracts.InboundMail) { m.BodyText, m.BodyHTML, m.Subject = " ", "", "" },
			func(in tickets.MailImport) bool { return in.Text == NoText }, false},
		{"no text body: the HTML's text", func(m *contracts.InboundMail) { m.BodyText, m.BodyHTML = "", "<div>Hi<br>there</div>" },
			func(in tickets.MailImport) bool {
				return in.Text == "Hi\nthere" && in.Mail.HTML == "<div>Hi<br>there</div>"
			}, false},
		{"a long text is cut and marked", func(m *contracts.InboundMail) { m.BodyText = long },
			func(in tickets.MailImport) bool {
				return len([]rune(in.Text)) == tickets.MaxMessageLen && in.Mail.Truncated
			}, false},
		{"the worker's truncation is kept", func(m *contracts.InboundMail) { m.Truncated = true },
			func(in tickets.MailImport) bool { return in.Mail.Truncated }, false},
		{"NUL and invalid UTF-8 go", func(m *contracts.InboundMail) { m.BodyText = "a\x00b\xffc\x07d" },
			func(in tickets.MailImport) bool { return in.Text == "abcd" }, false},
		{"no received date: the import's", func(m *contracts.InboundMail) { m.ReceivedAt = time.Time{} },
			func(in tickets.MailImport) bool {
				return in.Mail.ReceivedAt.Equal(time.Date(2024, 1, 8, 10, 0, 1, 0, time.UTC))
			}, false},
		{"no threading headers", func(m *contracts.InboundMail) { m.InReplyTo, m.References = "", nil },
			func(in tickets.MailImport) bool { return len(in.ThreadIDs) == 0 }, false},
		{"sender with a display name in the address", func(m *contracts.InboundMail) { m.From.Address = "Ada <ada@example.com>" }, nil, true},
		{"no sender", func(m *contracts.InboundMail) { m.From = contracts.MailAddress{} }, nil, true},
		{"no provider id", func(m *contracts.InboundMail) { m.ProviderMessageID = " " }, nil, true},
		{"no customer", func(m *contracts.InboundMail) { m.CustomerID = 0 }, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := inbound()
			tt.change(&m)
			in, err := Prepare(m)
			var rej rejection
			if tt.reject {
				if !errors.As(err, &rej) {
					t.Fatalf("error %v, want a rejection", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(in) {
				t.Fatalf("prepared %+v", in)
			}
		})
	}
}
