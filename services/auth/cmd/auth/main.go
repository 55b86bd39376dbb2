// Command auth is the authentication service: logins, tokens, JWKS, the
// current customer, password reset and accounts.
//
//	auth              serve (migrations are applied at start)
//	auth migrate      apply migrations and exit
//	auth bootstrap -customer NAME -email ADDR -password PW [-name NAME]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/ratelimit"
	"supportplatform.dev/services/auth/internal/auth"
	"supportplatform.dev/services/auth/internal/httpapi"
	"supportplatform.dev/services/auth/internal/keys"
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
	LoginMaxFailures int           `env:"AUTH_LOGIN_MAX_FAILURES" default:"5" desc:"failed logins per e-mail address per window before 429"`
	LoginMaxFailIP   int           `env:"AUTH_LOGIN_MAX_FAILURES_IP" default:"50" desc:"failed logins per client IP per window before 429"`
	LoginWindow      time.Duration `env:"AUTH_LOGIN_WINDOW" default:"15m" desc:"window of the failed-login counters"`
	CreateLimit      int           `env:"AUTH_ACCOUNT_CREATE_LIMIT" default:"20" desc:"accounts a customer may create per window before 429"`
	ResetLimit       int           `env:"AUTH_RESET_LIMIT" default:"5" desc:"password-reset requests per e-mail address (known or not) per window before 429"`
	ResetWindow      time.Duration `env:"AUTH_RESET_WINDOW" default:"1h" desc:"window of the password-reset counter"`
	CreateWindow     time.Duration `env:"AUTH_ACCOUNT_CREATE_WINDOW" default:"1h" desc:"window of the account-creation counter"`
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
	if cfg.LoginMaxFailures < 1 || cfg.LoginMaxFailIP < 1 || cfg.CreateLimit < 1 || cfg.ResetLimit < 1 ||
		cfg.LoginWindow <= 0 || cfg.CreateWindow <= 0 || cfg.ResetWindow <= 0 {
		return errors.New("config: the AUTH_LOGIN_* and AUTH_ACCOUNT_CREATE_* limits and windows must be positive")
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
	store := postgres.New(deps.DB)
	svc, err := auth.NewService(auth.Deps{
		Store:   store,
		Signer:  auth.NewSigner(key, cfg.JWTIssuer, cfg.JWTAudience, cfg.TokenTTL),
		Revoker: deps.Verifier.Revocations,
		Limits: auth.Limits{
			LoginByEmail:  ratelimit.NewAttempts(deps.Redis, cfg.RedisPrefix, cfg.LoginMaxFailures, cfg.LoginWindow, auth.LoginPending),
			LoginByIP:     ratelimit.NewAttempts(deps.Redis, cfg.RedisPrefix, cfg.LoginMaxFailIP, cfg.LoginWindow, auth.LoginPending),
			CreateAccount: ratelimit.New(deps.Redis, cfg.RedisPrefix, cfg.CreateLimit, cfg.CreateWindow),
			ResetByEmail:  ratelimit.New(deps.Redis, cfg.RedisPrefix, cfg.ResetLimit, cfg.ResetWindow),
		},
		Log: deps.Log,
		Now: deps.Now,
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

	httpapi.New(svc, deps.Server).Routes(deps.Server.Engine, authn.Middleware(deps.Verifier, deps.Server.Fail))
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}

func bootstrap(ctx context.Context, svc *auth.Service, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bootstrap", flag.ContinueOnError)
	fs.SetOutput(stdout)
	customer := fs.String("customer", "", "customer (tenant) name")
	email := fs.String("email", "", "admin e-mail address")
	password := fs.String("password", "", "admin password (at least 10 characters)")
	name := fs.String("name", "Administrator", "admin display name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, a, err := svc.Bootstrap(ctx, *customer, *email, *name, *password)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "customer %d (%s), admin account %d <%s>\n", c.ID, c.Name, a.ID, a.Email)
	return nil
}
