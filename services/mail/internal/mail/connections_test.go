package mail_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/mail/internal/entra"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
)

const (
	connClientID = "app"
	connSecret   = "secret"
	connRedirect = "https://support.example/api/ProviderConnections/callback"
	tenantX      = "aaaaaaaa-0000-4000-8000-00000000000a"
	tenantY      = "bbbbbbbb-0000-4000-8000-00000000000b"
)

type connEnv struct {
	fake  *graphfake.Server
	store *postgres.Store
	svc   *mail.ConnectionService
	chans *mail.ChannelService
	clock *clocktest.Clock
	noRed *http.Client
}

type noSync struct{}

func (noSync) SyncChannel(context.Context, int64, int64) ([]mail.FolderOutcome, error) {
	return nil, nil
}

func newConnEnv(t *testing.T) *connEnv {
	t.Helper()
	e := &connEnv{clock: clocktest.New(time.Now())}
	e.fake = graphfake.New(graphfake.Options{ClientID: connClientID, ClientSecret: connSecret, RequireConsent: true,
		RedirectURIs: []string{connRedirect}, Now: e.clock.Now})
	e.fake.AddUser(graphfake.User{Username: "admin@x.example", TenantID: tenantX})
	e.fake.AddUser(graphfake.User{Username: "admin@y.example", TenantID: tenantY})
	e.fake.AddUser(graphfake.User{Username: "shy@y.example", TenantID: tenantY, DeclineSignIn: true})
	e.fake.SetAutoApprove(true)
	srv := httptest.NewServer(e.fake)
	t.Cleanup(srv.Close)
	id, err := entra.New(entra.Config{ClientID: connClientID, ClientSecret: connSecret, LoginURL: srv.URL,
		RedirectURI: connRedirect, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.store = postgres.New(pgtest.NewSchema(t, postgres.Schema, postgres.Migrations()), e.clock.Now)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.svc = mail.NewConnectionService(e.store, id, 0, e.clock.Now, log)
	e.chans = mail.NewChannelService(e.store, noSync{}, log)
	e.noRed = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return e
}

// browse follows the browser to Microsoft's page and returns the query of
// the redirect back to the platform.
func (e *connEnv) browse(t *testing.T, u string) mail.CallbackInput {
	t.Helper()
	resp, err := e.noRed.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), connRedirect) {
		t.Fatalf("%s answered %d %q", u, resp.StatusCode, resp.Header.Get("Location"))
	}
	q := loc.Query()
	return mail.CallbackInput{Code: q.Get("code"), State: q.Get("state"), Error: q.Get("error"), ErrorDescription: q.Get("error_description"),
		Tenant: q.Get("tenant"), AdminConsent: q.Get("admin_consent"), Scope: q.Get("scope")}
}

// signIn starts a connection for the customer and brings the sign-in's
// answer back: the redirect to admin consent.
func (e *connEnv) signIn(t *testing.T, customerID int64, hint string) (mail.StartedConnection, string) {
	t.Helper()
	ctx := context.Background()
	started, err := e.svc.StartConnection(ctx, customerID, 7, mail.ConnectionInput{LoginHint: hint})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Callback(ctx, e.browse(t, started.AuthorizationURL))
	if err != nil || res.Redirect == "" {
		t.Fatalf("sign-in callback: %+v %v", res, err)
	}
	return started, res.Redirect
}

func wantCode(t *testing.T, err error, code apperr.Code, field string) {
	t.Helper()
	var ae *apperr.Error
	if apperr.CodeOf(err) != code {
		t.Fatalf("error %v, want %s", err, code)
	}
	if field != "" {
		if !errors.As(err, &ae) || ae.Fields[field] == "" {
			t.Fatalf("error %v names no %s", err, field)
		}
	}
}

func TestConnectionFlowBindsTheVerifiedTenant(t *testing.T) {
	e := newConnEnv(t)
	ctx := context.Background()
	// Before: a microsoft365 channel naming the tenant is refused.
	ch := mail.ChannelInput{Name: "Support", Kind: mail.KindEmail, EmailAddress: "support@x.example",
		Provider: mail.ProviderMicrosoft365, ProviderTenantID: strings.ToUpper(tenantX)}
	if _, err := e.chans.CreateChannel(ctx, 1, ch); err == nil {
		t.Fatal("a channel with an unconnected tenant was created")
	} else {
		wantCode(t, err, apperr.Invalid, "providerTenantID")
	}
	started, consent := e.signIn(t, 1, "admin@x.example")
	if started.Status != mail.ConnectionPending {
		t.Errorf("started %+v", started.Connection)
	}
	if !strings.Contains(consent, "/"+tenantX+"/v2.0/adminconsent?") {
		t.Fatalf("consent URL %s", consent)
	}
	mid, err := e.svc.Connection(ctx, 1, started.ID)
	if err != nil || mid.Status != mail.ConnectionConsenting || mid.TenantID != tenantX || mid.SignedInAs != "admin@x.example" {
		t.Fatalf("after sign-in %+v %v", mid, err)
	}
	answer := e.browse(t, consent)
	res, err := e.svc.Callback(ctx, answer)
	if err != nil || res.Connection == nil || res.Connection.Status != mail.ConnectionConnected || res.Connection.TenantID != tenantX ||
		res.ConnectionID != started.ID {
		t.Fatalf("consent callback %+v %v", res, err)
	}
	// The state was single use.
	_, err = e.svc.Callback(ctx, answer)
	wantCode(t, err, apperr.Invalid, "state")
	// Now the channel is accepted, with the tenant as connected.
	c, err := e.chans.CreateChannel(ctx, 1, ch)
	if err != nil || c.ProviderTenantID != tenantX || !c.TenantConnected {
		t.Fatalf("channel %+v %v", c, err)
	}
	// Another customer cannot name it, nor connect it.
	ch.EmailAddress = "other@x.example"
	_, err = e.chans.CreateChannel(ctx, 2, ch)
	wantCode(t, err, apperr.Invalid, "providerTenantID")
	other, err := e.svc.StartConnection(ctx, 2, 8, mail.ConnectionInput{LoginHint: "admin@x.example"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Callback(ctx, e.browse(t, other.AuthorizationURL))
	wantCode(t, err, apperr.Conflict, "")
	if got, _ := e.svc.Connection(ctx, 2, other.ID); got.Status != mail.ConnectionFailed {
		t.Errorf("refused attempt %+v", got)
	}
	if ok, _ := e.store.TenantConnected(ctx, 1, tenantX); !ok {
		t.Error("the refused attempt took the tenant away")
	}
	// Another customer's connection id is not found.
	if _, err := e.svc.Connection(ctx, 2, started.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("another customer's connection: %v", err)
	}
	if err := e.svc.DeleteConnection(ctx, 2, started.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("delete another customer's connection: %v", err)
	}
	// Disconnecting is refused while a live channel uses the tenant.
	err = e.svc.DeleteConnection(ctx, 1, started.ID)
	wantCode(t, err, apperr.Conflict, "")
	list, total, err := e.svc.ListConnections(ctx, 1, paging.Page{Number: 1, Size: 10})
	if err != nil || total != 1 || list[0].ID != started.ID {
		t.Errorf("list %+v %d %v", list, total, err)
	}
}

func TestConnectionCallbackRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("consent for another tenant than the signed-in one", func(t *testing.T) {
		e := newConnEnv(t)
		started, consent := e.signIn(t, 1, "admin@x.example")
		in := e.browse(t, consent)
		in.Tenant = tenantY
		res, err := e.svc.Callback(ctx, in)
		wantCode(t, err, apperr.Invalid, "tenant")
		// The failed attempt is named, for the console's page.
		if res.ConnectionID != started.ID || res.Connection != nil || res.Redirect != "" {
			t.Errorf("result beside the error %+v, want connection %d only", res, started.ID)
		}
		if ok, _ := e.store.TenantConnected(ctx, 1, tenantY); ok {
			t.Error("tenant Y connected")
		}
		if ok, _ := e.store.TenantConnected(ctx, 1, tenantX); ok {
			t.Error("tenant X connected by a refused answer")
		}
		if c, _ := e.svc.Connection(ctx, 1, started.ID); c.Status != mail.ConnectionFailed {
			t.Errorf("connection %+v", c)
		}
	})
	t.Run("declined sign-in", func(t *testing.T) {
		e := newConnEnv(t)
		started, err := e.svc.StartConnection(ctx, 1, 7, mail.ConnectionInput{LoginHint: "shy@y.example"})
		if err != nil {
			t.Fatal(err)
		}
		in := e.browse(t, started.AuthorizationURL)
		_, err = e.svc.Callback(ctx, in)
		wantCode(t, err, apperr.Invalid, "")
		if !strings.Contains(err.Error(), "access_denied") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("expired state", func(t *testing.T) {
		e := newConnEnv(t)
		started, err := e.svc.StartConnection(ctx, 1, 7, mail.ConnectionInput{LoginHint: "admin@x.example"})
		if err != nil {
			t.Fatal(err)
		}
		in := e.browse(t, started.AuthorizationURL)
		e.clock.Advance(mail.DefaultStateLifetime + time.Second)
		_, err = e.svc.Callback(ctx, in)
		wantCode(t, err, apperr.Invalid, "state")
	})
	t.Run("forged state and oversized parameters", func(t *testing.T) {
		e := newConnEnv(t)
		res, err := e.svc.Callback(ctx, mail.CallbackInput{State: "forged", Code: "x"})
		wantCode(t, err, apperr.Invalid, "state")
		if res.ConnectionID != 0 {
			t.Errorf("a forged state names connection %d", res.ConnectionID)
		}
		_, err = e.svc.Callback(ctx, mail.CallbackInput{State: "s", Code: strings.Repeat("c", 5000)})
		wantCode(t, err, apperr.Invalid, "code")
		_, err = e.svc.Callback(ctx, mail.CallbackInput{State: "s", ErrorDescription: strings.Repeat("d", 3000)})
		wantCode(t, err, apperr.Invalid, "error_description")
	})
	t.Run("a sign-in state is not a consent state", func(t *testing.T) {
		e := newConnEnv(t)
		started, err := e.svc.StartConnection(ctx, 1, 7, mail.ConnectionInput{LoginHint: "admin@x.example"})
		if err != nil {
			t.Fatal(err)
		}
		in := e.browse(t, started.AuthorizationURL)
		_, err = e.svc.Callback(ctx, mail.CallbackInput{State: in.State, Tenant: tenantX, AdminConsent: "True"})
		wantCode(t, err, apperr.Invalid, "code")
		if ok, _ := e.store.TenantConnected(ctx, 1, tenantX); ok {
			t.Error("connected without sign-in")
		}
	})
}

// The consent answer replayed eight times at once connects once: the state
// is taken by one callback, every other one is refused; and two customers
// whose admins finish a consent for one tenant at the same moment end with
// one owner.
func TestConnectionCallbacksInParallel(t *testing.T) {
	e := newConnEnv(t)
	ctx := context.Background()
	_, consent := e.signIn(t, 1, "admin@x.example")
	answer := e.browse(t, consent)
	var wg sync.WaitGroup
	var connected, refused atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.svc.Callback(ctx, answer)
			switch {
			case err == nil && res.Connection != nil && res.Connection.Status == mail.ConnectionConnected:
				connected.Add(1)
			case apperr.CodeOf(err) == apperr.Invalid:
				refused.Add(1)
			default:
				t.Errorf("replayed callback: %+v %v", res, err)
			}
		}()
	}
	wg.Wait()
	if connected.Load() != 1 || refused.Load() != 7 {
		t.Fatalf("%d connected, %d refused; want 1 and 7", connected.Load(), refused.Load())
	}

	// Two customers, one tenant, both consents answered together.
	_, c3 := e.signIn(t, 3, "admin@y.example")
	_, c4 := e.signIn(t, 4, "admin@y.example")
	answers := []mail.CallbackInput{e.browse(t, c3), e.browse(t, c4)}
	owners := make([]bool, 2)
	for i, a := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.svc.Callback(ctx, a)
			owners[i] = err == nil && res.Connection != nil && res.Connection.Status == mail.ConnectionConnected
			if !owners[i] && apperr.CodeOf(err) != apperr.Conflict {
				t.Errorf("customer %d: %+v %v, want connected or 409", 3+i, res, err)
			}
		}()
	}
	wg.Wait()
	if owners[0] == owners[1] {
		t.Fatalf("owners %v: exactly one customer must hold the tenant", owners)
	}
	c3ok, _ := e.store.TenantConnected(ctx, 3, tenantY)
	c4ok, _ := e.store.TenantConnected(ctx, 4, tenantY)
	if c3ok == c4ok || c3ok != owners[0] {
		t.Fatalf("stored owners: customer 3 %v, customer 4 %v", c3ok, c4ok)
	}
}
