package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

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
	fake, err := stack.StartFakeGraph(filepath.Join(root, "var"), "127.0.0.1:"+strconv.Itoa(cfg.GraphFakePort))
	if err != nil {
		return nil, "", nil, fmt.Errorf("fake Graph: %w (set GRAPH_FAKE_PORT)", err)
	}
	fake.AddUser(graphfake.User{Username: DemoTenantAdmin, Name: "Contoso admin", TenantID: DemoTenantID})
	note = "fake Microsoft Graph at " + fake.URL + " (no GRAPH_CLIENT_ID set); notify a subscription: curl -X POST " + fake.URL + "/_fake/notify/<subscriptionId>\n" +
		connectNote(cfg.HTTPSPort)
	return fake.Env, note, func() { _ = fake.Close() }, nil
}

// The fake Graph's demo tenant and its admin, who signs in on the fake's
// sign-in page to connect the tenant to the demo customer.
const (
	DemoTenantID    = "7f3c1c1e-0000-4000-8000-000000000001"
	DemoTenantAdmin = "admin@contoso.onmicrosoft.com"
)

// connectNote says how to connect a mailbox with the fake Graph's sign-in
// and consent pages.
func connectNote(httpsPort int) string {
	base := "https://localhost:" + strconv.Itoa(httpsPort)
	return "  connect a mailbox (Microsoft 365 tenant " + DemoTenantID + "):\n" +
		"    1. as the demo admin: curl --cacert var/tls/ca.pem -X POST " + base + "/api/ProviderConnections -H \"Authorization: Bearer $TOKEN\" -H 'Content-Type: application/json' -d '{}'\n" +
		"    2. open its authorizationUrl in the browser: the fake's sign-in page; sign in as " + DemoTenantAdmin + ", then Accept on its consent page;\n" +
		"       the callback answers the connection with status connected (GET " + base + "/api/ProviderConnections lists it)\n" +
		"    3. POST " + base + "/api/Channels {\"name\":\"Support\",\"kind\":\"email\",\"emailAddress\":\"support@contoso.test\",\"provider\":\"microsoft365\",\"providerTenantID\":\"" + DemoTenantID + "\",\"autoRetrieveEmails\":true}"
}
