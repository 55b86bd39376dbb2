package stack

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/smtpfake"
)

// MailRelay is the stack's SMTP relay (pkg/smtpfake): auth sends its mail
// (password-reset links, password-changed notices) through it over
// STARTTLS with the dev certificate and AUTH, and it keeps and prints what
// it accepts instead of delivering it: to the stack's log with a "[mail] "
// prefix (make run shows it) and to logs/mail.log. Tests read the mails
// from it.
type MailRelay struct {
	*smtpfake.Server
	// Env are the SMTP_* variables of auth.
	Env []string
	log *os.File
	mu  *sync.Mutex // serialises the log writes and Close
}

// Close stops the relay.
func (r *MailRelay) Close() error {
	err := r.Server.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(err, r.log.Close())
}

// MailFrom is the sender of the stack's mail.
const MailFrom = "Support Platform <no-reply@supportplatform.localhost>"

func startMailRelay(d *DevTLS, logDir string, log io.Writer) (*MailRelay, error) {
	pair, err := tls.LoadX509KeyPair(d.CertFile, d.KeyFile)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(logDir, "mail.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	password := randid.Hex(12)
	srv, err := smtpfake.Start("127.0.0.1:0", smtpfake.Options{
		TLS:      &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		Username: "auth", Password: password,
		OnMessage: func(m smtpfake.Message) {
			text := FormatMail(m)
			mu.Lock()
			defer mu.Unlock()
			_, _ = io.WriteString(f, text+"\n")
			if log != nil {
				for _, line := range strings.Split(text, "\n") {
					_, _ = io.WriteString(log, "[mail] "+line+"\n")
				}
			}
		},
	})
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	r := &MailRelay{Server: srv, Env: []string{
		"SMTP_ADDR=" + srv.Addr, "SMTP_USERNAME=auth", "SMTP_PASSWORD=" + password,
		"SMTP_TLS_CA_FILE=" + d.CAFile, "SMTP_FROM=" + MailFrom,
	}}
	r.log, r.mu = f, &mu
	return r, nil
}

// FormatMail renders an accepted mail for a developer to read: the
// envelope, the headers a reader cares about (decoded) and the body
// (quoted-printable decoded).
func FormatMail(m smtpfake.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "from %s to %s (%d bytes)\n", m.From, strings.Join(m.To, ", "), len(m.Data))
	pm, err := m.Parse()
	if err != nil {
		fmt.Fprintf(&b, "unparsable: %v\n%s", err, m.Data)
		return b.String()
	}
	dec := new(mime.WordDecoder)
	for _, h := range []string{"Date", "From", "To", "Subject", "Message-Id"} {
		v, err := dec.DecodeHeader(pm.Header.Get(h))
		if err != nil {
			v = pm.Header.Get(h)
		}
		fmt.Fprintf(&b, "%s: %s\n", h, v)
	}
	var r io.Reader = pm.Body
	if strings.EqualFold(pm.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		r = quotedprintable.NewReader(r)
	}
	body, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		fmt.Fprintf(&b, "body unreadable: %v\n", err)
	}
	b.WriteString("\n" + strings.ReplaceAll(strings.TrimRight(string(body), "\r\n"), "\r\n", "\n") + "\n-- end of mail " +
		strconv.Itoa(len(body)) + " bytes --")
	return b.String()
}
