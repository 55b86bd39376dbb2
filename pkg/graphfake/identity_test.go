package graphfake

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

const testRedirect = "https://support.example/api/ProviderConnections/callback"

func identityServer(t *testing.T) (*Server, *httptest.Server, *http.Client) {
	t.Helper()
	s := New(Options{ClientID: testClientID, ClientSecret: testClientSecret, RequireConsent: true, Now: newClock().Now,
		RedirectURIs: []string{testRedirect}})
	s.AddUser(User{Username: "admin@a.example", TenantID: tenantA})
	s.SetAutoApprove(true)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv, &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// code signs the user in with a PKCE challenge for verifier and returns the code.
func code(t *testing.T, srv *httptest.Server, hc *http.Client, verifier string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {testClientID}, "response_type": {"code"}, "redirect_uri": {testRedirect}, "scope": {"openid profile"},
		"state": {"st"}, "nonce": {"no"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"}, "login_hint": {"admin@a.example"}, "response_mode": {"query"}}
	resp, err := hc.Get(srv.URL + "/organizations/oauth2/v2.0/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Query().Get("state") != "st" || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d %s", resp.StatusCode, loc)
	}
	return loc.Query().Get("code")
}

func redeem(t *testing.T, srv *httptest.Server, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(srv.URL+"/organizations/oauth2/v2.0/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func TestAuthorizationCodeGrant(t *testing.T) {
	const verifier = "a-verifier-of-at-least-forty-three-characters-long"
	form := func(c string) url.Values {
		return url.Values{"client_id": {testClientID}, "client_secret": {testClientSecret}, "grant_type": {"authorization_code"},
			"code": {c}, "redirect_uri": {testRedirect}, "code_verifier": {verifier}}
	}
	cases := []struct {
		name    string
		change  func(url.Values)
		status  int
		errCode string
		aadsts  string
	}{
		{"wrong verifier", func(f url.Values) { f.Set("code_verifier", "x"+verifier) }, 400, "invalid_grant", "AADSTS501481"},
		{"other redirect URI", func(f url.Values) { f.Set("redirect_uri", "https://evil.example/cb") }, 400, "invalid_grant", "AADSTS500112"},
		{"wrong secret", func(f url.Values) { f.Set("client_secret", "nope") }, 401, "invalid_client", "AADSTS7000215"},
		{"no secret", func(f url.Values) { f.Del("client_secret") }, 401, "invalid_client", "AADSTS7000218"},
		{"other app", func(f url.Values) { f.Set("client_id", "someone") }, 400, "unauthorized_client", "AADSTS700016"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, srv, hc := identityServer(t)
			f := form(code(t, srv, hc, verifier))
			tc.change(f)
			status, body := redeem(t, srv, f)
			if status != tc.status || body["error"] != tc.errCode || !strings.Contains(body["error_description"].(string), tc.aadsts) {
				t.Fatalf("%d %v", status, body)
			}
		})
	}
	t.Run("good, then redeemed again", func(t *testing.T) {
		_, srv, hc := identityServer(t)
		f := form(code(t, srv, hc, verifier))
		status, body := redeem(t, srv, f)
		if status != 200 || body["id_token"] == "" {
			t.Fatalf("%d %v", status, body)
		}
		parts := strings.Split(body["id_token"].(string), ".")
		raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var claims map[string]any
		_ = json.Unmarshal(raw, &claims)
		if claims["tid"] != tenantA || claims["aud"] != testClientID || claims["nonce"] != "no" ||
			claims["iss"] != srv.URL+"/"+tenantA+"/v2.0" || claims["preferred_username"] != "admin@a.example" {
			t.Errorf("claims %v", claims)
		}
		if status, body := redeem(t, srv, f); status != 400 || body["error"] != "invalid_grant" {
			t.Errorf("second redeem: %d %v", status, body)
		}
	})
}

func TestAppTokensNeedAdminConsent(t *testing.T) {
	s, srv, hc := identityServer(t)
	cc := url.Values{"client_id": {testClientID}, "client_secret": {testClientSecret}, "grant_type": {"client_credentials"},
		"scope": {GraphScope}}
	post := func() (int, map[string]any) {
		resp, err := http.PostForm(srv.URL+"/"+tenantA+"/oauth2/v2.0/token", cc)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	if status, body := post(); status != 400 || body["error"] != "unauthorized_client" || !strings.Contains(body["error_description"].(string), "AADSTS700016") {
		t.Fatalf("without consent: %d %v", status, body)
	}
	q := url.Values{"client_id": {testClientID}, "scope": {GraphScope}, "redirect_uri": {testRedirect}, "state": {"s"}}
	resp, err := hc.Get(srv.URL + "/" + tenantA + "/v2.0/adminconsent?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !s.Consented(tenantA) {
		t.Fatalf("no consent after %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if status, body := post(); status != 200 {
		t.Fatalf("with consent: %d %v", status, body)
	}
	s.RevokeConsent(tenantA)
	if status, _ := post(); status != 400 {
		t.Fatalf("after revoking: %d", status)
	}
}
