// Package smtpfake is a local SMTP relay for tests and the development
// stack. It speaks real SMTP (github.com/emersion/go-smtp) and refuses what
// a relay that requires encryption refuses: every command that moves mail
// (and AUTH) before STARTTLS, and mail before authentication when
// credentials are set. It keeps what it accepts, can refuse the next
// messages with a chosen reply (to test retries), and hands each accepted
// message to an optional callback (the development stack logs them).
package smtpfake

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/mail"
	"sync"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one accepted mail.
type Message struct {
	From string
	To   []string
	// Data is the message as received (headers and body, CRLF lines).
	Data []byte
}

// Parse parses Data as an RFC 5322 message.
func (m Message) Parse() (*mail.Message, error) { return mail.ReadMessage(bytes.NewReader(m.Data)) }

// Options configure a Server.
type Options struct {
	// TLS is the certificate the server offers with STARTTLS (required).
	TLS *tls.Config
	// Username and Password, when set, are the only credentials AUTH PLAIN
	// accepts, and mail is refused before authentication.
	Username, Password string
	// OnMessage, when set, is called with every accepted message.
	OnMessage func(Message)
	// MaxMessageBytes bounds a message (default 10 MiB).
	MaxMessageBytes int64
}

// Server is a running fake relay.
type Server struct {
	// Addr is host:port of the listener.
	Addr string
	opts Options
	srv  *smtp.Server
	ln   net.Listener

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever a DATA is seen
	messages []Message
	attempts int // DATA commands seen, refused or accepted
	refuse   []*smtp.SMTPError
}

// Start serves on addr ("127.0.0.1:0" for any port).
func Start(addr string, opts Options) (*Server, error) {
	if opts.TLS == nil {
		return nil, errors.New("smtpfake: Options.TLS is required (the relay offers STARTTLS)")
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = 10 << 20
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: ln.Addr().String(), opts: opts, ln: ln, changed: make(chan struct{})}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &session{s: s, c: c}, nil }))
	s.srv.Domain = "smtpfake.localhost"
	s.srv.TLSConfig = opts.TLS
	s.srv.MaxMessageBytes = opts.MaxMessageBytes
	s.srv.MaxRecipients = 50
	s.srv.ErrorLog = discardLogger{}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// RefuseNext makes the next len(codes) messages be refused after DATA with
// these reply codes (4xx temporary, 5xx permanent), in order.
func (s *Server) RefuseNext(codes ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, code := range codes {
		e := &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCode{code / 100, 3, 0}, Message: "refused by smtpfake"}
		s.refuse = append(s.refuse, e)
	}
}

// Messages returns the accepted messages, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Attempts is how many messages were offered (DATA), refused or accepted.
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// Wait returns once cond holds for the accepted messages, or ctx ends.
func (s *Server) Wait(ctx context.Context, cond func([]Message) bool) ([]Message, error) {
	for {
		s.mu.Lock()
		msgs, ch := append([]Message(nil), s.messages...), s.changed
		s.mu.Unlock()
		if cond(msgs) {
			return msgs, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return msgs, ctx.Err()
		}
	}
}

type session struct {
	s    *Server
	c    *smtp.Conn
	auth bool
	from string
	to   []string
}

var (
	errNeedTLS  = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Must issue a STARTTLS command first"}
	errNeedAuth = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	errBadAuth  = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
)

func (ss *session) secure() bool {
	_, ok := ss.c.TLSConnectionState()
	return ok
}

func (ss *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if !ss.secure() {
		return nil, errNeedTLS
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if ss.s.opts.Username == "" || username != ss.s.opts.Username || password != ss.s.opts.Password {
			return errBadAuth
		}
		ss.auth = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	switch {
	case !ss.secure():
		return errNeedTLS
	case ss.s.opts.Username != "" && !ss.auth:
		return errNeedAuth
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if !ss.secure() {
		return errNeedTLS
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s := ss.s
	s.mu.Lock()
	s.attempts++
	var refuse *smtp.SMTPError
	if len(s.refuse) > 0 {
		refuse, s.refuse = s.refuse[0], s.refuse[1:]
	}
	m := Message{From: ss.from, To: append([]string(nil), ss.to...), Data: data}
	if refuse == nil {
		s.messages = append(s.messages, m)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if refuse != nil {
		return refuse
	}
	if s.opts.OnMessage != nil {
		s.opts.OnMessage(m)
	}
	return nil
}

func (ss *session) Reset()        { ss.from, ss.to = "", nil }
func (ss *session) Logout() error { return nil }

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}
