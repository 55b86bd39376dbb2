// Command auth is the authentication service: logins, tokens, JWKS, the
// current customer, password reset and accounts.
//
//	auth              serve (migrations are applied at start)
//	auth migrate      apply migrations and exit
//	auth bootstrap -customer NAME -email ADDR -password PW [-name NAME] [-language xx]
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/ratelimit"
	"supportplatform.dev/services/auth/internal/auth"
	"supportplatform.dev/services/auth/internal/httpapi"
	"supportplatform.dev/services/auth/internal/keys"
	"supportplatform.dev/services/auth/internal/mail"
	"supportplatform.dev/services/auth/internal/postgres"
	"supportplatform.dev/services/auth/internal/rpc"
)

// Config of the auth service.
type Config struct {
	HTTPAddr string `env:"HTTP_ADDR" default:"127.0.0.1:8081" desc:"listen address of the auth service"`
	config.Common
	SigningKeyFile   string        `env:"AUTH_SIGNING_KEY_FILE" default:"var/auth-signing-key.pem" desc:"PKCS#8 PEM Ed25519 key that signs access tokens"`
	DevKeygen        bool          `env:"AUTH_DEV_KEYGEN" default:"false" desc:"generate and persist the signing key when the file is missing (development)"`
	TokenTTL         time.Duration `env:"AUTH_TOKEN_TTL" default:"60m" desc:"access token lifetime"`
	LoginMaxFailures int           `env:"AUTH_LOGIN_MAX_FAILURES" default:"5" desc:"failed logins per (e-mail address, client IP) per window before 429 for that pair"`
	LoginMaxFailIP   int           `env:"AUTH_LOGIN_MAX_FAILURES_IP" default:"50" desc:"failed logins per client IP per window before 429"`
	LoginWindow      time.Duration `env:"AUTH_LOGIN_WINDOW" default:"15m" desc:"window of the failed-login counters"`
	LoginBackoffFree int           `env:"AUTH_LOGIN_BACKOFF_AFTER" default:"5" desc:"login attempts on one e-mail address (from any IP, since its last successful login) before each further one waits"`
	LoginBackoffMin  time.Duration `env:"AUTH_LOGIN_BACKOFF_MIN" default:"1s" desc:"first wait of an address's login backoff; it doubles with each further attempt"`
	LoginBackoffMax  time.Duration `env:"AUTH_LOGIN_BACKOFF_MAX" default:"1m" desc:"longest wait between two login attempts on one address (a slowdown, never a lockout)"`
	CreateLimit      int           `env:"AUTH_ACCOUNT_CREATE_LIMIT" default:"20" desc:"accounts a customer may create per window before 429"`
	ResetLimit       int           `env:"AUTH_RESET_LIMIT" default:"5" desc:"password-reset requests per e-mail address (known or not) per window before 429"`
	ResetWindow      time.Duration `env:"AUTH_RESET_WINDOW" default:"1h" desc:"window of the password-reset counter"`
	CreateWindow     time.Duration `env:"AUTH_ACCOUNT_CREATE_WINDOW" default:"1h" desc:"window of the account-creation counter"`
	ResetURL         string        `env:"AUTH_RESET_URL" default:"" desc:"page of the password-reset link: the mail links to it followed by #token=<token> (required with SMTP_ADDR)"`
	SMTPAddr         string        `env:"SMTP_ADDR" default:"" desc:"host:port of the SMTP relay auth sends its mail through, always with STARTTLS; empty = mails are queued but not sent"`
	SMTPUsername     string        `env:"SMTP_USERNAME" default:"" desc:"AUTH PLAIN user at the relay (only inside TLS); empty = no AUTH"`
	SMTPPassword     string        `env:"SMTP_PASSWORD" default:"" desc:"AUTH PLAIN password at the relay"`
	SMTPFrom         string        `env:"SMTP_FROM" default:"Support <no-reply@localhost>" desc:"From address of auth's mail (also the envelope sender)"`
	SMTPCAFile       string        `env:"SMTP_TLS_CA_FILE" default:"" desc:"PEM file of the CA(s) the relay's certificate must chain to; empty = the system roots"`
	SMTPServerName   string        `env:"SMTP_TLS_SERVER_NAME" default:"" desc:"name the relay's certificate must carry; empty = the host of SMTP_ADDR"`
	SMTPTimeout      time.Duration `env:"SMTP_TIMEOUT" default:"30s" desc:"time limit of one delivery to the relay"`
	SMTPMaxAttempts  int           `env:"SMTP_MAX_ATTEMPTS" default:"8" desc:"deliveries of one mail the relay may refuse temporarily (backoff 30s doubling up to 15m) before it fails"`
}

func main() { boot.Main("auth", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	if cfg.TokenTTL < time.Minute || cfg.TokenTTL > 24*time.Hour {
		return errors.New("config: AUTH_TOKEN_TTL must be between 1m and 24h")
	}
	cmd, err := boot.Command(args, "bootstrap")
	if err != nil {
		return err
	}
	if cmd == "healthcheck" {
		return boot.Healthcheck(ctx, cfg.HTTPAddr, stdout)
	}
	if cfg.LoginMaxFailures < 1 || cfg.LoginMaxFailIP < 1 || cfg.CreateLimit < 1 || cfg.ResetLimit < 1 || cfg.LoginBackoffFree < 1 ||
		cfg.LoginWindow <= 0 || cfg.CreateWindow <= 0 || cfg.ResetWindow <= 0 || cfg.LoginBackoffMin <= 0 || cfg.LoginBackoffMax < cfg.LoginBackoffMin {
		return errors.New("config: the AUTH_LOGIN_* and AUTH_ACCOUNT_CREATE_* limits and windows must be positive")
	}
	smtpClient, err := mailClient(cfg)
	if err != nil {
		return err
	}
	opts := boot.Options{Service: "auth", Schema: postgres.Schema, Migrations: postgres.Migrations(), Outbox: true}
	if cmd == "migrate" {
		return boot.Migrate(ctx, cfg.Common, opts, stdout)
	}
	deps, err := boot.Open(ctx, cfg.Common, opts, stdout)
	if err != nil {
		return err
	}
	defer func() { _ = deps.Close() }()
	key, err := keys.Load(cfg.SigningKeyFile, cfg.DevKeygen)
	if err != nil {
		return err
	}
	store := postgres.New(deps.DB).WithWake(deps.OutboxWake)
	var mailer auth.Mailer
	var worker *mail.Worker
	if smtpClient != nil {
		worker, err = mail.NewWorker(store, smtpClient, cfg.SMTPFrom, mail.WorkerOptions{MaxAttempts: cfg.SMTPMaxAttempts,
			// A batch (10) of deliveries that all run into the timeout,
			// with room to spare.
			Abandon: max(10*time.Minute, 12*cfg.SMTPTimeout)}, deps.Log, deps.Now)
		if err != nil {
			return fmt.Errorf("config: SMTP_FROM: %w", err)
		}
		mailer = worker
	}
	svc, err := auth.NewService(auth.Deps{
		Store:   store,
		Signer:  auth.NewSigner(key, cfg.JWTIssuer, cfg.JWTAudience, cfg.TokenTTL),
		Revoker: deps.Verifier.Revocations,
		Limits: auth.Limits{
			LoginByEmailIP: ratelimit.NewAttempts(deps.Redis, cfg.RedisPrefix, cfg.LoginMaxFailures, cfg.LoginWindow, auth.LoginPending),
			LoginByIP:      ratelimit.NewAttempts(deps.Redis, cfg.RedisPrefix, cfg.LoginMaxFailIP, cfg.LoginWindow, auth.LoginPending),
			LoginBackoff: ratelimit.NewBackoff(deps.Redis, cfg.RedisPrefix, cfg.LoginBackoffFree, cfg.LoginBackoffMin,
				cfg.LoginBackoffMax, max(cfg.LoginWindow, cfg.LoginBackoffMax)),
			CreateAccount: ratelimit.New(deps.Redis, cfg.RedisPrefix, cfg.CreateLimit, cfg.CreateWindow),
			ResetByEmail:  ratelimit.New(deps.Redis, cfg.RedisPrefix, cfg.ResetLimit, cfg.ResetWindow),
		},
		Log:      deps.Log,
		Now:      deps.Now,
		ResetURL: cfg.ResetURL,
		Mailer:   mailer,
	})
	if err != nil {
		return err
	}
	if cmd == "bootstrap" {
		return bootstrap(ctx, svc, args[2:], stdout)
	}

	if err := rpc.Serve(deps.Bus, svc); err != nil {
		return err
	}
	if worker != nil {
		deps.Go(worker.Run)
	} else {
		deps.Log.Warn("SMTP_ADDR is not set: password-reset and password-changed mails are queued but not sent")
	}

	httpapi.New(svc, deps.Server).Routes(deps.Server.Engine, authn.Middleware(deps.Verifier, deps.Server.Fail))
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}

// mailClient is the SMTP client of the configured relay; nil without
// SMTP_ADDR. It is checked before anything is opened.
func mailClient(cfg Config) (*mail.SMTP, error) {
	if cfg.SMTPAddr == "" {
		return nil, nil
	}
	u, err := url.Parse(cfg.ResetURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return nil, errors.New("config: AUTH_RESET_URL must be an absolute http(s) URL without a fragment when SMTP_ADDR is set")
	}
	if cfg.SMTPTimeout <= 0 || cfg.SMTPMaxAttempts < 1 {
		return nil, errors.New("config: SMTP_TIMEOUT and SMTP_MAX_ATTEMPTS must be positive")
	}
	tlsCfg := &tls.Config{ServerName: cfg.SMTPServerName}
	if cfg.SMTPCAFile != "" {
		pem, err := os.ReadFile(cfg.SMTPCAFile)
		if err != nil {
			return nil, fmt.Errorf("config: SMTP_TLS_CA_FILE: %w", err)
		}
		tlsCfg.RootCAs = x509.NewCertPool()
		if !tlsCfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, errors.New("config: SMTP_TLS_CA_FILE holds no PEM certificate")
		}
	}
	client, err := mail.NewSMTP(mail.SMTPConfig{Addr: cfg.SMTPAddr, Username: cfg.SMTPUsername, Password: cfg.SMTPPassword,
		TLS: tlsCfg, Timeout: cfg.SMTPTimeout})
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return client, nil
}

func bootstrap(ctx context.Context, svc *auth.Service, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bootstrap", flag.ContinueOnError)
	fs.SetOutput(stdout)
	customer := fs.String("customer", "", "customer (tenant) name")
	email := fs.String("email", "", "admin e-mail address")
	password := fs.String("password", "", "admin password (at least 10 characters)")
	name := fs.String("name", "Administrator", "admin display name")
	language := fs.String("language", "", "admin's mail language (ISO 639-1: en, de, es, fr; empty keeps it, English by default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, a, err := svc.Bootstrap(ctx, *customer, *email, *name, *password, *language)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "customer %d (%s), admin account %d <%s>\n", c.ID, c.Name, a.ID, a.Email)
	return nil
}
