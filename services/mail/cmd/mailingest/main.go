// Command mailingest is the HTTP binary of the mail context: the Channels
// API, the mail provider's public callbacks (validation handshake and change
// notifications, which queue folder imports on MAIL_IMPORT) and the
// subscribe/unsubscribe toggles; plus the channel lookup over NATS.
//
//	mailingest            serve (migrations are applied at start)
//	mailingest migrate    apply migrations and exit
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/services/mail/internal/entra"
	"supportplatform.dev/services/mail/internal/graph"
	"supportplatform.dev/services/mail/internal/httpapi"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
	"supportplatform.dev/services/mail/internal/queue"
	"supportplatform.dev/services/mail/internal/rpc"
)

// Config of mailingest.
type Config struct {
	HTTPAddr      string        `env:"HTTP_ADDR" default:"127.0.0.1:8085" desc:"listen address of mailingest"`
	PublicBaseURL string        `env:"PUBLIC_BASE_URL" default:"" desc:"public HTTPS address of the backend; notifications go to it followed by /api/providerwebhook (required)"`
	Lifetime      time.Duration `env:"MAIL_SUBSCRIPTION_LIFETIME" default:"70h" desc:"lifetime asked for a provider subscription (Graph allows at most 4,230 minutes for messages; the expiry Graph returns is stored)"`
	LoginURL      string        `env:"GRAPH_LOGIN_URL" default:"https://login.microsoftonline.com" desc:"Microsoft identity platform root for connecting tenants (sign-in, keys, admin consent); id_token issuers are {GRAPH_LOGIN_URL}/{tid}/v2.0"`
	RedirectURI   string        `env:"GRAPH_REDIRECT_URI" default:"" desc:"redirect URI registered on the Entra app for connecting tenants; empty = PUBLIC_BASE_URL followed by /api/ProviderConnections/callback"`
	StateLifetime time.Duration `env:"CONNECT_STATE_LIFETIME" default:"10m" desc:"how long a tenant connection's sign-in or consent state is accepted back"`
	graph.Settings
	config.Common
}

func (c Config) check() error {
	if err := mail.CheckPublicBaseURL(c.PublicBaseURL); err != nil {
		return err
	}
	if c.Lifetime < time.Hour {
		return errors.New("config: MAIL_SUBSCRIPTION_LIFETIME must be at least an hour")
	}
	if c.StateLifetime < time.Minute || c.StateLifetime > time.Hour {
		return errors.New("config: CONNECT_STATE_LIFETIME must be between 1m and 1h")
	}
	// The subscribe toggle creates within its request: a create must fit in
	// the request's budget with time to clean up after it.
	if c.CreateTimeout <= 0 || c.CreateTimeout >= c.RequestTimeout {
		return errors.New("config: GRAPH_SUBSCRIPTION_CREATE_TIMEOUT must be positive and below REQUEST_TIMEOUT")
	}
	return nil
}

// redirectURI is where Microsoft sends the browser back to.
func (c Config) redirectURI() string {
	if c.RedirectURI != "" {
		return c.RedirectURI
	}
	return strings.TrimRight(c.PublicBaseURL, "/") + "/api/ProviderConnections/callback"
}

func main() { boot.Main("mailingest", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	cmd, err := boot.Command(args)
	if err != nil {
		return err
	}
	if cmd == "healthcheck" {
		return boot.Healthcheck(ctx, cfg.HTTPAddr, stdout)
	}
	opts := boot.Options{Service: "mailingest", Schema: postgres.Schema, Migrations: postgres.Migrations(), Outbox: true}
	if cmd == "migrate" {
		return boot.Migrate(ctx, cfg.Common, opts, stdout)
	}
	if err := cfg.check(); err != nil {
		return err
	}
	deps, err := boot.Open(ctx, cfg.Common, opts, stdout)
	if err != nil {
		return err
	}
	defer func() { _ = deps.Close() }()
	provider, err := graph.NewMailProvider(cfg.Settings, &http.Client{}, deps.Now)
	if err != nil {
		return fmt.Errorf("mail provider: %w", err)
	}
	if !cfg.Configured() {
		deps.Log.Warn("no Microsoft Graph app configured: channels and callbacks work, provider subscriptions cannot be made")
	}
	imports, err := queue.New(ctx, deps.Bus)
	if err != nil {
		return err
	}
	store := postgres.New(deps.DB, deps.Now).WithWake(deps.OutboxWake)
	subMetrics, err := mail.NewSubscriptionMetrics(deps.Server.Registry)
	if err != nil {
		return err
	}
	subs := mail.NewSubscriptionService(mail.SubscriptionOptions{Store: store, Provider: provider,
		PublicBaseURL: cfg.PublicBaseURL, Lifetime: cfg.Lifetime, CreateTimeout: cfg.CreateTimeout, Metrics: subMetrics,
		Now: deps.Now, Log: deps.Log})
	channels := mail.NewChannelService(store, subs, deps.Log)
	notifier := mail.NewNotifier(store, imports, deps.Now, deps.Log, deps.Server.Registry, mail.NotifierOptions{})
	// Parked notifications are looked up again until shutdown.
	deps.Go(notifier.Run)

	var identity mail.IdentityPlatform
	if cfg.Configured() {
		id, err := entra.New(entra.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, LoginURL: cfg.LoginURL,
			RedirectURI: cfg.redirectURI(), HTTPClient: &http.Client{Timeout: graph.DefaultTimeout}, Now: deps.Now})
		if err != nil {
			return fmt.Errorf("identity platform: %w", err)
		}
		identity = id
	}
	connections := mail.NewConnectionService(store, identity, cfg.StateLifetime, deps.Now, deps.Log)
	if n, err := store.SuspendedChannels(ctx); err != nil {
		return err
	} else if n > 0 {
		deps.Log.Warn("microsoft365 channels are switched off until their tenant is connected (mail.channel_suspensions)", "channels", n)
	}

	if err := rpc.Serve(deps.Bus, channels); err != nil {
		return err
	}
	httpapi.New(channels, subs, notifier, connections, deps.Server).
		Routes(deps.Server.Engine, deps.Auth(), authn.RequireRole(authn.RoleAdmin, deps.Server.Fail))
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}
