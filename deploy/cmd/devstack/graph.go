package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"supportplatform.dev/deploy/stack"
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
	fake, err := stack.StartFakeGraph(filepath.Join(root, "var"), "127.0.0.1:"+strconv.Itoa(cfg.GraphFakePort))
	if err != nil {
		return nil, "", nil, fmt.Errorf("fake Graph: %w (set GRAPH_FAKE_PORT)", err)
	}
	note = "fake Microsoft Graph at " + fake.URL + " (no GRAPH_CLIENT_ID set); notify a subscription: curl -X POST " + fake.URL + "/_fake/notify/<subscriptionId>"
	return fake.Env, note, func() { _ = fake.Close() }, nil
}
