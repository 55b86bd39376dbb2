package e2email

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// Issue 22, item 1: a Microsoft 365 tenant is the customer's only after its
// Microsoft admin signed in (verified id_token) and consented for that very
// tenant; the flow runs through the gateway against the fake identity
// platform, as a browser walks it.

type connectionBody struct {
	ConnectionID     int64   `json:"connectionID"`
	CustomerID       int64   `json:"customerID"`
	Provider         string  `json:"provider"`
	Status           string  `json:"status"`
	ProviderTenantID *string `json:"providerTenantID"`
	SignedInAs       *string `json:"signedInAs"`
	LastError        *string `json:"lastError"`
	AuthorizationURL string  `json:"authorizationUrl"`
}

// flow is one customer's connection attempt, step by step: the platform's
// answers go through the contract-checking client (no redirects followed),
// Microsoft's pages through a plain one.
type flow struct {
	t      *testing.T
	c      *e2ekit.Client
	tn     tenant
	fake   *http.Client
	conn   connectionBody
	tenant string // the Entra tenant of the admin user
	user   string
}

func noRedirects(hc *http.Client) *http.Client {
	cp := *hc
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}

// newFlow adds an admin user of a fresh Entra tenant to the fake and starts
// a connection for tn with that user as login hint.
func newFlow(t *testing.T, tn tenant, u graphfake.User) *flow {
	t.Helper()
	if u.TenantID == "" {
		u.TenantID = newGUID()
	}
	if u.Username == "" {
		u.Username = "admin-" + randid.Hex(4) + "@" + u.TenantID[:8] + ".onmicrosoft.test"
	}
	graph.AddUser(u)
	graph.SetAutoApprove(true)
	f := &flow{t: t, tn: tn, tenant: u.TenantID, user: u.Username, fake: noRedirects(http.DefaultClient),
		c: e2ekit.NewClient(t, stk.HTTPSURL, noRedirects(stk.HTTPClient()), api)}
	r := f.c.Do(http.MethodPost, "/api/ProviderConnections", tn.AdminToken, map[string]any{"loginHint": u.Username})
	wantStatus(t, r, http.StatusCreated, &f.conn)
	if f.conn.Status != "pending" || f.conn.CustomerID != tn.CustomerID || f.conn.AuthorizationURL == "" ||
		r.Header.Get("Location") != fmt.Sprintf("/api/ProviderConnections/%d", f.conn.ConnectionID) {
		t.Fatalf("started %+v, Location %q", f.conn, r.Header.Get("Location"))
	}
	return f
}

// microsoft opens a page of the fake identity platform and returns the
// platform path (with query) it redirects the browser back to.
func (f *flow) microsoft(u string) string {
	f.t.Helper()
	resp, err := f.fake.Get(u)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), stk.HTTPSURL+"/api/ProviderConnections/callback?") {
		f.t.Fatalf("%s answered %d, Location %q", u, resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.RequestURI()
}

// callback brings Microsoft's answer (a path with query) to the platform.
func (f *flow) callback(path string) *e2ekit.Response {
	f.t.Helper()
	return f.c.Do(http.MethodGet, path, "", nil)
}

// signIn runs the sign-in and returns the consent URL the platform
// redirects to.
func (f *flow) signIn() string {
	f.t.Helper()
	r := f.callback(f.microsoft(f.conn.AuthorizationURL))
	if r.Status != http.StatusFound {
		f.t.Fatalf("sign-in callback: %d %s", r.Status, r.Body)
	}
	consent := r.Header.Get("Location")
	if !strings.Contains(consent, "/"+f.tenant+"/v2.0/adminconsent?") {
		f.t.Fatalf("consent URL %s", consent)
	}
	return consent
}

func (f *flow) get(token string) connectionBody {
	f.t.Helper()
	var got connectionBody
	wantStatus(f.t, f.c.Do(http.MethodGet, fmt.Sprintf("/api/ProviderConnections/%d", f.conn.ConnectionID), token, nil), http.StatusOK, &got)
	return got
}

func wantProblem(t *testing.T, r *e2ekit.Response, status int, field string) e2ekit.Problem {
	t.Helper()
	wantStatus(t, r, status, nil)
	p := r.Problem(t)
	if field != "" && p.Errors[field] == "" {
		t.Fatalf("problem %+v names no %s", p, field)
	}
	return p
}

func TestConnectMicrosoft365Tenant(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	body := map[string]any{"name": "Support", "kind": "email", "emailAddress": mailbox(), "provider": "microsoft365"}

	f := newFlow(t, tn, graphfake.User{})
	// Before the connection the tenant cannot be named.
	body["providerTenantID"] = f.tenant
	wantProblem(t, f.c.Do(http.MethodPost, "/api/Channels", tn.AdminToken, body), http.StatusBadRequest, "providerTenantID")

	consent := f.signIn()
	if got := f.get(tn.AdminToken); got.Status != "consenting" || got.ProviderTenantID == nil || *got.ProviderTenantID != f.tenant ||
		got.SignedInAs == nil || *got.SignedInAs != f.user {
		t.Fatalf("after sign-in %+v", got)
	}
	answer := f.microsoft(consent)
	var done connectionBody
	wantStatus(t, f.callback(answer), http.StatusOK, &done)
	if done.Status != "connected" || *done.ProviderTenantID != f.tenant || done.ConnectionID != f.conn.ConnectionID {
		t.Fatalf("connected %+v", done)
	}
	// The admin consent reached the identity platform: app-only tokens now.
	if !graph.Consented(f.tenant) {
		t.Error("the fake has no consent for the tenant")
	}
	// A replayed answer is refused (single-use state) and changes nothing.
	wantProblem(t, f.callback(answer), http.StatusBadRequest, "state")
	if got := f.get(tn.AdminToken); got.Status != "connected" {
		t.Errorf("after the replay %+v", got)
	}
	var list listBody[connectionBody]
	wantStatus(t, f.c.Do(http.MethodGet, "/api/ProviderConnections", tn.AdminToken, nil), http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].Status != "connected" {
		t.Errorf("list %+v", list)
	}
	// Now the channel is accepted, and it subscribes with the tenant's token.
	body["autoRetrieveEmails"] = true
	ch := createChannel(t, tn, body)
	e2ekit.Eventually(t, 10e9, "the inbox's subscription", func() bool {
		return folders(t, tn, ch.ChannelID)[0].ProviderSubscriptionID != nil
	})
	// Admins only; agents and strangers get 403 / 401.
	wantStatus(t, f.c.Do(http.MethodGet, "/api/ProviderConnections", tn.AgentToken, nil), http.StatusForbidden, nil)
	wantStatus(t, f.c.Do(http.MethodPost, "/api/ProviderConnections", "", map[string]any{}), http.StatusUnauthorized, nil)
	// Disconnecting is refused while the channel uses the tenant.
	wantStatus(t, f.c.Do(http.MethodDelete, fmt.Sprintf("/api/ProviderConnections/%d", f.conn.ConnectionID), tn.AdminToken, nil), http.StatusConflict, nil)
}

// browse brings Microsoft's answer to the platform as a browser's
// navigation (Chromium's Accept).
func (f *flow) browse(path string) *e2ekit.Response {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.t.Context(), http.MethodGet, stk.HTTPSURL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8")
	return f.c.DoRequest(req)
}

// A browser walking the flow ends on the console's connections page (303,
// the fixed relative path with the outcome), never on a JSON document:
// connected, and refused (a replay) with the code and no provider text.
func TestConnectFromABrowserEndsInTheConsole(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	f := newFlow(t, tn, graphfake.User{})
	// The sign-in still goes on to Microsoft's consent.
	signIn := f.browse(f.microsoft(f.conn.AuthorizationURL))
	if signIn.Status != http.StatusFound || !strings.Contains(signIn.Header.Get("Location"), "/"+f.tenant+"/v2.0/adminconsent?") {
		t.Fatalf("sign-in: %d %s", signIn.Status, signIn.Header.Get("Location"))
	}
	answer := f.microsoft(signIn.Header.Get("Location"))
	done := f.browse(answer)
	want := fmt.Sprintf("/admin/connections?connection=%d&outcome=connected", f.conn.ConnectionID)
	if done.Status != http.StatusSeeOther || done.Header.Get("Location") != want || done.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("consent: %d Location %q, want 303 %q", done.Status, done.Header.Get("Location"), want)
	}
	if got := f.get(tn.AdminToken); got.Status != "connected" {
		t.Errorf("after the browser's consent %+v", got)
	}
	replay := f.browse(answer)
	want = "/admin/connections?code=invalid&outcome=error"
	if replay.Status != http.StatusSeeOther || replay.Header.Get("Location") != want {
		t.Errorf("replay: %d Location %q, want 303 %q", replay.Status, replay.Header.Get("Location"), want)
	}
	// A declined consent names its attempt; Microsoft's error text never
	// reaches the Location.
	g := newFlow(t, tn, graphfake.User{DeclineConsent: true})
	declined := g.microsoft(g.signIn())
	if !strings.Contains(declined, "error=access_denied") {
		t.Fatalf("the fake's answer %s", declined)
	}
	refused := g.browse(declined)
	want = fmt.Sprintf("/admin/connections?code=invalid&connection=%d&outcome=error", g.conn.ConnectionID)
	if refused.Status != http.StatusSeeOther || refused.Header.Get("Location") != want {
		t.Errorf("declined: %d Location %q, want 303 %q", refused.Status, refused.Header.Get("Location"), want)
	}
}

func TestConnectRefusals(t *testing.T) {
	t.Parallel()
	t.Run("forged state", func(t *testing.T) {
		t.Parallel()
		f := newFlow(t, newTenant(t), graphfake.User{})
		wantProblem(t, f.callback("/api/ProviderConnections/callback?code=abc&state="+randid.Hex(20)), http.StatusBadRequest, "state")
		wantProblem(t, f.callback("/api/ProviderConnections/callback?code=abc"), http.StatusBadRequest, "state")
		wantProblem(t, f.callback("/api/ProviderConnections/callback?state=s&code="+strings.Repeat("c", 5000)), http.StatusBadRequest, "code")
		// A second state (or tenant) slipped into Microsoft's answer: which
		// one was meant cannot be told.
		wantProblem(t, f.callback("/api/ProviderConnections/callback?code=abc&state=a&STATE=b"), http.StatusBadRequest, "state")
		if got := f.get(f.tn.AdminToken); got.Status != "pending" {
			t.Errorf("forged answers changed the connection: %+v", got)
		}
	})
	t.Run("expired state", func(t *testing.T) {
		t.Parallel()
		f := newFlow(t, newTenant(t), graphfake.User{})
		answer := f.microsoft(f.conn.AuthorizationURL)
		exec(t, `UPDATE mail.provider_connection_states SET expires_at = now() - interval '1 second' WHERE connection_id = $1`, f.conn.ConnectionID)
		wantProblem(t, f.callback(answer), http.StatusBadRequest, "state")
	})
	t.Run("consent answer for another tenant than the signed-in one", func(t *testing.T) {
		t.Parallel()
		f := newFlow(t, newTenant(t), graphfake.User{})
		consent, _ := url.Parse(f.signIn())
		other := newGUID()
		q := url.Values{"tenant": {other}, "admin_consent": {"True"}, "scope": {graphfake.GraphScope}, "state": {consent.Query().Get("state")}}
		wantProblem(t, f.callback("/api/ProviderConnections/callback?"+q.Encode()), http.StatusBadRequest, "tenant")
		got := f.get(f.tn.AdminToken)
		if got.Status != "failed" || got.LastError == nil {
			t.Errorf("connection %+v", got)
		}
		body := map[string]any{"name": "x", "kind": "email", "emailAddress": mailbox(), "provider": "microsoft365"}
		for _, tenant := range []string{other, f.tenant} {
			body["providerTenantID"] = tenant
			wantProblem(t, f.c.Do(http.MethodPost, "/api/Channels", f.tn.AdminToken, body), http.StatusBadRequest, "providerTenantID")
		}
	})
	t.Run("declined consent", func(t *testing.T) {
		t.Parallel()
		f := newFlow(t, newTenant(t), graphfake.User{DeclineConsent: true})
		answer := f.microsoft(f.signIn())
		if !strings.Contains(answer, "error=access_denied") {
			t.Fatalf("the fake's answer %s", answer)
		}
		p := wantProblem(t, f.callback(answer), http.StatusBadRequest, "")
		if !strings.Contains(p.Detail, "access_denied") {
			t.Errorf("problem %+v", p)
		}
		if got := f.get(f.tn.AdminToken); got.Status != "failed" {
			t.Errorf("connection %+v", got)
		}
		if graph.Consented(f.tenant) {
			t.Error("consent recorded")
		}
	})
	t.Run("declined sign-in", func(t *testing.T) {
		t.Parallel()
		f := newFlow(t, newTenant(t), graphfake.User{DeclineSignIn: true})
		p := wantProblem(t, f.callback(f.microsoft(f.conn.AuthorizationURL)), http.StatusBadRequest, "")
		if !strings.Contains(p.Detail, "access_denied") {
			t.Errorf("problem %+v", p)
		}
	})
}

// One Entra tenant belongs to one customer; mailboxes are unique across
// customers; another customer's connection ids are not found.
func TestConnectionsAcrossCustomers(t *testing.T) {
	t.Parallel()
	a, b := newTenant(t), newTenant(t)
	fa := newFlow(t, a, graphfake.User{})
	var done connectionBody
	wantStatus(t, fa.callback(fa.microsoft(fa.signIn())), http.StatusOK, &done)
	mine := createChannel(t, a, e2ekit.EmailChannel(fa.tenant, false))

	// B's admin signs in to A's tenant (an admin of it): refused, A keeps it.
	fb := newFlow(t, b, graphfake.User{TenantID: fa.tenant})
	r := fb.callback(fb.microsoft(fb.conn.AuthorizationURL))
	wantProblem(t, r, http.StatusConflict, "")
	if got := fa.get(a.AdminToken); got.Status != "connected" {
		t.Errorf("A's connection %+v", got)
	}
	if got := fb.get(b.AdminToken); got.Status != "failed" {
		t.Errorf("B's attempt %+v", got)
	}
	// B cannot name A's tenant, nor A's mailbox (in a tenant of its own).
	body := e2ekit.EmailChannel(fa.tenant, false)
	wantProblem(t, fb.c.Do(http.MethodPost, "/api/Channels", b.AdminToken, body), http.StatusBadRequest, "providerTenantID")
	body = e2ekit.EmailChannel(connectedTenant(t, b), false)
	body["emailAddress"] = *mine.EmailAddress
	wantProblem(t, fb.c.Do(http.MethodPost, "/api/Channels", b.AdminToken, body), http.StatusConflict, "emailAddress")
	// Nor move a channel of its own there.
	theirs := createChannel(t, b, e2ekit.EmailChannel(connectedTenant(t, b), false))
	body["name"] = "moved"
	wantProblem(t, fb.c.Do(http.MethodPut, fmt.Sprintf("/api/Channels/%d", theirs.ChannelID), b.AdminToken, body), http.StatusConflict, "emailAddress")
	body["emailAddress"], body["providerTenantID"] = mailbox(), fa.tenant
	wantProblem(t, fb.c.Do(http.MethodPut, fmt.Sprintf("/api/Channels/%d", theirs.ChannelID), b.AdminToken, body), http.StatusBadRequest, "providerTenantID")
	// A's connection id is not B's.
	path := fmt.Sprintf("/api/ProviderConnections/%d", fa.conn.ConnectionID)
	wantStatus(t, fb.c.Do(http.MethodGet, path, b.AdminToken, nil), http.StatusNotFound, nil)
	wantStatus(t, fb.c.Do(http.MethodDelete, path, b.AdminToken, nil), http.StatusNotFound, nil)
	if got := fa.get(a.AdminToken); got.Status != "connected" {
		t.Errorf("A's connection after B's delete %+v", got)
	}
}
