package mailin

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/textfield"
	"supportplatform.dev/services/tickets/internal/mailtext"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Texts standing in for what a mail lacks.
const (
	// NoSubject is the subject of a ticket opened by a mail without one.
	NoSubject = "(no subject)"
	// NoText is the text of a message made from a mail with neither text
	// nor subject (a mail with attachments only takes its subject).
	NoText = "(no text)"
	// maxThreadIDs bounds the Message-IDs a mail is threaded by (the
	// newest References are the ones that matter).
	maxThreadIDs = 50
)

// rejection is a mail that can never be imported (terminated, not
// redelivered).
type rejection struct{ reason string }

func (r rejection) Error() string { return "mail rejected: " + r.reason }

func reject(format string, args ...any) error { return rejection{fmt.Sprintf(format, args...)} }

// Prepare validates and cleans an inbound mail into what the store
// imports, without its attachments' bytes (Importer copies them):
//
//   - the sender is From; its address must be one bare address (stored in
//     lower case); the name is the From header's, or the address's local
//     part when it has none, on one line and cut to tickets.MaxNameLen;
//   - the subject of a new ticket is the mail's on one line, cut to
//     tickets.MaxSubjectLen, or NoSubject;
//   - the text is the text body's new text (mailtext.NewText; the text of
//     the HTML body when there is no text body), cut to
//     tickets.MaxMessageLen (Truncated set); when nothing is left, the
//     subject, or NoText without one;
//   - the HTML body is sanitised (mailtext.SanitizeHTML);
//   - ThreadIDs are In-Reply-To, then References newest first (the
//     subject's ticket reference needs the tickets secret: Importer);
//   - the attachments the import worker did not carry are listed as
//     skipped with its reason.
//
// Text reaching PostgreSQL is valid UTF-8 without NUL.
func Prepare(m contracts.InboundMail) (tickets.MailImport, error) {
	if m.CustomerID <= 0 || m.ChannelID <= 0 || strings.TrimSpace(m.ProviderMessageID) == "" {
		return tickets.MailImport{}, reject("no customer, channel or provider message id")
	}
	raw := strings.TrimSpace(m.From.Address)
	address, ok := textfield.Email(raw)
	if !ok {
		return tickets.MailImport{}, reject("the sender %q is not one e-mail address", clean(m.From.Address))
	}
	fromName := cut(line(m.From.Name), tickets.MaxNameLen)
	name := fromName
	if name == "" {
		// The local part as written ("Ada" of Ada@Example.com).
		name = cut(line(raw[:strings.LastIndexByte(raw, '@')]), tickets.MaxNameLen)
	}
	subject := line(m.Subject)
	ticketSubject := cut(subject, tickets.MaxSubjectLen)
	if ticketSubject == "" {
		ticketSubject = NoSubject
	}

	body := m.BodyText
	if strings.TrimSpace(body) == "" && strings.TrimSpace(m.BodyHTML) != "" {
		body = mailtext.HTMLText(m.BodyHTML)
	}
	text := strings.TrimSpace(multiline(mailtext.NewText(clean(body))))
	truncated := m.Truncated
	if utf8.RuneCountInString(text) > tickets.MaxMessageLen {
		text, truncated = strings.TrimSpace(cut(text, tickets.MaxMessageLen)), true
	}
	if text == "" {
		text = ticketSubject
		if subject == "" {
			text = NoText
		}
	}

	receivedAt := m.ReceivedAt
	if receivedAt.IsZero() {
		receivedAt = m.ImportedAt
	}
	in := tickets.MailImport{
		CustomerID: m.CustomerID,
		Sender:     contracts.MailAddress{Name: name, Address: address},
		Subject:    ticketSubject,
		Text:       text,
		ThreadIDs:  threadIDs(m.InReplyTo, m.References),
		Mail: tickets.MailFacts{
			ChannelID:         m.ChannelID,
			ProviderMessageID: clean(m.ProviderMessageID),
			InternetMessageID: clean(strings.TrimSpace(m.InternetMessageID)),
			ConversationID:    clean(strings.TrimSpace(m.ConversationID)),
			InReplyTo:         clean(strings.TrimSpace(m.InReplyTo)),
			From:              contracts.MailAddress{Name: fromName, Address: address},
			To:                addresses(m.To),
			Cc:                addresses(m.Cc),
			Subject:           subject,
			ReceivedAt:        receivedAt.UTC().Truncate(time.Microsecond),
			HTML:              mailtext.SanitizeHTML(clean(m.BodyHTML)),
			Truncated:         truncated,
		},
	}
	for _, a := range m.Attachments {
		if a.Object == "" {
			reason := line(a.Skipped)
			if reason == "" {
				reason = tickets.SkipNoBytes
			}
			in.Mail.Skipped = append(in.Mail.Skipped, tickets.SkippedAttachment{Name: tickets.CleanFileName(a.Name), Size: a.Size, Reason: reason})
		}
	}
	return in, nil
}

// threadIDs are In-Reply-To, then References newest (last) first, each
// once, at most maxThreadIDs.
func threadIDs(inReplyTo string, references []string) []string {
	var ids []string
	add := func(id string) {
		id = clean(strings.TrimSpace(id))
		if id != "" && !slices.Contains(ids, id) && len(ids) < maxThreadIDs {
			ids = append(ids, id)
		}
	}
	add(inReplyTo)
	for i := len(references) - 1; i >= 0; i-- {
		add(references[i])
	}
	return ids
}

func addresses(in []contracts.MailAddress) []contracts.MailAddress {
	out := make([]contracts.MailAddress, 0, len(in))
	for _, a := range in {
		out = append(out, contracts.MailAddress{Name: line(a.Name), Address: line(a.Address)})
	}
	return out
}

// clean makes s valid UTF-8 without NUL (PostgreSQL refuses both).
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, ""), "\x00", "")
}

// line is s on one line: control and format characters as spaces, runs of
// spaces as one, trimmed.
func line(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, clean(s))
	return strings.Join(strings.Fields(s), " ")
}

// multiline drops the control characters of a text but line breaks and
// tabs.
func multiline(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, s)
}

// cut returns at most n characters of s.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return strings.TrimSpace(s[:k])
		}
		i++
	}
	return s
}
