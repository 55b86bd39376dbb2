// Package mail sends auth's own transactional mail (the password-reset link,
// the "your password was changed" notice): templates per language, the
// message with its headers, an SMTP client that insists on STARTTLS, and the
// sender loop that works the mail queue (a table of the auth schema written
// in the transaction of the change the mail announces).
package mail

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"time"
)

const minute = time.Minute

// Queued is one mail of the queue, as the sender loop claimed it.
type Queued struct {
	ID       int64
	Kind     string // KindPasswordReset, KindPasswordChanged
	To       string // the account's address
	Name     string // the account's name
	Language string // the account's language; empty: DefaultLanguage
	// Link is the reset link holding the raw token (KindPasswordReset
	// only). The queue keeps it until the row is settled, then clears it.
	Link      string
	ExpiresAt time.Time // when Link stops working (zero: no link)
	// MessageKey is the random left part of the Message-ID, fixed when the
	// row was queued, so every attempt of one mail has the same Message-ID.
	MessageKey string
	CreatedAt  time.Time
	Attempts   int // including the current one
}

// compose builds the RFC 5322 message (CRLF lines): a text/plain UTF-8
// body in quoted-printable, the subject RFC 2047-encoded.
func compose(q Queued, from *mail.Address, now time.Time) ([]byte, error) {
	subject, body, err := render(q)
	if err != nil {
		return nil, err
	}
	to, err := mail.ParseAddress(q.To)
	if err != nil {
		return nil, fmt.Errorf("mail: recipient: %w", err)
	}
	to.Name = q.Name
	if q.MessageKey == "" || strings.ContainsFunc(q.MessageKey, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	}) {
		return nil, errors.New("mail: bad message key")
	}
	var b bytes.Buffer
	h := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	h("Date", now.Format(time.RFC1123Z))
	h("From", from.String())
	h("To", to.String())
	h("Subject", mime.QEncoding.Encode("utf-8", subject))
	h("Message-ID", messageID(q.MessageKey, from))
	h("MIME-Version", "1.0")
	h("Content-Type", "text/plain; charset=utf-8")
	h("Content-Transfer-Encoding", "quoted-printable")
	h("Content-Language", Language(q.Language))
	// RFC 3834: no auto-replies to this mail.
	h("Auto-Submitted", "auto-generated")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(strings.ReplaceAll(body, "\n", "\r\n") + "\r\n")); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// messageID is the Message-ID of a mail: its key at the sender's domain.
func messageID(key string, from *mail.Address) string {
	domain := "localhost"
	if _, d, ok := strings.Cut(from.Address, "@"); ok && d != "" {
		domain = d
	}
	return "<" + key + ".auth@" + domain + ">"
}
