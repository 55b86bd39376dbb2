package stack

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"supportplatform.dev/pkg/graphfake"
)

// FakeGraph is pkg/graphfake served on a local port for a stack: the mail
// services get its URLs through Env, and it calls the stack's gateway over
// HTTPS (the validation handshake, notifications) trusting the dev CA.
type FakeGraph struct {
	*graphfake.Server
	URL string
	// Env are the GRAPH_* variables of mailingest and renewal.
	Env []string
	srv *http.Server
}

// Credentials of the app the fake accepts.
const (
	FakeGraphClientID     = "dev-graph-app"
	FakeGraphClientSecret = "dev-graph-secret"
)

// StartFakeGraph serves a fake Graph on addr ("127.0.0.1:0" for any port)
// that trusts the dev CA of dataDir/tls, the one Start uses for a stack on
// the same DataDir (made here when missing).
func StartFakeGraph(dataDir, addr string) (*FakeGraph, error) {
	tls, err := EnsureDevTLS(filepath.Join(dataDir, "tls"), time.Now())
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// As Entra does, app-only tokens only for tenants whose admin consented:
	// tenants are connected through the platform's flow (ConnectMicrosoft365,
	// or the fake's sign-in and consent pages under make run).
	fake := graphfake.New(graphfake.Options{ClientID: FakeGraphClientID, ClientSecret: FakeGraphClientSecret, HTTPClient: tls.Client(),
		RequireConsent: true})
	g := &FakeGraph{Server: fake, URL: "http://" + ln.Addr().String(),
		srv: &http.Server{Handler: fake, ReadHeaderTimeout: 10 * time.Second}}
	g.Env = []string{
		"GRAPH_CLIENT_ID=" + FakeGraphClientID, "GRAPH_CLIENT_SECRET=" + FakeGraphClientSecret,
		"GRAPH_TOKEN_URL=" + g.URL + "/{tenant}/oauth2/v2.0/token", "GRAPH_BASE_URL=" + g.URL + "/v1.0",
		"GRAPH_LOGIN_URL=" + g.URL,
	}
	go func() { _ = g.srv.Serve(ln) }()
	return g, nil
}

// Close stops serving.
func (g *FakeGraph) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return g.srv.Shutdown(ctx)
}
