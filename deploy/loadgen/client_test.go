package loadgen

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The client sends no token before Login and the one Login got after it;
// a wrong status is a *StatusError that quotes the answer.
func TestClientLoginAndDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/Auth/login":
			if r.Header.Get("Content-Type") != "application/json" {
				http.Error(w, "no JSON", http.StatusUnsupportedMediaType)
				return
			}
			body, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(body), `"password":"right"`) {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"title":"Unauthorized"}`))
				return
			}
			_, _ = w.Write([]byte(`{"accessToken":"tok-1"}`))
		case "/api/Customers/me":
			if r.Header.Get("Authorization") != "Bearer tok-1" {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"title":"no token: ` + r.Header.Get("Authorization") + `"}`))
				return
			}
			_, _ = w.Write([]byte(`{"customer":{}}`))
		}
	}))
	defer srv.Close()
	c := NewClient(srv.Client(), srv.URL)
	ctx := t.Context()

	data, err := c.Do(ctx, http.MethodGet, "/api/Customers/me", "", http.StatusOK)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized || ErrorKind(err) != "status 401" {
		t.Fatalf("before login: %v, want a 401 StatusError", err)
	}
	if want := `GET /api/Customers/me: status 401: {"title":"no token: "}`; err.Error() != want || !strings.Contains(string(data), "no token") {
		t.Fatalf("before login: %q with body %q, want %q and the body", err, data, want)
	}

	if err := c.Login(ctx, "a@example.com", "wrong"); err == nil || !strings.Contains(err.Error(), "status 401") ||
		!strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("login with a wrong password: %v", err)
	}
	if err := c.Login(ctx, "a@example.com", "right"); err != nil {
		t.Fatal(err)
	}
	data, err = c.Do(ctx, http.MethodGet, "/api/Customers/me", "", http.StatusOK)
	if err != nil || string(data) != `{"customer":{}}` {
		t.Fatalf("after login: %q, %v", data, err)
	}
}

// A request built without Authorize carries no token, logged in or not.
func TestClientNewRequest(t *testing.T) {
	c := NewClient(http.DefaultClient, "https://gw.example")
	req, err := c.NewRequest(t.Context(), http.MethodPost, "/api/Topics?x=1", `{"name":"a"}`)
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.String() != "https://gw.example/api/Topics?x=1" || req.Header.Get("Content-Type") != "application/json" ||
		req.Header.Get("Authorization") != "" {
		t.Fatalf("request %s %v", req.URL, req.Header)
	}
	req, _ = c.NewRequest(t.Context(), http.MethodGet, "/", "")
	if req.Header.Get("Content-Type") != "" || req.Body != nil {
		t.Fatalf("a request without body: %v", req.Header)
	}
	tok := "t"
	c.token.Store(&tok)
	c.Authorize(req)
	if req.Header.Get("Authorization") != "Bearer t" || req.Header.Get("X-Request-Id") != "" {
		t.Fatalf("authorized: %v", req.Header)
	}
	req, _ = c.NewRequest(WithRequestID(t.Context(), "soak-x-1"), http.MethodGet, "/", "")
	if req.Header.Get("X-Request-Id") != "soak-x-1" {
		t.Fatalf("with a request id: %v", req.Header)
	}
}
