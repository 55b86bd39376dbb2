package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"time"
)

// SMTPConfig is the relay auth sends through.
type SMTPConfig struct {
	Addr string // host:port of the relay (usually port 587)
	// Username and Password, when set, authenticate with AUTH PLAIN, which
	// only ever travels inside TLS.
	Username, Password string
	// TLS verifies the relay's certificate (RootCAs from the CA file,
	// ServerName defaulting to Addr's host).
	TLS *tls.Config
	// HelloName is the name given in EHLO (default "localhost").
	HelloName string
	// Timeout bounds one whole delivery: connect, STARTTLS, AUTH, the
	// envelope, the data and the relay's answer.
	Timeout time.Duration
}

// SMTP delivers messages to one relay with net/smtp. It refuses to send
// anything over a connection that has not been upgraded with STARTTLS.
type SMTP struct {
	cfg  SMTPConfig
	host string
}

// NewSMTP checks cfg and returns the client.
func NewSMTP(cfg SMTPConfig) (*SMTP, error) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("mail: SMTP address %q: %w", cfg.Addr, err)
	}
	if (cfg.Username == "") != (cfg.Password == "") {
		return nil, errors.New("mail: set both the SMTP username and password, or neither")
	}
	if cfg.TLS == nil {
		cfg.TLS = &tls.Config{}
	}
	cfg.TLS = cfg.TLS.Clone()
	if cfg.TLS.ServerName == "" {
		cfg.TLS.ServerName = host
	}
	if cfg.TLS.MinVersion == 0 {
		cfg.TLS.MinVersion = tls.VersionTLS12
	}
	if cfg.HelloName == "" {
		cfg.HelloName = "localhost"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	return &SMTP{cfg: cfg, host: host}, nil
}

// SendError says what a failed delivery means for the mail.
type SendError struct {
	Err error
	// Permanent: the relay refused this mail for good (a 5xx reply to the
	// recipient or the data); sending it again would be refused again.
	Permanent bool
	// Unknown: the data was sent but the relay's answer never came, so the
	// mail may have been accepted. It must not be sent again (a second copy
	// could reach the user).
	Unknown bool
}

func (e *SendError) Error() string { return e.Err.Error() }
func (e *SendError) Unwrap() error { return e.Err }

// Send delivers one message. A failure is a *SendError; one that is neither
// Permanent nor Unknown left nothing at the relay and may be retried.
func (c *SMTP) Send(ctx context.Context, from, to string, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	d := net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", c.cfg.Addr)
	if err != nil {
		return &SendError{Err: fmt.Errorf("smtp connect: %w", err)}
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	// A cancelled context (shutdown) ends the exchange at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	cl, err := smtp.NewClient(conn, c.host)
	if err != nil {
		_ = conn.Close()
		return &SendError{Err: fmt.Errorf("smtp greeting: %w", err)}
	}
	defer func() { _ = cl.Close() }()
	if err := cl.Hello(c.cfg.HelloName); err != nil {
		return &SendError{Err: fmt.Errorf("smtp EHLO: %w", err)}
	}
	if ok, _ := cl.Extension("STARTTLS"); !ok {
		return &SendError{Err: errors.New("smtp: the relay does not offer STARTTLS; refusing to send in clear")}
	}
	if err := cl.StartTLS(c.cfg.TLS); err != nil {
		return &SendError{Err: fmt.Errorf("smtp STARTTLS: %w", err)}
	}
	if c.cfg.Username != "" {
		if err := cl.Auth(smtp.PlainAuth("", c.cfg.Username, c.cfg.Password, c.host)); err != nil {
			return &SendError{Err: fmt.Errorf("smtp AUTH: %w", err)}
		}
	}
	if err := cl.Mail(from); err != nil {
		return &SendError{Err: fmt.Errorf("smtp MAIL FROM: %w", err)}
	}
	if err := cl.Rcpt(to); err != nil {
		return &SendError{Err: fmt.Errorf("smtp RCPT TO: %w", err), Permanent: permanent(err)}
	}
	w, err := cl.Data()
	if err != nil {
		return &SendError{Err: fmt.Errorf("smtp DATA: %w", err)}
	}
	if _, err := w.Write(msg); err != nil {
		// The terminating dot was not sent: the relay discards what it got.
		return &SendError{Err: fmt.Errorf("smtp data: %w", err)}
	}
	// Close sends the final dot and reads the relay's answer: only a reply
	// says what happened; without one the mail may have been taken.
	if err := w.Close(); err != nil {
		var tp *textproto.Error
		if errors.As(err, &tp) {
			return &SendError{Err: fmt.Errorf("smtp message refused: %w", err), Permanent: tp.Code >= 500}
		}
		return &SendError{Err: fmt.Errorf("smtp: no answer after the data: %w", err), Unknown: true}
	}
	// The mail is accepted; a failed QUIT changes nothing.
	_ = cl.Quit()
	return nil
}

func permanent(err error) bool {
	var tp *textproto.Error
	return errors.As(err, &tp) && tp.Code >= 500
}
