package stack

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestRenderGatewayConfig(t *testing.T) {
	root := repoRoot(t)
	cfg := GatewayConfig{
		WebAddress:       "127.0.0.1:1080",
		WebSecureAddress: "127.0.0.1:1443",
		APIAddress:       "127.0.0.1:1081",
		DynamicFile:      "/tmp/dyn.yml",
		Routes:           ServiceRoutes(Services, func(s Service) string { return "http://127.0.0.1:9/" + s.Name }),
		RateLimit:        RateLimit{Average: 7, Period: 2 * time.Second, Burst: 9},
		TLS:              &DevTLS{CertFile: "/c.pem", KeyFile: "/k.pem"},
		RequestTimeout:   90 * time.Second,
	}
	static, dynamic, err := RenderGatewayConfig(filepath.Join(root, "gateway"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Global      map[string]bool `yaml:"global"`
		EntryPoints map[string]struct {
			Address   string `yaml:"address"`
			Transport struct {
				RespondingTimeouts map[string]string `yaml:"respondingTimeouts"`
			} `yaml:"transport"`
		} `yaml:"entryPoints"`
		ServersTransport struct {
			ForwardingTimeouts map[string]string `yaml:"forwardingTimeouts"`
		} `yaml:"serversTransport"`
		Experimental struct {
			LocalPlugins map[string]struct {
				ModuleName string `yaml:"moduleName"`
			} `yaml:"localPlugins"`
		} `yaml:"experimental"`
		AccessLog struct {
			Format string `yaml:"format"`
		} `yaml:"accessLog"`
	}
	if err := yaml.Unmarshal(static, &s); err != nil {
		t.Fatalf("static: %v\n%s", err, static)
	}
	if s.Global["checkNewVersion"] || s.Global["sendAnonymousUsage"] || len(s.Global) != 2 {
		t.Errorf("global %v: no call home allowed", s.Global)
	}
	if s.EntryPoints["web"].Address != cfg.WebAddress || s.EntryPoints["websecure"].Address != cfg.WebSecureAddress || s.EntryPoints["traefik"].Address != cfg.APIAddress {
		t.Errorf("entrypoints %+v", s.EntryPoints)
	}
	if s.Experimental.LocalPlugins["staticproblem"].ModuleName != "github.com/supportplatform/staticproblem" {
		t.Errorf("local plugins %+v", s.Experimental.LocalPlugins)
	}
	// The gateway's timeouts follow the services' budget (90 s here): the
	// service's answer (within 95 s) arrives before Traefik gives up.
	rt := s.EntryPoints["websecure"].Transport.RespondingTimeouts
	if ft := s.ServersTransport.ForwardingTimeouts; ft["responseHeaderTimeout"] != "1m40s" || rt["readTimeout"] != "1m45s" || rt["writeTimeout"] != "1m45s" {
		t.Errorf("timeouts: forwarding %v, responding %v", ft, rt)
	}
	if s.AccessLog.Format != "json" {
		t.Errorf("access log format %q", s.AccessLog.Format)
	}
	// Go's pprof (api.debug) only for make bench -profile.
	if apiDebug(t, static) {
		t.Errorf("api.debug on by default:\n%s", static)
	}
	dbg := cfg
	dbg.Debug = true
	if static, _, err := RenderGatewayConfig(filepath.Join(root, "gateway"), dbg); err != nil || !apiDebug(t, static) {
		t.Errorf("Debug: api.debug not rendered (%v):\n%s", err, static)
	}

	var d struct {
		HTTP struct {
			Routers map[string]struct {
				EntryPoints []string `yaml:"entryPoints"`
				Rule        string   `yaml:"rule"`
				Middlewares []string `yaml:"middlewares"`
				Service     string   `yaml:"service"`
				Priority    int      `yaml:"priority"`
			} `yaml:"routers"`
			Middlewares map[string]map[string]map[string]any `yaml:"middlewares"`
		} `yaml:"http"`
	}
	if err := yaml.Unmarshal(dynamic, &d); err != nil {
		t.Fatalf("dynamic: %v\n%s", err, dynamic)
	}
	for _, svc := range Services {
		r, ok := d.HTTP.Routers[svc.Name]
		if !ok {
			if svc.Routed() {
				t.Errorf("no router for %s", svc.Name)
			}
			continue
		}
		if !svc.Routed() {
			t.Errorf("worker %s is routed: %+v", svc.Name, r)
		}
		if len(svc.Callbacks) > 0 {
			// The provider's callbacks: no per-client-IP limit, above the
			// service's prefix route, to the same upstream.
			cb := d.HTTP.Routers[svc.Name+"-callbacks"]
			if cb.Rule != svc.CallbackRule() || cb.Service != svc.Name || strings.Join(cb.Middlewares, ",") != "problem-json" || cb.Priority < 1000 {
				t.Errorf("callback router of %s: %+v", svc.Name, cb)
			}
		}
		// The rule survives YAML quoting byte for byte (backslashes
		// included).
		if r.Rule != svc.Rule() || strings.Join(r.EntryPoints, ",") != "websecure" || strings.Join(r.Middlewares, ",") != "problem-json,api-ratelimit" {
			t.Errorf("router %s: %+v", svc.Name, r)
		}
	}
	hr := d.HTTP.Routers["https-required"]
	if strings.Join(hr.EntryPoints, ",") != "web" || hr.Service != "noop@internal" || strings.Join(hr.Middlewares, ",") != "https-required" {
		t.Errorf("https-required router %+v", hr)
	}
	rl := d.HTTP.Middlewares["api-ratelimit"]["rateLimit"]
	if rl["average"] != 7 || rl["burst"] != 9 || rl["period"] != "2s" {
		t.Errorf("rate limit %v", rl)
	}

	// Tracing is off unless the stack has an OTLP endpoint; then Traefik
	// exports to its traces URL.
	if strings.Contains(string(static), "tracing:") {
		t.Errorf("tracing configured without an endpoint:\n%s", static)
	}
	cfg.TracingEndpoint = TracesURL("http://127.0.0.1:4318/")
	static, _, err = RenderGatewayConfig(filepath.Join(root, "gateway"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Tracing struct {
			ServiceName string  `yaml:"serviceName"`
			SampleRate  float64 `yaml:"sampleRate"`
			OTLP        struct {
				HTTP struct {
					Endpoint string `yaml:"endpoint"`
				} `yaml:"http"`
			} `yaml:"otlp"`
		} `yaml:"tracing"`
	}
	if err := yaml.Unmarshal(static, &tr); err != nil {
		t.Fatalf("static with tracing: %v\n%s", err, static)
	}
	if tr.Tracing.OTLP.HTTP.Endpoint != "http://127.0.0.1:4318/v1/traces" || tr.Tracing.ServiceName != "traefik" || tr.Tracing.SampleRate != 1 {
		t.Errorf("tracing %+v", tr.Tracing)
	}

	if _, _, err := RenderGatewayConfig(filepath.Join(root, "gateway"), GatewayConfig{Routes: cfg.Routes}); err == nil {
		t.Error("zero rate limit accepted")
	}
	dup := append(cfg.Routes, Route{Name: "auth", Rule: "Path(`/x`)", URL: "http://x"})
	if _, _, err := RenderGatewayConfig(filepath.Join(root, "gateway"), GatewayConfig{Routes: dup, RateLimit: DefaultRateLimit}); err == nil {
		t.Error("duplicate route accepted")
	}
}

// apiDebug reports whether the rendered static configuration has api.debug.
func apiDebug(t *testing.T, static []byte) bool {
	t.Helper()
	var s struct {
		API struct {
			Debug bool `yaml:"debug"`
		} `yaml:"api"`
	}
	if err := yaml.Unmarshal(static, &s); err != nil {
		t.Fatalf("static: %v\n%s", err, static)
	}
	return s.API.Debug
}

// Start with no services and a static route: the plumbing (fresh database,
// TLS, gateway from the templates, Stop cleaning up) against the real
// Traefik and PostgreSQL.
func TestStartWithoutServices(t *testing.T) {
	root := repoRoot(t)
	if _, err := EnsureTraefik(t.Context(), root, testLog(t)); err != nil {
		t.Fatal(err)
	}
	var seen http.Header
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"path":"`+r.URL.Path+`"}`)
	}))
	defer upstream.Close()

	st, err := Start(t.Context(), Options{
		RepoRoot:    root,
		Services:    []string{},
		ExtraRoutes: []Route{{Name: "static", Rule: "PathRegexp(`" + PrefixRegexp("/api/Static") + "`)", URL: upstream.URL}},
		Log:         testLog(t),
		// make bench -profile: Traefik's pprof on the loopback
		// API entrypoint, never on the public ones.
		GatewayDebug: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	dataDir, db := st.DataDir, st.Database
	stopped := false
	defer func() {
		if !stopped {
			_ = st.Stop()
		}
	}()

	resp, err := st.HTTPClient().Get(st.HTTPSURL + "/API/STATIC/thing")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"path":"/API/STATIC/thing"}` {
		t.Errorf("HTTPS: %d %s", resp.StatusCode, body)
	}
	if seen.Get("X-Forwarded-For") != "127.0.0.1" || seen.Get("X-Forwarded-Proto") != "https" || seen.Get("X-Real-Ip") != "127.0.0.1" {
		t.Errorf("forwarded headers %v", seen)
	}

	for _, u := range []string{st.Gateway.APIURL + "/debug/pprof/cmdline", st.HTTPSURL + "/debug/pprof/cmdline"} {
		resp, err := st.HTTPClient().Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		public := strings.HasPrefix(u, st.HTTPSURL)
		if served := resp.StatusCode == 200 && strings.Contains(string(body), "traefik"); served == public {
			t.Errorf("GatewayDebug: %s: %d %.100s", u, resp.StatusCode, body)
		}
	}

	resp, err = http.Post(st.HTTPURL+"/api/Static/thing", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var p map[string]any
	if resp.StatusCode != 403 || resp.Header.Get("Content-Type") != "application/problem+json" || json.Unmarshal(body, &p) != nil || p["status"] != float64(403) {
		t.Errorf("plain HTTP: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	if err := st.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	stopped = true
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("data dir %s left behind: %v", dataDir, err)
	}
	if ok, err := LocalInfra(nil).DatabaseExists(t.Context(), db); err != nil || ok {
		t.Errorf("database %s left behind: %v %v", db, ok, err)
	}
	if _, err := http.Get(st.HTTPURL + "/"); err == nil {
		t.Error("gateway still answers after Stop")
	}
}

func TestSelectServices(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "auth"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := selectServices(Options{BinDir: bin})
	if err != nil || len(got) != 1 || got[0].Name != "auth" {
		t.Errorf("default selection = %v, %v; want the built auth only", got, err)
	}
	if _, err := selectServices(Options{BinDir: bin, Services: []string{"topics"}}); err == nil {
		t.Error("requested service without a binary accepted")
	}
	if _, err := selectServices(Options{BinDir: bin, Services: []string{"nosuch"}}); err == nil {
		t.Error("unknown service accepted")
	}
}

func TestServiceEnv(t *testing.T) {
	s := &Stack{DataDir: "/data", DatabaseURL: "postgres://postgres@db:5432/x", RedisPrefix: "rp", NATSPrefix: "np", infra: LocalInfra(nil),
		natsAddr: "127.0.0.1:4999", natsPasswords: map[string]string{"auth": "pa", "topics": "pt", "translation": "px"}}
	opts := Options{
		LogLevel: "debug", JWTIssuer: "iss", JWTAudience: "aud",
		Env: map[string][]string{"*": {"LOG_LEVEL=warn"}, "auth": {"AUTH_TOKEN_TTL=1s"}},
	}
	ports := map[string]int{"auth": 7001, "topics": 7002}
	auth, _ := LookupService("auth")
	topics, _ := LookupService("topics")

	get := func(env []string, key string) string {
		// The last entry wins, as in exec.Cmd.
		v := ""
		for _, e := range env {
			if k, val, _ := strings.Cut(e, "="); k == key {
				v = val
			}
		}
		return v
	}
	authEnv, err := s.serviceEnv(auth, opts, ports, jwksURLs(ports["auth"], nil))
	if err != nil {
		t.Fatal(err)
	}
	topicsEnv, err := s.serviceEnv(topics, opts, ports, jwksURLs(ports["auth"], nil))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"HTTP_ADDR": "127.0.0.1:7001", "REDIS_PREFIX": "rp", "NATS_PREFIX": "np",
		"DATABASE_URL": "postgres://sp_auth@db:5432/x", "DATABASE_MIGRATE_URL": "postgres://postgres@db:5432/x",
		"AUTH_JWKS_URL": "http://127.0.0.1:7001/api/Auth/jwks", "JWT_ISSUER": "iss", "JWT_AUDIENCE": "aud",
		"AUTH_SIGNING_KEY_FILE": "/data/auth/signing-key.pem", "AUTH_DEV_KEYGEN": "true",
		"LOG_LEVEL": "warn", "AUTH_TOKEN_TTL": "1s", "REDIS_URL": "redis://127.0.0.1:6379/0", "NATS_URL": "nats://auth:pa@127.0.0.1:4999",
	} {
		if got := get(authEnv, key); got != want {
			t.Errorf("auth %s = %q, want %q", key, got, want)
		}
	}
	if get(topicsEnv, "HTTP_ADDR") != "127.0.0.1:7002" || get(topicsEnv, "AUTH_JWKS_URL") != "http://127.0.0.1:7001/api/Auth/jwks" ||
		get(topicsEnv, "DATABASE_URL") != "postgres://sp_topics@db:5432/x" || get(topicsEnv, "NATS_URL") != "nats://topics:pt@127.0.0.1:4999" {
		t.Errorf("topics env %v", topicsEnv)
	}
	translation, _ := LookupService("translation")
	trEnv, err := s.serviceEnv(translation, opts, ports, jwksURLs(ports["auth"], nil))
	if err != nil {
		t.Fatal(err)
	}
	if get(trEnv, "DATABASE_URL") != "" || get(trEnv, "DATABASE_MIGRATE_URL") != "" {
		t.Errorf("translation, which has no schema, got a database: %v", trEnv)
	}
	if get(topicsEnv, "AUTH_TOKEN_TTL") != "" || get(topicsEnv, "AUTH_SIGNING_KEY_FILE") != "" {
		t.Error("auth-only settings leaked to topics")
	}
	// A standalone service (the reference page) gets its address and the
	// request budget, and no backend: no URL, no credentials.
	docs, _ := LookupService("docs")
	docsEnv, err := s.serviceEnv(docs, opts, map[string]int{"auth": 7001, "docs": 7009}, jwksURLs(0, nil))
	if err != nil {
		t.Fatal(err)
	}
	if get(docsEnv, "HTTP_ADDR") != "127.0.0.1:7009" || get(docsEnv, "LOG_LEVEL") != "warn" || get(docsEnv, "REQUEST_TIMEOUT") == "" {
		t.Errorf("docs env %v", docsEnv)
	}
	for _, key := range []string{"DATABASE_URL", "DATABASE_MIGRATE_URL", "REDIS_URL", "NATS_URL", "NATS_PREFIX", "REDIS_PREFIX", "AUTH_JWKS_URL"} {
		if v := get(docsEnv, key); v != "" {
			t.Errorf("standalone docs got %s=%s", key, v)
		}
	}
	if get(topicsEnv, "OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		t.Error("tracing on without an OTLP endpoint")
	}
	opts.OTLPEndpoint = "http://127.0.0.1:4318"
	if topicsEnv, err = s.serviceEnv(topics, opts, ports, jwksURLs(ports["auth"], nil)); err != nil {
		t.Fatal(err)
	}
	if get(topicsEnv, "OTEL_EXPORTER_OTLP_ENDPOINT") != opts.OTLPEndpoint || get(topicsEnv, "OTEL_EXPORTER_OTLP_PROTOCOL") != "http/protobuf" {
		t.Errorf("topics env with an OTLP endpoint: %v", topicsEnv)
	}
}
