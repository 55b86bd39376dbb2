package main

import (
	"strings"
	"testing"

	"supportplatform.dev/deploy/stack"
)

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    config
		wantErr string
	}{
		{name: "defaults", env: nil,
			want: config{HTTPSPort: 8443, HTTPPort: 8080, DemoEmail: "demo@example.com", Database: "support", LogLevel: "info", GraphFakePort: 8090, NATSNodes: 1, Replicas: 1}},
		{name: "a NATS cluster", env: map[string]string{"NATS_NODES": "3"},
			want: config{HTTPSPort: 8443, HTTPPort: 8080, DemoEmail: "demo@example.com", Database: "support", LogLevel: "info", GraphFakePort: 8090, NATSNodes: 3, Replicas: 1}},
		{name: "two NATS nodes", env: map[string]string{"NATS_NODES": "2"}, wantErr: "NATS_NODES"},
		{name: "overrides", env: map[string]string{"GATEWAY_PORT": "9443", "GATEWAY_HTTP_PORT": "9080", "DEMO_EMAIL": "a@b.c", "DEMO_PASSWORD": "pw", "DEV_DATABASE": "other", "LOG_LEVEL": "debug",
			"GRAPH_CLIENT_ID": "app", "GRAPH_CLIENT_SECRET": "s", "GRAPH_FAKE_PORT": "9090", "REPLICAS": "2"},
			want: config{HTTPSPort: 9443, HTTPPort: 9080, DemoEmail: "a@b.c", DemoPassword: "pw", Database: "other", LogLevel: "debug",
				GraphClientID: "app", GraphClientSecret: "s", GraphFakePort: 9090, NATSNodes: 1, Replicas: 2}},
		{name: "no replica", env: map[string]string{"REPLICAS": "0"}, wantErr: "REPLICAS"},
		{name: "too many replicas", env: map[string]string{"REPLICAS": "5"}, wantErr: "REPLICAS"},
		{name: "bad port", env: map[string]string{"GATEWAY_PORT": "https"}, wantErr: "GATEWAY_PORT"},
		{name: "port out of range", env: map[string]string{"GATEWAY_HTTP_PORT": "70000"}, wantErr: "GATEWAY_HTTP_PORT"},
		{name: "same ports", env: map[string]string{"GATEWAY_PORT": "8080"}, wantErr: "differ"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := loadConfig(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSplitFields(t *testing.T) {
	got := splitFields(" apertium, apertium-eng-spa\tfoo ")
	if strings.Join(got, "|") != "apertium|apertium-eng-spa|foo" {
		t.Errorf("got %q", got)
	}
}

// make run prints the console's and the reference page's addresses when
// they run, and only then; each is one the gateway routes to its service.
func TestPageURL(t *testing.T) {
	const base = "https://localhost:8443"
	for name, want := range map[string]string{"docs": base + "/docs", "console": base + "/"} {
		got := pageURL(base, name, []string{"auth", "topics", "docs", "console"})
		if got != want {
			t.Errorf("pageURL(%s) with it started = %q, want %s", name, got, want)
		}
		if svc, ok := stack.ServiceForPath(strings.TrimPrefix(got, base)); !ok || svc.Name != name {
			t.Errorf("%s is not routed to %s (%v, %v)", got, name, svc.Name, ok)
		}
		if got := pageURL(base, name, []string{"auth", "topics"}); got != "" {
			t.Errorf("pageURL(%s) without it = %q, want none", name, got)
		}
	}
}

// make run tells how to connect a mailbox with the fake Graph's pages.
func TestConnectNote(t *testing.T) {
	n := connectNote(8443)
	for _, want := range []string{"/api/ProviderConnections", "authorizationUrl", DemoTenantAdmin, DemoTenantID, "/api/Channels", "https://localhost:8443"} {
		if !strings.Contains(n, want) {
			t.Errorf("the note lacks %q:\n%s", want, n)
		}
	}
}
