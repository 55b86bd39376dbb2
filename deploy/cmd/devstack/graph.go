package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/graphfake"
)

// mailProvider is the Microsoft Graph the mail services talk to. With
// GRAPH_CLIENT_ID and GRAPH_CLIENT_SECRET set, the real one (the services
// read the rest of GRAPH_* themselves). Without, the fake Graph of
// pkg/graphfake on 127.0.0.1:GRAPH_FAKE_PORT, which runs the validation
// handshake against the gateway and can post notifications to it (its
// /_fake control API), so subscribing a channel works end to end locally.
func mailProvider(cfg config, root string) (env []string, note string, stop func(), err error) {
	if cfg.GraphClientID != "" || cfg.GraphClientSecret != "" {
		if cfg.GraphClientID == "" || cfg.GraphClientSecret == "" {
			return nil, "", nil, errors.New("set both GRAPH_CLIENT_ID and GRAPH_CLIENT_SECRET, or neither (the fake Graph)")
		}
		return []string{"GRAPH_CLIENT_ID=" + cfg.GraphClientID, "GRAPH_CLIENT_SECRET=" + cfg.GraphClientSecret},
			"Microsoft Graph with app " + cfg.GraphClientID, func() {}, nil
	}
	// The fake calls the gateway over HTTPS: trust the dev CA that
	// stack.Start keeps in var/tls (made here first if it is missing).
	tls, err := stack.EnsureDevTLS(filepath.Join(root, "var", "tls"), time.Now())
	if err != nil {
		return nil, "", nil, err
	}
	const id, secret = "dev-graph-app", "dev-graph-secret"
	fake := graphfake.New(graphfake.Options{ClientID: id, ClientSecret: secret, HTTPClient: tls.Client()})
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(cfg.GraphFakePort))
	if err != nil {
		return nil, "", nil, fmt.Errorf("fake Graph: %w (set GRAPH_FAKE_PORT)", err)
	}
	srv := &http.Server{Handler: fake, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	env = []string{
		"GRAPH_CLIENT_ID=" + id, "GRAPH_CLIENT_SECRET=" + secret,
		"GRAPH_TOKEN_URL=" + base + "/{tenant}/oauth2/v2.0/token", "GRAPH_BASE_URL=" + base + "/v1.0",
	}
	note = "fake Microsoft Graph at " + base + " (no GRAPH_CLIENT_ID set); notify a subscription: curl -X POST " + base + "/_fake/notify/<subscriptionId>"
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	return env, note, stop, nil
}
