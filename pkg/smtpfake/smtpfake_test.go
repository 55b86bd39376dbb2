package smtpfake

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/smtp"
	"net/textproto"
	"testing"
	"time"
)

// The relay refuses mail in clear and without AUTH, like a submission
// server that requires both, and keeps what it accepts.
func TestRelayRequiresSTARTTLSAndAUTH(t *testing.T) {
	cfg, caPEM, err := SelfSigned(time.Now(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Start("127.0.0.1:0", Options{TLS: cfg, Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	code := func(err error) int {
		var tp *textproto.Error
		if errors.As(err, &tp) {
			return tp.Code
		}
		return 0
	}

	tlsCfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	bad, err := smtp.Dial(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.StartTLS(tlsCfg); err != nil {
		t.Fatal(err)
	}
	// net/smtp ends the session after a failed AUTH.
	if err := bad.Auth(smtp.PlainAuth("", "u", "wrong", "127.0.0.1")); code(err) != 535 {
		t.Fatalf("AUTH with a wrong password: %v, want 535", err)
	}

	c, err := smtp.Dial(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("a@b.test"); code(err) != 530 {
		t.Fatalf("MAIL in clear: %v, want 530", err)
	}
	if err := c.StartTLS(tlsCfg); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("a@b.test"); code(err) != 530 {
		t.Fatalf("MAIL without AUTH: %v, want 530", err)
	}
	if err := c.Auth(smtp.PlainAuth("", "u", "p", "127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	send := func() error {
		if err := c.Mail("a@b.test"); err != nil {
			return err
		}
		if err := c.Rcpt("c@d.test"); err != nil {
			return err
		}
		w, err := c.Data()
		if err != nil {
			return err
		}
		if _, err := w.Write([]byte("Subject: hi\r\n\r\nhello\r\n")); err != nil {
			return err
		}
		return w.Close()
	}
	srv.RefuseNext(451)
	if err := send(); code(err) != 451 {
		t.Fatalf("refused send: %v, want 451", err)
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	_ = c.Quit()
	msgs := srv.Messages()
	if len(msgs) != 1 || srv.Attempts() != 2 || msgs[0].From != "a@b.test" || msgs[0].To[0] != "c@d.test" {
		t.Fatalf("kept %+v after %d offers", msgs, srv.Attempts())
	}
	if m, err := msgs[0].Parse(); err != nil || m.Header.Get("Subject") != "hi" {
		t.Fatalf("parse: %v", err)
	}
}
