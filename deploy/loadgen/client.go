package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// Client sends the JSON requests of a load run (its setup, its seeding, an
// open-loop call) to one base URL, with the bearer token of its last Login.
// It is safe for concurrent use, Login included: a long run logs in again
// while requests are in flight.
type Client struct {
	HTTP    *http.Client
	BaseURL string
	token   atomic.Pointer[string]
}

// NewClient sends requests to baseURL (such as the gateway's HTTPS URL)
// through hc.
func NewClient(hc *http.Client, baseURL string) *Client {
	return &Client{HTTP: hc, BaseURL: baseURL}
}

type requestIDKey struct{}

// WithRequestID makes the requests built with ctx carry id in X-Request-Id
// (the services take a client's id, and the gateway's access log keeps
// it): a load run can find each of its requests in the logs.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// NewRequest builds a request to the base URL's path; a non-empty body is
// sent as JSON, and the id of WithRequestID, if any, in X-Request-Id. It
// carries no token: see Authorize.
func (c *Client) NewRequest(ctx context.Context, method, path, body string) (*http.Request, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if id, _ := ctx.Value(requestIDKey{}).(string); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	return req, nil
}

// Authorize gives req the bearer token of the last Login (none before one).
func (c *Client) Authorize(req *http.Request) {
	if tok := c.token.Load(); tok != nil {
		req.Header.Set("Authorization", "Bearer "+*tok)
	}
}

// Do sends one authorized request and returns the body of the answer. An
// answer with another status than want is a *StatusError that quotes the
// start of its body (a problem document); the body is returned too.
func (c *Client) Do(ctx context.Context, method, path, body string, want int) ([]byte, error) {
	req, err := c.NewRequest(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	c.Authorize(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return data, &StatusError{Method: method, Path: req.URL.Path, Status: resp.StatusCode, Body: data}
	}
	return data, nil
}

// Login signs in at the platform's POST /api/Auth/login and keeps the
// access token for the requests that follow.
func (c *Client) Login(ctx context.Context, email, password string) error {
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	data, err := c.Do(ctx, http.MethodPost, "/api/Auth/login", string(body), http.StatusOK)
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	var tok struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.Unmarshal(data, &tok); err != nil || tok.AccessToken == "" {
		return fmt.Errorf("login: no accessToken in %s", data)
	}
	c.token.Store(&tok.AccessToken)
	return nil
}
