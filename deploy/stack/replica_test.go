package stack

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// A replicated route's service lists every replica as a server, with the
// health check on /readyz and the retry middleware on its routers (the
// callbacks' too); a lone server has neither.
func TestRenderReplicatedRoutes(t *testing.T) {
	root := repoRoot(t)
	routes := ServiceRoutes(Services, func(s Service) string { return "http://127.0.0.1:9/" + s.Name })
	for i, r := range routes {
		if r.TraefikService() == "mailingest" || r.Name == "topics" {
			routes[i].Replicas = []string{"http://127.0.0.1:10/" + r.TraefikService(), "http://127.0.0.1:11/" + r.TraefikService()}
		}
	}
	cfg := GatewayConfig{WebAddress: "127.0.0.1:1080", WebSecureAddress: "127.0.0.1:1443", DynamicFile: "/tmp/dyn.yml",
		Routes: routes, RateLimit: DefaultRateLimit, HealthCheck: HealthCheck{Interval: 700 * time.Millisecond, Timeout: 2 * time.Second}}
	_, dynamic, err := RenderGatewayConfig(filepath.Join(root, "gateway"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		HTTP struct {
			Routers map[string]struct {
				Middlewares []string `yaml:"middlewares"`
			} `yaml:"routers"`
			Middlewares map[string]map[string]map[string]any `yaml:"middlewares"`
			Services    map[string]struct {
				LoadBalancer struct {
					Servers []struct {
						URL string `yaml:"url"`
					} `yaml:"servers"`
					HealthCheck map[string]string `yaml:"healthCheck"`
				} `yaml:"loadBalancer"`
			} `yaml:"services"`
		} `yaml:"http"`
	}
	if err := yaml.Unmarshal(dynamic, &d); err != nil {
		t.Fatalf("%v\n%s", err, dynamic)
	}
	for _, name := range []string{"topics", "mailingest"} {
		lb := d.HTTP.Services[name].LoadBalancer
		var urls []string
		for _, s := range lb.Servers {
			urls = append(urls, s.URL)
		}
		want := []string{"http://127.0.0.1:9/" + name, "http://127.0.0.1:10/" + name, "http://127.0.0.1:11/" + name}
		if !slices.Equal(urls, want) {
			t.Errorf("%s servers %v, want %v", name, urls, want)
		}
		if hc := lb.HealthCheck; hc["path"] != "/readyz" || hc["interval"] != "700ms" || hc["timeout"] != "2s" {
			t.Errorf("%s health check %v", name, hc)
		}
	}
	for name, want := range map[string]string{
		"topics":               "problem-json,api-ratelimit,replica-retry",
		"mailingest":           "problem-json,api-ratelimit,replica-retry",
		"mailingest-callbacks": "problem-json,replica-retry",
		"tickets":              "problem-json,api-ratelimit",
	} {
		if got := strings.Join(d.HTTP.Routers[name].Middlewares, ","); got != want {
			t.Errorf("router %s middlewares %s, want %s", name, got, want)
		}
	}
	if lb := d.HTTP.Services["tickets"].LoadBalancer; len(lb.Servers) != 1 || lb.HealthCheck != nil {
		t.Errorf("a lone server is health-checked or multiplied: %+v", lb)
	}
	if r := d.HTTP.Middlewares["replica-retry"]["retry"]; r["attempts"] != 3 || r["initialInterval"] != "100ms" {
		t.Errorf("replica-retry %v", r)
	}

	// Without replicas there is no retry middleware at all.
	cfg.Routes = ServiceRoutes(Services, func(s Service) string { return "http://127.0.0.1:9/" + s.Name })
	_, dynamic, err = RenderGatewayConfig(filepath.Join(root, "gateway"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(dynamic), "replica-retry") || strings.Contains(string(dynamic), "healthCheck") {
		t.Errorf("a stack without replicas has a retry or health check:\n%s", dynamic)
	}
	cfg.HealthCheck = HealthCheck{Interval: time.Second}
	if _, _, err := RenderGatewayConfig(filepath.Join(root, "gateway"), cfg); err == nil {
		t.Error("a health check without a timeout was accepted")
	}
}

func TestReplicaSettings(t *testing.T) {
	for name, want := range map[string]string{"tickets": "tickets", "tickets-2": "tickets", "importreply-13": "importreply", "a-b": "a-b"} {
		if got := serviceOf(name); got != want {
			t.Errorf("serviceOf(%q) = %q, want %q", name, got, want)
		}
	}
	r := map[string]int{"*": 2, "importreply": 3, "docs": 0}
	for svc, want := range map[string]int{"tickets": 2, "importreply": 3, "docs": 1} {
		if got := replicaCount(r, svc); got != want {
			t.Errorf("replicaCount(%s) = %d, want %d", svc, got, want)
		}
	}
	if got := replicaCount(nil, "tickets"); got != 1 {
		t.Errorf("replicaCount without replicas = %d", got)
	}
	// The drain outlasts the health check's interval and timeout.
	hc := HealthCheck{Interval: 500 * time.Millisecond, Timeout: time.Second}
	if d := hc.DrainDelay(); d <= hc.Interval+hc.Timeout {
		t.Errorf("drain delay %s not longer than interval + timeout", d)
	}
	opts := Options{Replicas: r, HealthCheck: hc}
	tickets, _ := LookupService("tickets")
	importreply, _ := LookupService("importreply")
	docs, _ := LookupService("docs")
	if got := drainEnv(tickets, opts); !slices.Equal(got, []string{"DRAIN_DELAY=2s"}) {
		t.Errorf("tickets with 2 replicas: %v", got)
	}
	if got := drainEnv(importreply, opts); got != nil {
		t.Errorf("an unrouted worker drains: %v", got)
	}
	if got := drainEnv(docs, opts); got != nil {
		t.Errorf("a lone process drains: %v", got)
	}
}

func TestJWKSURLs(t *testing.T) {
	if got := jwksURLs(8081, nil); got != "http://127.0.0.1:8081/api/Auth/jwks" {
		t.Errorf("auth not started: %s", got)
	}
	if got := jwksURLs(8081, []int{8081, 9001}); got != "http://127.0.0.1:8081/api/Auth/jwks,http://127.0.0.1:9001/api/Auth/jwks" {
		t.Errorf("two auth processes: %s", got)
	}
}

func TestReplicaEnvGivesItsOwnDebugAddr(t *testing.T) {
	base := []string{"A=1", "DEBUG_ADDR=127.0.0.1:7000"}
	env, err := replicaEnv(base, 9000)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		last[k] = v
	}
	if last["HTTP_ADDR"] != "127.0.0.1:9000" {
		t.Errorf("HTTP_ADDR = %q", last["HTTP_ADDR"])
	}
	if d := last["DEBUG_ADDR"]; d == "" || d == "127.0.0.1:7000" {
		t.Errorf("DEBUG_ADDR = %q, want a port of its own", d)
	}
	if len(base) != 2 {
		t.Errorf("base changed: %q", base)
	}
	env, err = replicaEnv([]string{"A=1"}, 9001)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "DEBUG_ADDR=") {
			t.Errorf("a debug listener for a service without one: %q", kv)
		}
	}
}
