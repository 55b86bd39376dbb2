package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/servicetest"
	"supportplatform.dev/services/mail/internal/mail"
)

// idleProvider renews what it is asked to and refuses everything else.
type idleProvider struct {
	mu     sync.Mutex
	calls  int
	renews []string
}

func (p *idleProvider) call() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	return mail.ErrProviderNotFound
}

func (p *idleProvider) renewed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.renews...)
}

func (p *idleProvider) ResolveMailbox(context.Context, string, string) (mail.MailboxUser, error) {
	return mail.MailboxUser{}, p.call()
}
func (p *idleProvider) Create(context.Context, string, mail.NewProviderSubscription) (mail.ProviderSubscription, error) {
	return mail.ProviderSubscription{}, p.call()
}
func (p *idleProvider) Renew(_ context.Context, _, id string, exp time.Time) (mail.ProviderSubscription, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.renews = append(p.renews, id)
	return mail.ProviderSubscription{ID: id, Expiration: exp}, nil
}
func (p *idleProvider) Delete(context.Context, string, string) error { return p.call() }
func (p *idleProvider) List(context.Context, string) ([]mail.ProviderSubscription, error) {
	return nil, p.call()
}

func withProvider(p mail.Provider, got *Config) servicetest.Run {
	return func(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
		return runWith(ctx, args, getenv, stdout, func(cfg Config, now func() time.Time) (mail.Provider, error) {
			if got != nil {
				*got = cfg
			}
			return p, nil
		})
	}
}

func TestServeHealthAndMetricsThenStop(t *testing.T) {
	var cfg Config
	p := &idleProvider{}
	svc := servicetest.Start(t, "renewal", withProvider(p, &cfg), servicetest.Options{Env: map[string]string{
		"PUBLIC_BASE_URL": "https://support.example.com", "RENEWAL_INTERVAL": "50ms", "GRAPH_CLIENT_SECRET": "s3cret",
	}})
	if cfg.Window != time.Hour || cfg.Lifetime != 70*time.Hour || cfg.Interval != 50*time.Millisecond || cfg.ClientSecret != "s3cret" {
		t.Fatalf("config %+v", cfg)
	}
	resp, err := http.Get(svc.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"mail_subscriptions_expiring 0", `mail_subscription_renewals_total{result="recreated"} 0`,
		`mail_subscription_creates_total{result="ok"} 0`, `mail_subscription_deletes_total{result="failed"} 0`,
		`mail_renewal_rounds_total{result="failed"} 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(svc.Logs(), "s3cret") {
		t.Error("the client secret was logged")
	}
	// A subscription about to expire is renewed by the running job.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, svc.Env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `WITH p AS (INSERT INTO mail.provider_connections (customer_id, status, tenant_id, started_by, connected_at)
		VALUES (5, 'connected', 'contoso.onmicrosoft.com', 1, now())),
		c AS (INSERT INTO mail.channels (customer_id, name, kind, email_address, provider, provider_tenant_id, auto_retrieve_emails)
		VALUES (5, 'support', 'email', 'support@contoso.com', 'microsoft365', 'contoso.onmicrosoft.com', true) RETURNING channel_id)
		INSERT INTO mail.channel_folders (customer_id, channel_id, external_folder_id, auto_retrieve_emails, provider_subscription_id,
		provider_subscription_expiration, client_state) SELECT 5, channel_id, 'inbox', true, 'sub-1', now() + interval '10 minutes', 'secret' FROM c`); err != nil {
		t.Fatal(err)
	}
	var exp time.Time
	deadline := time.Now().Add(10 * time.Second)
	for exp.Before(time.Now().Add(69 * time.Hour)) {
		if time.Now().After(deadline) {
			t.Fatalf("not renewed (expiry %v):\n%s", exp, svc.Logs())
		}
		time.Sleep(20 * time.Millisecond)
		if err := conn.QueryRow(ctx, `SELECT provider_subscription_expiration FROM mail.channel_folders`).Scan(&exp); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(p.renewed()) != "[sub-1]" {
		t.Fatalf("renewed %v, want sub-1 once", p.renewed())
	}
	if err := svc.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if strings.Contains(svc.Logs(), `"level":"ERROR"`) || strings.Contains(svc.Logs(), "renewal round") {
		t.Fatalf("logged on shutdown:\n%s", svc.Logs())
	}
}

func TestRefusedConfigurationAndCommands(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{name: "no public base URL", env: map[string]string{}, want: "PUBLIC_BASE_URL"},
		{name: "a relative public base URL", env: map[string]string{"PUBLIC_BASE_URL": "/support"}, want: "PUBLIC_BASE_URL"},
		{name: "an http public base URL", env: map[string]string{"PUBLIC_BASE_URL": "http://support.example.com"}, want: "not HTTPS"},
		{name: "a lifetime inside the window", env: map[string]string{"PUBLIC_BASE_URL": "https://x.example", "MAIL_SUBSCRIPTION_LIFETIME": "30m"}, want: "MAIL_SUBSCRIPTION_LIFETIME"},
		{name: "a bad interval", env: map[string]string{"PUBLIC_BASE_URL": "https://x.example", "RENEWAL_INTERVAL": "often"}, want: "RENEWAL_INTERVAL"},
		{name: "an unknown command", args: []string{"renewal", "bogus"}, env: map[string]string{"PUBLIC_BASE_URL": "https://x.example"}, want: "unknown command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				args = []string{"renewal"}
			}
			err := run(context.Background(), args, func(k string) string { return tc.env[k] }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// An app with a half-set or malformed Graph configuration is refused at
// start, not discovered at the first renewal.
func TestRunRefusesBadGraphSettings(t *testing.T) {
	for _, extra := range []map[string]string{
		{"GRAPH_CLIENT_ID": "app"},
		{"GRAPH_CLIENT_ID": "app", "GRAPH_CLIENT_SECRET": "s", "GRAPH_BASE_URL": "ftp://graph.example"},
	} {
		svcEnv := servicetest.Env(t, "renewal", nil, false)
		svcEnv["PUBLIC_BASE_URL"] = "https://support.example.com"
		for k, v := range extra {
			svcEnv[k] = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := run(ctx, []string{"renewal"}, func(k string) string { return svcEnv[k] }, io.Discard)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "mail provider") {
			t.Fatalf("run with %v: %v", extra, err)
		}
	}
}

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../README.md", Config{})
}

func TestMigrateAndCommands(t *testing.T) {
	servicetest.MigrateTest(t, "renewal", run, "mail",
		[]string{"channel_folders", "channel_suspensions", "channels", "mailbox_users", "outbox", "provider_connection_states", "provider_connections", "retired_subscriptions", "schema_migrations", "sent_replies"},
		map[string]string{}, // no PUBLIC_BASE_URL
		map[string]string{"PUBLIC_BASE_URL": "https://x.example", "RENEWAL_WINDOW": "100h"})
}
