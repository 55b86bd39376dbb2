// Package e2ekit is the one way the end-to-end suites (gateway/e2e and
// every gateway/e2e* beside it) start a stack and talk to it: Prepare
// builds the binaries and loads the contract, Main starts a suite's stack
// (deploy/stack) on free ports against a fresh database and runs the tests,
// and every test calls the gateway over HTTPS with a Client that checks
// each response against gateway/openapi.yaml. It holds no tests itself;
// it is internal to the gateway module because only its suites use it.
package e2ekit

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"supportplatform.dev/pkg/apicontract"
)

// Client calls the gateway over HTTPS on behalf of one test and validates
// every response against the contract: an undocumented route or status, or
// a body or header that does not match, fails the test.
type Client struct {
	t        testing.TB
	BaseURL  string
	HTTP     *http.Client
	Contract *apicontract.Contract
}

// NewClient returns a client for baseURL (the gateway's HTTPS URL) using
// httpClient (which must trust the dev CA).
func NewClient(t testing.TB, baseURL string, httpClient *http.Client, contract *apicontract.Contract) *Client {
	return &Client{t: t, BaseURL: baseURL, HTTP: httpClient, Contract: contract}
}

// Response is what a call returned.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it cannot.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %d body %q: %v", r.Status, Truncate(r.Body), err)
	}
}

// Problem decodes an error body.
func (r *Response) Problem(t testing.TB) Problem {
	t.Helper()
	var p Problem
	r.JSON(t, &p)
	return p
}

// Problem is the RFC 9457 body of every error.
type Problem struct {
	Type      string            `json:"type"`
	Title     string            `json:"title"`
	Status    int               `json:"status"`
	Detail    string            `json:"detail"`
	Instance  string            `json:"instance"`
	RequestID string            `json:"requestId"`
	Errors    map[string]string `json:"errors"`
}

// Do sends method path with an optional bearer token and body, and returns
// the validated response. body may be nil (no body), a []byte or string
// (sent as is, for malformed input) or any other value (sent as JSON). A
// body is labelled application/json.
func (c *Client) Do(method, path, token string, body any) *Response {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.t.Fatalf("marshal request body: %v", err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.BaseURL+path, r)
	if err != nil {
		c.t.Fatalf("new request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return c.DoRequest(req)
}

// DoRequest sends a prepared request (custom headers, content types) and
// returns the validated response.
func (c *Client) DoRequest(req *http.Request) *Response {
	c.t.Helper()
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", req.Method, req.URL.Path, err)
	}
	if err := c.Contract.ValidateResponse(req, resp.StatusCode, resp.Header, data); err != nil {
		c.t.Errorf("contract: %v", err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// Token is the body of a successful login.
type Token struct {
	AccessToken string `json:"accessToken"`
	TokenType   string `json:"tokenType"`
	ExpiresIn   int    `json:"expiresIn"`
	ExpiresAt   string `json:"expiresAt"`
}

// Login logs in and returns the access token, failing the test unless the
// login succeeds.
func (c *Client) Login(email, password string) string {
	c.t.Helper()
	resp := c.Do(http.MethodPost, "/api/Auth/login", "", map[string]string{"email": email, "password": password})
	if resp.Status != http.StatusOK {
		c.t.Fatalf("login %s: %d %s", email, resp.Status, Truncate(resp.Body))
	}
	var tok Token
	resp.JSON(c.t, &tok)
	if tok.AccessToken == "" {
		c.t.Fatalf("login %s: empty accessToken", email)
	}
	return tok.AccessToken
}

func Truncate(b []byte) string {
	if len(b) > 500 {
		return string(b[:500]) + "..."
	}
	return string(b)
}

// String is the body as text, for assertions and messages.
func (r *Response) String() string { return string(r.Body) }
