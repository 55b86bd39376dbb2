package mail_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/clocktest"
	pgpkg "supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/smtpfake"
	"supportplatform.dev/services/auth/internal/auth"
	"supportplatform.dev/services/auth/internal/mail"
	"supportplatform.dev/services/auth/internal/postgres"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

const (
	relayUser = "relay-user"
	relayPass = "relay-secret"
)

// relay is an in-process SMTP server that requires STARTTLS and AUTH, with
// a self-signed certificate the client trusts through its CA pool.
func relay(t *testing.T, onMessage ...func(smtpfake.Message)) (*smtpfake.Server, *x509.CertPool) {
	t.Helper()
	cfg, certPEM, err := smtpfake.SelfSigned(time.Now(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	o := smtpfake.Options{TLS: cfg, Username: relayUser, Password: relayPass}
	if len(onMessage) > 0 {
		o.OnMessage = onMessage[0]
	}
	srv, err := smtpfake.Start("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return srv, pool
}

func client(t *testing.T, addr string, roots *x509.CertPool, user, pass string) *mail.SMTP {
	t.Helper()
	c, err := mail.NewSMTP(mail.SMTPConfig{Addr: addr, Username: user, Password: pass, TLS: &tls.Config{RootCAs: roots}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type fixture struct {
	store *postgres.Store
	db    *pgxpool.Pool
	clock *clocktest.Clock
	relay *smtpfake.Server
	w     *mail.Worker
	acct  auth.Account
}

func newFixture(t *testing.T, onMessage ...func(smtpfake.Message)) *fixture {
	t.Helper()
	pool, err := pgpkg.Open(context.Background(), pgpkg.Options{URL: pgtest.NewDatabase(t), Schema: postgres.Schema, Migrations: postgres.Migrations()}, discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f := &fixture{store: postgres.New(pool), db: pool, clock: clocktest.New(t0)}
	var roots *x509.CertPool
	f.relay, roots = relay(t, onMessage...)
	f.w, err = mail.NewWorker(f.store, client(t, f.relay.Addr, roots, relayUser, relayPass), "Support Desk <no-reply@support.example>",
		mail.WorkerOptions{MaxAttempts: 3}, discard, f.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	_, f.acct, err = f.store.Bootstrap(context.Background(), "Acme", auth.Account{Email: "jörg@acme.test", Name: "Jörg Müller", PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) requestReset(t *testing.T, token string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(token))
	link := "https://support.example/reset-password#token=" + token
	now := f.clock.Now()
	if err := f.store.RequestPasswordReset(context.Background(), f.acct.Email,
		auth.PasswordReset{TokenHash: sum[:], Link: link, CreatedAt: now, ExpiresAt: now.Add(auth.ResetTTL)}); err != nil {
		t.Fatal(err)
	}
	return link
}

func (f *fixture) runOnce(t *testing.T) int {
	t.Helper()
	n, err := f.w.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type row struct {
	state    string
	attempts int
	link     *string
	due      time.Time
}

func (f *fixture) rows(t *testing.T) []row {
	t.Helper()
	rs, err := f.db.Query(context.Background(), `SELECT state, attempts, link, next_attempt_at FROM mail_queue ORDER BY mail_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.state, &r.attempts, &r.link, &r.due); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func body(t *testing.T, m smtpfake.Message) (map[string]string, string) {
	t.Helper()
	pm, err := m.Parse()
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{}
	for k := range pm.Header {
		h[k] = pm.Header.Get(k)
	}
	b, err := io.ReadAll(quotedprintable.NewReader(pm.Body))
	if err != nil {
		t.Fatal(err)
	}
	return h, string(b)
}

func TestResetMailOverSTARTTLSInTheAccountsLanguage(t *testing.T) {
	f := newFixture(t)
	if _, err := f.db.Exec(context.Background(), `UPDATE accounts SET language = 'de' WHERE account_id = $1`, f.acct.ID); err != nil {
		t.Fatal(err)
	}
	link := f.requestReset(t, "raw-token-1")
	if n := f.runOnce(t); n != 1 {
		t.Fatalf("claimed %d mails, want 1", n)
	}
	msgs := f.relay.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d mails at the relay, want 1", len(msgs))
	}
	m := msgs[0]
	if m.From != "no-reply@support.example" || len(m.To) != 1 || m.To[0] != "jörg@acme.test" {
		t.Fatalf("envelope %q -> %q", m.From, m.To)
	}
	h, text := body(t, m)
	subject, err := new(mime.WordDecoder).DecodeHeader(h["Subject"])
	if err != nil || subject != "Passwort zurücksetzen" || !strings.HasPrefix(h["Subject"], "=?utf-8?q?") {
		t.Fatalf("subject %q (raw %q) %v", subject, h["Subject"], err)
	}
	if date, err := time.Parse(time.RFC1123Z, h["Date"]); err != nil || !date.Equal(t0) {
		t.Fatalf("Date %q %v", h["Date"], err)
	}
	for k, want := range map[string]string{"Mime-Version": "1.0", "Content-Type": "text/plain; charset=utf-8",
		"Content-Transfer-Encoding": "quoted-printable", "Auto-Submitted": "auto-generated", "Content-Language": "de",
		"From": `"Support Desk" <no-reply@support.example>`} {
		if h[k] != want {
			t.Errorf("%s = %q, want %q", k, h[k], want)
		}
	}
	if !strings.HasPrefix(h["Message-Id"], "<") || !strings.HasSuffix(h["Message-Id"], ".auth@support.example>") {
		t.Errorf("Message-ID %q", h["Message-Id"])
	}
	if to, err := new(mime.WordDecoder).DecodeHeader(h["To"]); err != nil || !strings.Contains(to, "Jörg Müller") {
		t.Errorf("To %q %v", h["To"], err)
	}
	if !strings.Contains(text, link+"\r\n") || !strings.Contains(text, "Hallo Jörg Müller") || !strings.Contains(text, "30 Minuten") {
		t.Fatalf("body:\n%s", text)
	}
	rs := f.rows(t)
	if len(rs) != 1 || rs[0].state != mail.StateSent || rs[0].attempts != 1 || rs[0].link != nil {
		t.Fatalf("queue after sending: %+v", rs)
	}
	// Sent once: later passes find nothing to send.
	f.clock.Advance(time.Hour)
	if n := f.runOnce(t); n != 0 || f.relay.Attempts() != 1 {
		t.Fatalf("a later pass claimed %d and offered %d mails", n, f.relay.Attempts())
	}
}

func TestRefusedMailIsRetriedAndDeliveredOnce(t *testing.T) {
	f := newFixture(t)
	link := f.requestReset(t, "raw-token-2")
	f.relay.RefuseNext(451, 421)
	f.runOnce(t)
	rs := f.rows(t)
	if len(rs) != 1 || rs[0].state != mail.StatePending || rs[0].attempts != 1 || !rs[0].due.Equal(t0.Add(30*time.Second)) ||
		rs[0].link == nil || *rs[0].link != link {
		t.Fatalf("after a 451: %+v", rs)
	}
	// Not due yet: nothing is offered.
	f.clock.Advance(29 * time.Second)
	if n := f.runOnce(t); n != 0 || f.relay.Attempts() != 1 {
		t.Fatalf("claimed %d before the backoff ended (%d offers)", n, f.relay.Attempts())
	}
	f.clock.Advance(time.Second)
	f.runOnce(t)
	if rs := f.rows(t); rs[0].state != mail.StatePending || rs[0].attempts != 2 || !rs[0].due.Equal(t0.Add(90*time.Second)) {
		t.Fatalf("after a second refusal: %+v (backoff doubles)", rs)
	}
	f.clock.Advance(time.Minute)
	f.runOnce(t)
	f.clock.Advance(time.Hour)
	f.runOnce(t)
	if msgs := f.relay.Messages(); len(msgs) != 1 || f.relay.Attempts() != 3 {
		t.Fatalf("%d mails delivered in %d offers, want 1 in 3", len(msgs), f.relay.Attempts())
	}
	if rs := f.rows(t); rs[0].state != mail.StateSent || rs[0].attempts != 3 || rs[0].link != nil {
		t.Fatalf("after delivery: %+v", rs)
	}
}

func TestMailFailsForGoodWithoutLink(t *testing.T) {
	t.Run("permanent refusal", func(t *testing.T) {
		f := newFixture(t)
		f.requestReset(t, "raw-token-3")
		f.relay.RefuseNext(550)
		f.runOnce(t)
		f.clock.Advance(time.Hour)
		f.runOnce(t)
		if rs := f.rows(t); len(rs) != 1 || rs[0].state != mail.StateFailed || rs[0].link != nil || f.relay.Attempts() != 1 {
			t.Fatalf("after a 550: %+v, %d offers", rs, f.relay.Attempts())
		}
	})
	t.Run("out of attempts", func(t *testing.T) {
		f := newFixture(t)
		f.requestReset(t, "raw-token-4")
		f.relay.RefuseNext(451, 451, 451, 451)
		for range 5 {
			f.runOnce(t)
			f.clock.Advance(5 * time.Minute)
		}
		if rs := f.rows(t); len(rs) != 1 || rs[0].state != mail.StateFailed || rs[0].attempts != 3 || rs[0].link != nil ||
			f.relay.Attempts() != 3 {
			t.Fatalf("after 3 refusals: %+v, %d offers", rs, f.relay.Attempts())
		}
	})
	t.Run("link expired before delivery", func(t *testing.T) {
		f := newFixture(t)
		f.requestReset(t, "raw-token-5")
		f.clock.Advance(auth.ResetTTL)
		f.runOnce(t)
		if rs := f.rows(t); len(rs) != 1 || rs[0].state != mail.StateExpired || rs[0].link != nil || f.relay.Attempts() != 0 {
			t.Fatalf("expired: %+v, %d offers", rs, f.relay.Attempts())
		}
	})
	t.Run("sender died mid-delivery", func(t *testing.T) {
		f := newFixture(t)
		f.requestReset(t, "raw-token-6")
		// Another sender claimed it and stopped before settling it.
		if _, err := f.store.ClaimMails(context.Background(), t0, 10); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(9 * time.Minute)
		f.runOnce(t)
		if rs := f.rows(t); rs[0].state != mail.StateSending {
			t.Fatalf("abandoned too early: %+v", rs)
		}
		f.clock.Advance(2 * time.Minute)
		f.runOnce(t)
		if rs := f.rows(t); len(rs) != 1 || rs[0].state != mail.StateUnknown || rs[0].link != nil || f.relay.Attempts() != 0 {
			t.Fatalf("abandoned: %+v, %d offers (at most once: never resent)", rs, f.relay.Attempts())
		}
	})
}

// Concurrent senders (replicas) never claim the same row.
func TestClaimsAreDisjoint(t *testing.T) {
	f := newFixture(t)
	for i := range 20 {
		f.requestReset(t, "tok-"+string(rune('a'+i)))
	}
	got := make(chan []mail.Queued, 4)
	for range 4 {
		go func() {
			q, err := f.store.ClaimMails(context.Background(), t0, 20)
			if err != nil {
				t.Error(err)
			}
			got <- q
		}()
	}
	seen := map[int64]bool{}
	for range 4 {
		for _, q := range <-got {
			if seen[q.ID] {
				t.Fatalf("mail %d claimed twice", q.ID)
			}
			seen[q.ID] = true
		}
	}
	if len(seen) != 20 {
		t.Fatalf("%d mails claimed, want 20", len(seen))
	}
}

func TestPasswordChangedNotice(t *testing.T) {
	f := newFixture(t)
	if _, err := f.db.Exec(context.Background(), `UPDATE accounts SET language = 'fr' WHERE account_id = $1`, f.acct.ID); err != nil {
		t.Fatal(err)
	}
	f.requestReset(t, "raw-token-7")
	sum := sha256.Sum256([]byte("raw-token-7"))
	if _, err := f.store.ResetPassword(context.Background(), sum[:], t0.Add(time.Minute), "new-hash"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	f.runOnce(t)
	msgs := f.relay.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d mails, want only the notice (the queued reset link is void)", len(msgs))
	}
	h, text := body(t, msgs[0])
	if s, _ := new(mime.WordDecoder).DecodeHeader(h["Subject"]); s != "Votre mot de passe a été modifié" ||
		!strings.Contains(text, "2026-03-01 09:01 UTC") || strings.Contains(text, "raw-token-7") {
		t.Fatalf("notice %q:\n%s", s, text)
	}
}

func TestLanguageFallsBackToEnglish(t *testing.T) {
	for tag, want := range map[string]string{"": "en", "de": "de", "DE-at": "de", "es": "es", "fr-CA": "fr", "pt": "en", "x\r\n": "en"} {
		if got := mail.Language(tag); got != want {
			t.Errorf("Language(%q) = %q, want %q", tag, got, want)
		}
	}
}

func TestSMTPRefusesWhatARelayRefuses(t *testing.T) {
	t.Run("no STARTTLS offered", func(t *testing.T) {
		// A relay without TLS: the client must not send in clear.
		var got int
		srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &countSession{n: &got}, nil }))
		srv.AllowInsecureAuth = true
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		err = client(t, ln.Addr().String(), nil, "", "").Send(context.Background(), "a@b.test", "c@d.test", []byte("Subject: x\r\n\r\nx\r\n"))
		var se *mail.SendError
		if !errors.As(err, &se) || se.Permanent || se.Unknown || !strings.Contains(err.Error(), "STARTTLS") || got != 0 {
			t.Fatalf("err %v, %d mails taken in clear", err, got)
		}
	})
	srv, roots := relay(t)
	for name, c := range map[string]*mail.SMTP{
		"untrusted certificate": client(t, srv.Addr, x509.NewCertPool(), relayUser, relayPass),
		"wrong password":        client(t, srv.Addr, roots, relayUser, "wrong"),
		"no AUTH":               client(t, srv.Addr, roots, "", ""),
	} {
		t.Run(name, func(t *testing.T) {
			err := c.Send(context.Background(), "a@b.test", "c@d.test", []byte("Subject: x\r\n\r\nx\r\n"))
			var se *mail.SendError
			if !errors.As(err, &se) || se.Permanent || se.Unknown {
				t.Fatalf("err %v, want a retryable SendError", err)
			}
		})
	}
	if n := srv.Attempts(); n != 0 {
		t.Fatalf("%d messages offered to the relay", n)
	}
	if err := client(t, srv.Addr, roots, relayUser, relayPass).Send(context.Background(), "a@b.test", "c@d.test",
		[]byte("Subject: x\r\n\r\nx\r\n")); err != nil || len(srv.Messages()) != 1 {
		t.Fatalf("the right client: %v, %d messages", err, len(srv.Messages()))
	}
}

type countSession struct{ n *int }

func (s *countSession) Reset()                               {}
func (s *countSession) Logout() error                        { return nil }
func (s *countSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *countSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *countSession) Data(r io.Reader) error               { *s.n++; _, err := io.ReadAll(r); return err }

// A sender that stops puts the mails it claimed and did not try back. The
// mail in delivery when it stopped had reached the relay; whether its
// answer still came (sent) or was cut off (unknown), it is never sent again.
func TestStoppedSenderPutsUntriedMailsBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	// The relay's first accepted mail stops the sender before the relay
	// answers it.
	f := newFixture(t, func(smtpfake.Message) { cancel() })
	f.requestReset(t, "raw-token-8")
	f.requestReset(t, "raw-token-9")
	if n, err := f.w.RunOnce(ctx); n != 2 || !errors.Is(err, context.Canceled) {
		t.Fatalf("RunOnce stopped mid-batch: %d claimed, %v", n, err)
	}
	rs := f.rows(t)
	if len(rs) != 2 || (rs[0].state != mail.StateUnknown && rs[0].state != mail.StateSent) || rs[0].link != nil || rs[1].state != mail.StatePending || rs[1].link == nil || f.relay.Attempts() != 1 {
		t.Fatalf("after the stop: %+v, %d offers", rs, f.relay.Attempts())
	}
	f.runOnce(t)
	if msgs := f.relay.Messages(); len(msgs) != 2 || f.relay.Attempts() != 2 {
		t.Fatalf("%d mails in %d offers after the restart, want 2 in 2", len(msgs), f.relay.Attempts())
	}
}
