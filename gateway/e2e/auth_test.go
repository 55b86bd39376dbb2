package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/smtpfake"
)

// envOf returns one variable of a service's environment in the stack.
func envOf(t testing.TB, service, key string) string {
	t.Helper()
	for _, kv := range stk.ServiceEnv(service) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	t.Fatalf("%s has no %s", service, key)
	return ""
}

// signingKey reads the auth service's real signing key, so tests can mint
// tokens that differ from real ones in exactly one property.
func signingKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	b, err := os.ReadFile(envOf(t, "auth", "AUTH_SIGNING_KEY_FILE"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(ed25519.PrivateKey)
}

// tokenParts splits a real token into its header (with kid) and claims.
func tokenParts(t testing.TB, raw string) (map[string]any, authn.Claims) {
	t.Helper()
	parts := strings.Split(raw, ".")
	var hdr map[string]any
	var claims authn.Claims
	for i, dst := range []any{&hdr, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatal(err)
		}
	}
	return hdr, claims
}

func mint(t testing.TB, kid string, c authn.Claims, key ed25519.PrivateKey) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newCustomer bootstraps another tenant with its own admin and logs in.
func newCustomer(t testing.TB, name string) (email, password, token string) {
	t.Helper()
	email = "admin-" + randid.Hex(4) + "@" + strings.ToLower(strings.ReplaceAll(name, " ", "")) + ".test"
	password = "pw-" + randid.Hex(10)
	out, err := stk.Command(t.Context(), "auth", "bootstrap", "-customer", name, "-email", email, "-password", password).CombinedOutput()
	if err != nil {
		t.Fatalf("bootstrap %s: %v %s", name, err, out)
	}
	return email, password, client(t).Login(email, password)
}

type me struct {
	Customer struct {
		CustomerID int64  `json:"customerID"`
		Name       string `json:"name"`
	} `json:"customer"`
	Account struct {
		AccountID int64  `json:"accountID"`
		Email     string `json:"email"`
		Role      string `json:"role"`
	} `json:"account"`
}

func TestAuthLoginMeLogout(t *testing.T) {
	c := client(t)
	resp := c.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": demo.Email, "password": demo.Password})
	if resp.Status != http.StatusOK {
		t.Fatalf("login: %d %s", resp.Status, resp.Body)
	}
	var tok e2ekit.Token
	resp.JSON(t, &tok)
	if tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token response: %+v %v", tok, resp.Header)
	}
	exp, err := time.Parse(time.RFC3339, tok.ExpiresAt)
	if err != nil || time.Until(exp) < 59*time.Minute || time.Until(exp) > 61*time.Minute {
		t.Fatalf("expiresAt %q", tok.ExpiresAt)
	}

	resp = c.Do(http.MethodGet, "/api/Customers/me", tok.AccessToken, nil)
	if resp.Status != http.StatusOK {
		t.Fatalf("me: %d %s", resp.Status, resp.Body)
	}
	var m me
	resp.JSON(t, &m)
	if m.Customer.Name != demo.Customer || m.Account.Email != demo.Email || m.Account.Role != "admin" || m.Customer.CustomerID == 0 {
		t.Fatalf("me: %+v", m)
	}

	// Another login gives another token; logging out one leaves the other.
	other := c.Login(demo.Email, demo.Password)
	if resp := c.Do(http.MethodPost, "/api/Auth/logout", tok.AccessToken, nil); resp.Status != http.StatusNoContent {
		t.Fatalf("logout: %d %s", resp.Status, resp.Body)
	}
	resp = c.Do(http.MethodGet, "/api/Customers/me", tok.AccessToken, nil)
	if p := resp.Problem(t); resp.Status != http.StatusUnauthorized || !strings.Contains(p.Detail, "revoked") {
		t.Fatalf("revoked token: %d %+v", resp.Status, p)
	}
	resp = c.Do(http.MethodPost, "/api/Auth/logout", tok.AccessToken, nil)
	if p := resp.Problem(t); resp.Status != http.StatusUnauthorized || p.Status != http.StatusUnauthorized || !strings.Contains(p.Detail, "revoked") {
		t.Fatalf("second logout: %d %+v", resp.Status, p)
	}
	if resp := c.Do(http.MethodGet, "/api/Customers/me", other, nil); resp.Status != http.StatusOK {
		t.Fatalf("the other session must survive: %d", resp.Status)
	}
}

func TestAuthRejectsBadTokens(t *testing.T) {
	c := client(t)
	good := c.Login(demo.Email, demo.Password)
	hdr, claims := tokenParts(t, good)
	kid := hdr["kid"].(string)
	key := signingKey(t)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)

	// Sanity: a token minted here with the real key and unchanged claims works,
	// so each failure below is due to its one difference.
	if resp := c.Do(http.MethodGet, "/api/Customers/me", mint(t, kid, claims, key), nil); resp.Status != http.StatusOK {
		t.Fatalf("re-minted token refused: %d %s", resp.Status, resp.Body)
	}
	with := func(f func(*authn.Claims)) string {
		c := claims
		f(&c)
		return mint(t, kid, c, key)
	}
	parts := strings.Split(good, ".")
	noneHdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"` + kid + `"}`))
	forged := claims
	forged.CustomerID = claims.CustomerID + 1000
	forgedPayload, _ := json.Marshal(forged)

	cases := map[string]struct {
		header string
		detail string
	}{
		"missing header":     {"", "Bearer"},
		"basic scheme":       {"Basic ZGVtbzpkZW1v", "Bearer"},
		"empty bearer":       {"Bearer ", "Bearer"},
		"garbage":            {"Bearer abc.def.ghi", "invalid"},
		"tampered signature": {"Bearer " + parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])), "invalid"},
		"tampered payload":   {"Bearer " + parts[0] + "." + base64.RawURLEncoding.EncodeToString(forgedPayload) + "." + parts[2], "invalid"},
		"alg none":           {"Bearer " + noneHdr + "." + parts[1] + ".", "invalid"},
		"another key":        {"Bearer " + mint(t, kid, claims, otherKey), "invalid"},
		"unknown kid":        {"Bearer " + mint(t, "not-a-kid", claims, otherKey), "invalid"},
		"expired": {"Bearer " + with(func(c *authn.Claims) {
			c.IssuedAt = jwt.NewNumericDate(time.Now().Add(-2 * time.Hour))
			c.IssuedAtMs = c.IssuedAt.UnixMilli()
			c.NotBefore = c.IssuedAt
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour))
		}), "expired"},
		"wrong issuer":   {"Bearer " + with(func(c *authn.Claims) { c.Issuer = "https://evil.example" }), "invalid"},
		"wrong audience": {"Bearer " + with(func(c *authn.Claims) { c.Audience = jwt.ClaimStrings{"other-api"} }), "invalid"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, stk.HTTPSURL+"/api/Customers/me", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp := client(t).DoRequest(req)
			p := resp.Problem(t)
			if resp.Status != http.StatusUnauthorized || !strings.Contains(p.Detail, tc.detail) {
				t.Fatalf("%d %+v", resp.Status, p)
			}
			if resp.Header.Get("Content-Type") != "application/problem+json" || resp.Header.Get("WWW-Authenticate") == "" {
				t.Fatalf("headers: %v", resp.Header)
			}
		})
	}
}

func TestAuthLoginFailuresAndThrottling(t *testing.T) {
	c := client(t)
	wrong := c.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": demo.Email, "password": "not the password"})
	unknown := c.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": "nobody-" + randid.Hex(4) + "@example.com", "password": "not the password"})
	if wrong.Status != http.StatusUnauthorized || unknown.Status != http.StatusUnauthorized {
		t.Fatalf("wrong password %d, unknown address %d", wrong.Status, unknown.Status)
	}
	if pw, pu := wrong.Problem(t), unknown.Problem(t); pw.Detail != pu.Detail || pw.Title != pu.Title {
		t.Fatalf("the answers must not reveal which accounts exist: %+v vs %+v", pw, pu)
	}
	// A successful login resets the counter of the address.
	c.Login(demo.Email, demo.Password)

	// Parallel guesses for one address: each is counted before the password
	// is checked, so exactly the limit (5) get an answer about the password.
	victim := "throttle-" + randid.Hex(4) + "@example.com"
	statuses := parallelStatuses(t, 20, func(i int) *e2ekit.Response {
		return c.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": victim, "password": "guess-" + strconv.Itoa(i)})
	})
	if statuses[http.StatusUnauthorized] != 5 || statuses[http.StatusTooManyRequests] != 15 {
		t.Fatalf("20 parallel guesses: %v, want 5 x 401 and 15 x 429", statuses)
	}
	r := c.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": strings.ToUpper(victim), "password": "guess"})
	if p := r.Problem(t); r.Status != http.StatusTooManyRequests || p.Status != http.StatusTooManyRequests {
		t.Fatalf("after the limit: %d %s", r.Status, r.Body)
	}
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 15*60 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	// Throttling is per address: the demo account still logs in.
	c.Login(demo.Email, demo.Password)
}

func TestAuthMalformedBodies(t *testing.T) {
	c := client(t)
	cases := []struct {
		name, ctype, body string
		status            int
		field             string
	}{
		{"not json", "application/json", `email=a&password=b`, 400, ""},
		{"truncated", "application/json", `{"email":"a@b.c",`, 400, ""},
		{"array", "application/json", `[]`, 400, ""},
		{"number email", "application/json", `{"email":42,"password":"x"}`, 400, "email"},
		{"missing password", "application/json", `{"email":"a@b.c"}`, 400, "password"},
		{"NUL in email", "application/json", `{"email":"a\u0000@b.c","password":"not the password"}`, 400, "email"},
		{"control character in email", "application/json", `{"email":"a\u001b@b.c","password":"not the password"}`, 400, "email"},
		{"empty object", "application/json", `{}`, 400, "email"},
		{"empty body", "application/json", ``, 400, ""},
		{"form encoded", "application/x-www-form-urlencoded", `email=a&password=b`, 415, ""},
		{"no content type", "", `{"email":"a@b.c","password":"x"}`, 415, ""},
		{"huge", "application/json", `{"email":"` + strings.Repeat("a", 2<<20) + `"}`, 413, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, stk.HTTPSURL+"/api/Auth/login", strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp := c.DoRequest(req)
			p := resp.Problem(t)
			if resp.Status != tc.status || p.Status != tc.status {
				t.Fatalf("%d %+v", resp.Status, p)
			}
			if tc.field != "" && p.Errors[tc.field] == "" {
				t.Fatalf("no error for %s: %+v", tc.field, p)
			}
		})
	}
}

func TestAuthPathsAreCaseInsensitive(t *testing.T) {
	c := client(t)
	for _, path := range []string{"/api/auth/login", "/API/AUTH/LOGIN", "/Api/Auth/Login"} {
		resp := c.Do(http.MethodPost, path, "", map[string]string{"email": demo.Email, "password": demo.Password})
		if resp.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.Status, resp.Body)
		}
	}
	tok := c.Login(demo.Email, demo.Password)
	for _, path := range []string{"/api/customers/me", "/API/CUSTOMERS/ME"} {
		if resp := c.Do(http.MethodGet, path, tok, nil); resp.Status != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.Status)
		}
	}
	for _, path := range []string{"/api/Auth/jwks", "/.well-known/jwks.json", "/.WELL-KNOWN/JWKS.JSON"} {
		resp := c.Do(http.MethodGet, path, "", nil)
		var set authn.JWKS
		resp.JSON(t, &set)
		if resp.Status != http.StatusOK || len(set.Keys) != 1 || set.Keys[0].Alg != "EdDSA" {
			t.Fatalf("%s: %d %s", path, resp.Status, resp.Body)
		}
	}
}

// mailTo waits for the stack's mail relay to hold a mail to addr whose
// decoded text contains want, and returns that text.
func mailTo(t *testing.T, addr, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var text string
	_, err := stk.Mail.Wait(ctx, func(msgs []smtpfake.Message) bool {
		for _, m := range msgs {
			if len(m.To) == 1 && m.To[0] == addr {
				if s := stack.FormatMail(m); strings.Contains(s, want) {
					text = s
					return true
				}
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no mail to %s containing %q: %v", addr, want, err)
	}
	return text
}

var resetLinkRe = regexp.MustCompile(`/reset-password#token=([A-Za-z0-9_-]+)`)

// TestAuthPasswordReset: the reset link reaches the owner by mail (the
// stack's relay, over STARTTLS), no event on the bus carries the token, the
// token sets a new password once, and the owner is told by mail.
func TestAuthPasswordReset(t *testing.T) {
	c := client(t)
	email, password, oldToken := newCustomer(t, "Reset Co")

	nc, err := nats.Connect(stk.NATSURL) // the harness user: auth may only publish its events
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	names := contracts.Names{Prefix: stk.NATSPrefix}
	msgs := make(chan *nats.Msg, 256)
	sub, err := nc.ChanSubscribe(names.Subject("events.>"), msgs)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	for _, addr := range []string{"nobody-" + randid.Hex(3) + "@example.com", email} {
		if r := c.Do(http.MethodPost, "/api/Auth/forgot-password", "", map[string]string{"email": addr}); r.Status != http.StatusAccepted {
			t.Fatalf("forgot %s: %d %s", addr, r.Status, r.Body)
		}
	}
	for _, bad := range []string{"not an address", "a\x00@example.com"} {
		r := c.Do(http.MethodPost, "/api/Auth/forgot-password", "", map[string]string{"email": bad})
		if p := r.Problem(t); r.Status != http.StatusBadRequest || p.Errors["email"] == "" {
			t.Fatalf("invalid address %q: %d %s", bad, r.Status, r.Body)
		}
	}
	mail := mailTo(t, email, "/reset-password#token=")
	m := resetLinkRe.FindStringSubmatch(mail)
	if m == nil || len(m[1]) != 43 || !strings.Contains(mail, "Subject: Reset your password") {
		t.Fatalf("reset mail:\n%s", mail)
	}
	token := m[1]
	var ev contracts.Event[contracts.PasswordResetRequested]
	deadline := time.After(10 * time.Second)
	for ev.Data.Email != email {
		select {
		case m := <-msgs:
			if strings.Contains(string(m.Data), token) {
				t.Fatalf("an event carries the reset token: %s %s", m.Subject, m.Data)
			}
			if m.Subject == names.Subject(contracts.EventSubject(contracts.EventPasswordResetRequested)) {
				if err := json.Unmarshal(m.Data, &ev); err != nil {
					t.Fatal(err)
				}
			}
		case <-deadline:
			t.Fatal("no password-reset event for the address")
		}
	}
	if ttl := time.Until(ev.Data.ExpiresAt); ttl < 29*time.Minute || ttl > 31*time.Minute {
		t.Fatalf("reset token lifetime %v", ttl)
	}

	r := c.Do(http.MethodPost, "/api/Auth/reset-password", "", map[string]string{"token": "forged-token", "newPassword": "a long new passphrase"})
	if p := r.Problem(t); r.Status != http.StatusBadRequest || p.Errors["token"] == "" {
		t.Fatalf("forged token: %d %+v", r.Status, p)
	}
	r = c.Do(http.MethodPost, "/api/Auth/reset-password", "", map[string]string{"token": token, "newPassword": "short"})
	if p := r.Problem(t); r.Status != http.StatusBadRequest || p.Errors["newPassword"] == "" {
		t.Fatalf("short password: %d %+v", r.Status, p)
	}
	if r := c.Do(http.MethodPost, "/api/Auth/reset-password", "", map[string]string{"token": token, "newPassword": "a long new passphrase"}); r.Status != http.StatusNoContent {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	r = c.Do(http.MethodGet, "/api/Customers/me", oldToken, nil)
	if p := r.Problem(t); r.Status != http.StatusUnauthorized || !strings.Contains(p.Detail, "revoked") {
		t.Fatalf("a token issued before the reset must be refused: %d %s", r.Status, r.Body)
	}
	r = c.Do(http.MethodPost, "/api/Auth/reset-password", "", map[string]string{"token": token, "newPassword": "another passphrase"})
	if p := r.Problem(t); r.Status != http.StatusBadRequest || p.Errors["token"] == "" {
		t.Fatalf("a used reset token must be refused: %d %s", r.Status, r.Body)
	}
	r = c.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": email, "password": password})
	if p := r.Problem(t); r.Status != http.StatusUnauthorized || p.Status != http.StatusUnauthorized {
		t.Fatalf("the old password must be refused: %d %s", r.Status, r.Body)
	}
	fresh := c.Login(email, "a long new passphrase")
	if r := c.Do(http.MethodGet, "/api/Customers/me", fresh, nil); r.Status != http.StatusOK {
		t.Fatalf("new token: %d", r.Status)
	}
	mailTo(t, email, "Subject: Your password was changed")
}

func TestAuthAccountsAndRoles(t *testing.T) {
	c := client(t)
	_, _, admin := newCustomer(t, "Roles Co")
	agentEmail := "agent-" + randid.Hex(4) + "@roles.test"
	r := c.Do(http.MethodPost, "/api/Accounts", admin, map[string]string{"email": agentEmail, "name": "Agent", "role": "agent", "password": "agent passphrase"})
	if r.Status != http.StatusCreated || r.Header.Get("Location") == "" {
		t.Fatalf("create agent: %d %s", r.Status, r.Body)
	}
	location := r.Header.Get("Location")
	// An address taken in this customer or in another gets the same answer,
	// which does not say where the address is used.
	own := c.Do(http.MethodPost, "/api/Accounts", admin, map[string]string{"email": agentEmail, "name": "Again", "role": "agent", "password": "agent passphrase"})
	foreign := c.Do(http.MethodPost, "/api/Accounts", admin, map[string]string{"email": strings.ToUpper(demo.Email), "name": "Again", "role": "agent", "password": "agent passphrase"})
	po, pf := own.Problem(t), foreign.Problem(t)
	if own.Status != http.StatusConflict || foreign.Status != http.StatusConflict || po.Detail != pf.Detail || po.Title != pf.Title ||
		po.Errors["email"] == "" || po.Errors["email"] != pf.Errors["email"] || len(po.Errors) != 1 || len(pf.Errors) != 1 {
		t.Fatalf("taken addresses: this customer's %d %s, another's %d %s", own.Status, own.Body, foreign.Status, foreign.Body)
	}
	if !strings.Contains(po.Errors["email"], "cannot be used for a new account") {
		t.Fatalf("conflict wording: %+v", po)
	}
	r = c.Do(http.MethodPost, "/api/Accounts", admin, map[string]string{"email": "x", "role": "owner", "password": "short"})
	if p := r.Problem(t); r.Status != http.StatusBadRequest || p.Errors["email"] == "" || p.Errors["role"] == "" || p.Errors["password"] == "" {
		t.Fatalf("validation: %d %+v", r.Status, p)
	}
	agent := c.Login(agentEmail, "agent passphrase")
	r = c.Do(http.MethodGet, location, admin, nil)
	var got map[string]any
	r.JSON(t, &got)
	if r.Status != http.StatusOK || got["email"] != agentEmail || got["role"] != "agent" {
		t.Fatalf("GET %s: %d %s", location, r.Status, r.Body)
	}
	r = c.Do(http.MethodGet, location, agent, nil)
	if p := r.Problem(t); r.Status != http.StatusForbidden || p.Status != http.StatusForbidden {
		t.Fatalf("agent reading an account: %d %s", r.Status, r.Body)
	}
	// Another customer's admin does not learn that the account exists: the
	// same 404 as an id nobody has.
	demoAdmin := c.Login(demo.Email, demo.Password)
	cross := c.Do(http.MethodGet, location, demoAdmin, nil)
	none := c.Do(http.MethodGet, "/api/Accounts/999999999", demoAdmin, nil)
	if pc, pn := cross.Problem(t), none.Problem(t); cross.Status != http.StatusNotFound || none.Status != http.StatusNotFound || pc.Detail != pn.Detail {
		t.Fatalf("another tenant's account: %d %s; an unknown id: %d %s", cross.Status, cross.Body, none.Status, none.Body)
	}
	for path, want := range map[string]int{"/api/Accounts/abc": 400, "/api/Accounts/0": 400, "/api/Accounts/999999999": 404} {
		r := c.Do(http.MethodGet, path, admin, nil)
		if p := r.Problem(t); r.Status != want || p.Status != want || p.Detail == "" {
			t.Fatalf("%s: %d %s, want %d", path, r.Status, r.Body, want)
		}
	}
	r = c.Do(http.MethodGet, "/api/Accounts", agent, nil)
	if p := r.Problem(t); r.Status != http.StatusForbidden || p.Status != http.StatusForbidden {
		t.Fatalf("agent listing accounts: %d %s", r.Status, r.Body)
	}
	r = c.Do(http.MethodPost, "/api/Accounts", agent, map[string]string{"email": "y@roles.test", "role": "admin", "password": "agent passphrase"})
	if p := r.Problem(t); r.Status != http.StatusForbidden || p.Status != http.StatusForbidden {
		t.Fatalf("agent creating an admin: %d %s", r.Status, r.Body)
	}
	r = c.Do(http.MethodGet, "/api/Accounts?pageSize=1", admin, nil)
	var page struct {
		Items      []map[string]any `json:"items"`
		TotalCount int              `json:"totalCount"`
		TotalPages int              `json:"totalPages"`
	}
	r.JSON(t, &page)
	if r.Status != http.StatusOK || page.TotalCount != 2 || page.TotalPages != 2 || len(page.Items) != 1 {
		t.Fatalf("accounts page: %d %s", r.Status, r.Body)
	}
	// The demo customer's admin sees only its own accounts.
	r = c.Do(http.MethodGet, "/api/Accounts?pageSize=100", demoAdmin, nil)
	page.Items = nil
	r.JSON(t, &page)
	if r.Status != http.StatusOK || len(page.Items) == 0 || len(page.Items) != page.TotalCount {
		t.Fatalf("the demo customer's accounts: %d %s", r.Status, r.Body)
	}
	sawDemo := false
	for _, it := range page.Items {
		if it["email"] == agentEmail {
			t.Fatal("another customer's account is listed")
		}
		sawDemo = sawDemo || it["email"] == demo.Email
	}
	if !sawDemo {
		t.Fatalf("the demo admin is not in its own list: %s", r.Body)
	}
}

// TestAuthDeletedCustomer: a token outlives its customer only until the
// customer is looked up.
func TestAuthDeletedCustomer(t *testing.T) {
	c := client(t)
	_, _, tok := newCustomer(t, "Gone Co")
	_, claims := tokenParts(t, tok)
	conn, err := pgx.Connect(context.Background(), stk.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "UPDATE auth.customers SET deleted_at = now() WHERE customer_id = $1", claims.CustomerID); err != nil {
		t.Fatal(err)
	}
	r := c.Do(http.MethodGet, "/api/Customers/me", tok, nil)
	if p := r.Problem(t); r.Status != http.StatusNotFound || p.Status != http.StatusNotFound || p.Detail == "" {
		t.Fatalf("me of a deleted customer: %d %s", r.Status, r.Body)
	}
}

// parallelStatuses runs n calls at once and counts their statuses.
func parallelStatuses(t *testing.T, n int, call func(i int) *e2ekit.Response) map[int]int {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	statuses := map[int]int{}
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := call(i)
			if r.Status == http.StatusTooManyRequests {
				if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
					t.Errorf("429 without a usable Retry-After: %v", r.Header)
				}
			}
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return statuses
}

// TestAuthAccountCreationLimit: a customer creates at most 20 accounts per
// hour (the default); parallel creations beyond that get 429.
func TestAuthAccountCreationLimit(t *testing.T) {
	c := client(t)
	_, _, admin := newCustomer(t, "Busy Co")
	statuses := parallelStatuses(t, 24, func(i int) *e2ekit.Response {
		return c.Do(http.MethodPost, "/api/Accounts", admin, map[string]string{"email": "bulk-" + strconv.Itoa(i) + "-" + randid.Hex(3) + "@busy.test",
			"name": "Bulk", "role": "integration", "password": "integration passphrase"})
	})
	if statuses[http.StatusCreated] != 20 || statuses[http.StatusTooManyRequests] != 4 {
		t.Fatalf("24 parallel creations: %v, want 20 x 201 and 4 x 429", statuses)
	}
	// Another customer has its own allowance.
	_, _, other := newCustomer(t, "Calm Co")
	r := c.Do(http.MethodPost, "/api/Accounts", other, map[string]string{"email": "one-" + randid.Hex(3) + "@calm.test", "role": "agent", "password": "agent passphrase"})
	if r.Status != http.StatusCreated {
		t.Fatalf("another customer: %d %s", r.Status, r.Body)
	}
}

// TestAuthControlCharacters: a NUL in a field that reaches PostgreSQL is a
// 400 naming the field, never a 500.
func TestAuthControlCharacters(t *testing.T) {
	c := client(t)
	_, _, admin := newCustomer(t, "Nul Co")
	cases := []struct {
		name, path, token, body, field string
	}{
		{"login email", "/api/Auth/login", "", `{"email":"nul\u0000@example.com","password":"not the password"}`, "email"},
		{"account name", "/api/Accounts", admin, `{"email":"nul-` + randid.Hex(3) + `@nul.test","name":"Bob\u0000","role":"agent","password":"agent passphrase"}`, "name"},
		{"account email", "/api/Accounts", admin, `{"email":"nul\u0000@nul.test","name":"Bob","role":"agent","password":"agent passphrase"}`, "email"},
		{"reset token", "/api/Auth/reset-password", "", `{"token":"abc\u0000","newPassword":"a long new passphrase"}`, "token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Do(http.MethodPost, tc.path, tc.token, tc.body)
			if p := r.Problem(t); r.Status != http.StatusBadRequest || p.Errors[tc.field] == "" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
}

// Reset requests are limited per address, known or not: parallel requests
// for one address get 5 × 202 and then 429 problems with Retry-After, the
// same for an address nobody uses (the limit tells nothing about which exist).
func TestAuthForgotPasswordLimitedPerAddress(t *testing.T) {
	t.Parallel()
	email, _, _ := newCustomer(t, "Reset Limit "+randid.Hex(3))
	for _, addr := range []string{email, "nobody-" + randid.Hex(4) + "@example.com"} {
		const n = 9
		statuses := make(chan *e2ekit.Response, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses <- client(t).Do(http.MethodPost, "/api/Auth/forgot-password", "", map[string]string{"email": addr})
			}()
		}
		wg.Wait()
		close(statuses)
		accepted, limited := 0, 0
		for r := range statuses {
			switch r.Status {
			case http.StatusAccepted:
				accepted++
			case http.StatusTooManyRequests:
				limited++
				if p := r.Problem(t); p.Status != 429 || r.Header.Get("Retry-After") == "" {
					t.Errorf("429 without problem body or Retry-After: %v %s", r.Header, r.Body)
				}
			default:
				t.Errorf("forgot-password for %s: %d %s", addr, r.Status, r.Body)
			}
		}
		if accepted != 5 || limited != n-5 {
			t.Fatalf("%s: %d accepted, %d limited; want 5 and %d", addr, accepted, limited, n-5)
		}
	}
}

// TestAuthAvailability: every role sets its own account's availability,
// which the account JSON shows and auth's accounts RPC answers the tickets
// service with.
func TestAuthAvailability(t *testing.T) {
	c := client(t)
	tn := newTenant(t)
	admin := tn.token
	agentEmail := "agent-" + randid.Hex(4) + "@avail.test"
	var agentAccount struct {
		AccountID int64 `json:"accountID"`
	}
	wantOK(t, c.Do(http.MethodPost, "/api/Accounts", admin, map[string]string{"email": agentEmail, "name": "Agent", "role": "agent", "password": "agent passphrase"}),
		http.StatusCreated, &agentAccount)
	wantOK(t, c.Do(http.MethodPost, "/api/Accounts", admin, map[string]string{"email": "bot-" + randid.Hex(4) + "@avail.test", "name": "Bot", "role": "integration", "password": "bot passphrase!"}),
		http.StatusCreated, nil)
	agent := c.Login(agentEmail, "agent passphrase")

	type account struct {
		AccountID int64 `json:"accountID"`
		Available *bool `json:"available"`
	}
	var adminMe struct {
		Account account `json:"account"`
	}
	wantOK(t, c.Do(http.MethodGet, "/api/Customers/me", admin, nil), http.StatusOK, &adminMe)
	adminID := adminMe.Account.AccountID

	// available reads one account's availability through /api/Customers/me
	// (as the account) and /api/Accounts/{id} (as the admin).
	available := func(t *testing.T, token string, accountID int64) bool {
		t.Helper()
		var m struct {
			Account account `json:"account"`
		}
		wantOK(t, c.Do(http.MethodGet, "/api/Customers/me", token, nil), http.StatusOK, &m)
		var a account
		wantOK(t, c.Do(http.MethodGet, "/api/Accounts/"+strconv.FormatInt(accountID, 10), admin, nil), http.StatusOK, &a)
		if m.Account.AccountID != accountID || m.Account.Available == nil || a.Available == nil || *m.Account.Available != *a.Available {
			t.Fatalf("account %d: me says %+v, GET /api/Accounts/{id} says %+v", accountID, m.Account, a)
		}
		return *a.Available
	}
	rpcAccounts := func(t *testing.T, req contracts.AccountsRequest) []contracts.AccountSummary {
		t.Helper()
		// The harness user stands in for the tickets service.
		bus, err := natsbus.Connect(stk.NATSURL, contracts.HarnessUser, contracts.Names{Prefix: stk.NATSPrefix},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		defer bus.NC.Close()
		r, err := natsbus.Request[contracts.AccountsRequest, contracts.AccountsReply](t.Context(), bus, contracts.RPCAccounts, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Accounts
	}

	for _, who := range []struct {
		name, token string
		id          int64
	}{{"admin", admin, adminID}, {"agent", agent, agentAccount.AccountID}} {
		t.Run(who.name, func(t *testing.T) {
			if available(t, who.token, who.id) {
				t.Fatal("a new account is available")
			}
			for _, v := range []bool{true, false} {
				wantOK(t, c.Do(http.MethodPut, "/api/Accounts/me/availability", who.token, map[string]bool{"available": v}), http.StatusNoContent, nil)
				if got := available(t, who.token, who.id); got != v {
					t.Fatalf("available = %v after setting %v", got, v)
				}
			}
		})
	}

	t.Run("paths are case-insensitive", func(t *testing.T) {
		wantOK(t, c.Do(http.MethodPut, "/API/ACCOUNTS/ME/AVAILABILITY", agent, map[string]bool{"available": true}), http.StatusNoContent, nil)
		if !available(t, agent, agentAccount.AccountID) {
			t.Fatal("the agent is not available")
		}
	})

	t.Run("bad requests", func(t *testing.T) {
		cases := []struct {
			name   string
			token  string
			body   any
			status int
			fields []string
		}{
			{"empty object", agent, `{}`, http.StatusBadRequest, []string{"available"}},
			{"null", agent, `{"available":null}`, http.StatusBadRequest, []string{"available"}},
			{"string", agent, `{"available":"yes"}`, http.StatusBadRequest, []string{"available"}},
			{"number", agent, `{"available":1}`, http.StatusBadRequest, []string{"available"}},
			{"malformed JSON", agent, `{"available":`, http.StatusBadRequest, nil},
			{"no token", "", map[string]bool{"available": false}, http.StatusUnauthorized, nil},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				wantClientError(t, c.Do(http.MethodPut, "/api/Accounts/me/availability", tc.token, tc.body), tc.status, tc.fields...)
			})
		}
		// None of them changed the agent's availability.
		if !available(t, agent, agentAccount.AccountID) {
			t.Fatal("a refused request changed the availability")
		}
	})

	t.Run("accounts RPC", func(t *testing.T) {
		_, _, otherAdmin := newCustomer(t, "Other Avail Co")
		var other struct {
			Account account `json:"account"`
		}
		wantOK(t, c.Do(http.MethodGet, "/api/Customers/me", otherAdmin, nil), http.StatusOK, &other)
		wantOK(t, c.Do(http.MethodPut, "/api/Accounts/me/availability", otherAdmin, map[string]bool{"available": true}), http.StatusNoContent, nil)

		// Without ids: the admins and agents only (not the integration).
		got := rpcAccounts(t, contracts.AccountsRequest{CustomerID: tn.customerID})
		want := []contracts.AccountSummary{
			{AccountID: adminID, Role: "admin", Available: false},
			{AccountID: agentAccount.AccountID, Name: "Agent", Email: agentEmail, Role: "agent", Available: true},
		}
		if len(got) != 2 || got[0].AccountID != want[0].AccountID || got[0].Role != "admin" || got[0].Available ||
			got[0].Email == "" || got[1] != want[1] {
			t.Fatalf("accounts = %+v, want %+v", got, want)
		}
		// Another customer's id is absent, not an error.
		got = rpcAccounts(t, contracts.AccountsRequest{CustomerID: tn.customerID, AccountIDs: []int64{other.Account.AccountID, agentAccount.AccountID}})
		if len(got) != 1 || got[0] != want[1] {
			t.Fatalf("accounts = %+v, want only the agent", got)
		}
	})
}

// clientFrom is a client whose connections to the gateway come from a
// given loopback address, which the gateway passes on as the client IP.
func clientFrom(t testing.TB, ip string) *e2ekit.Client {
	hc := stk.HTTPClient()
	tr := hc.Transport.(*http.Transport).Clone()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	tr.DialContext = d.DialContext
	return e2ekit.NewClient(t, stk.HTTPSURL, &http.Client{Transport: tr, Timeout: hc.Timeout}, api)
}

// TestAuthWrongPasswordsDoNotLockTheOwnerOut: five wrong passwords from one
// client IP lock that IP out of the address, not the owner: the right
// password from another IP logs in, after at most the address's backoff
// delay (its Retry-After).
func TestAuthWrongPasswordsDoNotLockTheOwnerOut(t *testing.T) {
	email, password, _ := newCustomer(t, "Lockout Co")
	guesser, owner := clientFrom(t, "127.0.0.1"), clientFrom(t, "127.0.0.2")
	for i := range 5 {
		r := guesser.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": email, "password": "guess-" + strconv.Itoa(i)})
		if r.Status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := guesser.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": email, "password": password})
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("the guessing IP with the right password: %d %s", r.Status, r.Body)
	}
	for try := 0; ; try++ {
		r = owner.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": email, "password": password})
		if r.Status != http.StatusTooManyRequests {
			break
		}
		if try == 2 {
			t.Fatalf("the owner's IP is still refused after waiting out the backoff twice: %s", r.Body)
		}
		// The address's backoff: a delay of at most a few seconds here.
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 2 {
			t.Fatalf("the owner's IP got 429 with Retry-After %q, want the backoff's first delay", r.Header.Get("Retry-After"))
		}
		time.Sleep(time.Duration(ra) * time.Second)
	}
	var tok e2ekit.Token
	r.JSON(t, &tok)
	if r.Status != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("the owner from another IP: %d %s", r.Status, r.Body)
	}
	if r := guesser.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": email, "password": password}); r.Status != http.StatusTooManyRequests {
		t.Fatalf("the guessing IP stays throttled for the address: %d", r.Status)
	}
}
