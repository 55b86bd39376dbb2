package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// Route is one gateway router: requests matching Rule on the TLS entrypoint
// go, through the rate limit, to URL.
type Route struct {
	Name string
	Rule string
	URL  string
	// Replicas are the URLs of the service's other processes: the gateway
	// balances URL and these (round robin, no sticky sessions), with the
	// GatewayConfig's HealthCheck and the replica-retry middleware.
	Replicas []string
	// Service is the Traefik service the router sends to; default Name.
	Service string
	// Unlimited routes skip the per-client-IP rate limit (provider
	// callbacks); they take precedence over the other routes (Priority).
	Unlimited bool
	// Fallback is the console's catch-all: below every other route, above
	// the gateway's own 404.
	Fallback bool
}

// Servers are the route's upstream URLs: URL, then Replicas.
func (r Route) Servers() []string { return append([]string{r.URL}, r.Replicas...) }

// Replicated reports whether the route has more than one server.
func (r Route) Replicated() bool { return len(r.Replicas) > 0 }

// HealthCheck is the gateway's active health check of a replicated
// service's servers: every Interval it asks each server's /readyz and takes
// a server out of the rotation when the answer is not 200 within Timeout
// (a replica told to stop answers 503 at once), and back in when it is.
type HealthCheck struct {
	Interval time.Duration
	Timeout  time.Duration
}

// DefaultHealthCheck is the stack's for services started with more than
// one replica.
var DefaultHealthCheck = HealthCheck{Interval: 500 * time.Millisecond, Timeout: time.Second}

// DrainDelay is the DRAIN_DELAY a replica behind this check needs: on
// SIGTERM it keeps serving until the next check has seen its 503 (at most
// Interval away, answered at once, or Timeout for a slow answer) and the
// gateway has stopped sending to it, with half a second to spare.
func (h HealthCheck) DrainDelay() time.Duration {
	return h.Interval + h.Timeout + 500*time.Millisecond
}

// IntervalString and TimeoutString are as Traefik reads them.
func (h HealthCheck) IntervalString() string { return h.Interval.String() }
func (h HealthCheck) TimeoutString() string  { return h.Timeout.String() }

// TraefikService is the Traefik service name of the route.
func (r Route) TraefikService() string {
	if r.Service != "" {
		return r.Service
	}
	return r.Name
}

// Priority is the router priority: callbacks above every prefix route, the
// fallback below them (the not-found router has 1). Zero leaves Traefik's
// default (the rule's length).
func (r Route) Priority() int {
	switch {
	case r.Unlimited:
		return 100000
	case r.Fallback:
		return 2
	}
	return 0
}

// RateLimit is the per-client-IP token bucket of the API routers: Average
// requests per Period on average, bursts of up to Burst.
type RateLimit struct {
	Average int64
	Period  time.Duration
	Burst   int64
}

// DefaultRateLimit is what `make run` and the compose gateway use.
var DefaultRateLimit = RateLimit{Average: 50, Period: time.Second, Burst: 100}

// PeriodString is the period as Traefik reads it.
func (r RateLimit) PeriodString() string {
	if r.Period <= 0 {
		return "1s"
	}
	return r.Period.String()
}

// DefaultRequestTimeout is REQUEST_TIMEOUT's default in pkg/config; the
// stack passes its RequestTimeout to every service so that the services and
// the gateway work from the same budget.
const DefaultRequestTimeout = 60 * time.Second

// serviceResponseMargin is pkg/httpserver.ResponseMargin: a service's write
// timeout is its request budget plus this (deploy does not import pkg; the
// gateway's e2e tests check that the two agree).
const serviceResponseMargin = 5 * time.Second

// GatewayTimeouts are Traefik's timeouts for one request budget. Each is
// longer than what it waits for, so that the answer a client gets is the
// service's own (a 503 problem when the budget ran out), and Traefik's 504
// only comes from a service that broke its own deadline:
//
//	service handler deadline     T          (REQUEST_TIMEOUT)
//	service write timeout        T + 5s     (httpserver.WriteTimeout)
//	Traefik responseHeaderTimeout T + 10s   (waiting for the service)
//	Traefik entrypoint read/write T + 15s   (the client's request and answer)
type GatewayTimeouts struct {
	requestTimeout time.Duration
	ResponseHeader time.Duration
	EntryRead      time.Duration
	EntryWrite     time.Duration
}

// RequestTimeout is the budget the timeouts were derived from.
func (t GatewayTimeouts) RequestTimeout() time.Duration { return t.requestTimeout }

// The timeouts as Traefik reads them (Go duration strings).
func (t GatewayTimeouts) ResponseHeaderString() string { return t.ResponseHeader.String() }
func (t GatewayTimeouts) EntryReadString() string      { return t.EntryRead.String() }
func (t GatewayTimeouts) EntryWriteString() string     { return t.EntryWrite.String() }

// TimeoutsFor derives the gateway's timeouts from a request budget.
func TimeoutsFor(requestTimeout time.Duration) GatewayTimeouts {
	if requestTimeout <= 0 {
		requestTimeout = DefaultRequestTimeout
	}
	return GatewayTimeouts{
		requestTimeout: requestTimeout,
		ResponseHeader: requestTimeout + 2*serviceResponseMargin,
		EntryRead:      requestTimeout + 3*serviceResponseMargin,
		EntryWrite:     requestTimeout + 3*serviceResponseMargin,
	}
}

// GatewayConfig is the data the Traefik templates in gateway/ are rendered
// with.
type GatewayConfig struct {
	WebAddress       string // plain HTTP entrypoint, e.g. "127.0.0.1:8080"
	WebSecureAddress string // TLS entrypoint, e.g. "127.0.0.1:8443"
	// APIAddress, when set, adds a loopback entrypoint with ping and the
	// read-only API (not in compose).
	APIAddress    string
	DynamicFile   string // path of the rendered dynamic configuration
	AccessLogFile string // empty: access log on stdout
	LogLevel      string
	Routes        []Route
	RateLimit     RateLimit
	// RequestTimeout is the services' REQUEST_TIMEOUT; the gateway's
	// timeouts are derived from it (TimeoutsFor). Zero: the default.
	RequestTimeout time.Duration
	// TLS is the certificate Traefik serves; nil leaves Traefik's own
	// self-signed default.
	TLS *DevTLS
	// TracingEndpoint, when set, turns Traefik's tracing on: the full
	// OTLP/HTTP traces URL (http://collector:4318/v1/traces).
	TracingEndpoint string
	// Debug serves Go's /debug/pprof on the loopback API entrypoint
	// (api.debug; make bench -profile only, never in compose).
	Debug bool
	// HealthCheck is used for the services of replicated routes (zero:
	// DefaultHealthCheck). A lone server is not health-checked: it answers
	// its own 503 problems during an outage rather than the gateway's.
	HealthCheck HealthCheck
}

// Replicated reports whether some route has more than one server (the
// configuration then has the replica-retry middleware).
func (c GatewayConfig) Replicated() bool {
	return slices.ContainsFunc(c.Routes, func(r Route) bool { return r.Replicated() })
}

// Timeouts are the gateway's timeouts for the configured request budget.
func (c GatewayConfig) Timeouts() GatewayTimeouts { return TimeoutsFor(c.RequestTimeout) }

const (
	staticTemplate  = "traefik.static.yml.tmpl"
	dynamicTemplate = "traefik.dynamic.yml.tmpl"
	// PluginDir is the local plugin source inside gateway/, laid out as
	// Traefik expects it below its working directory.
	PluginDir = "plugins-local"
)

// ServiceRoutes turns the routed services of the table into gateway routes,
// with urlFor giving each service's upstream URL.
func ServiceRoutes(services []Service, urlFor func(Service) string) []Route {
	var routes []Route
	for _, s := range services {
		if !s.Routed() {
			continue
		}
		routes = append(routes, Route{Name: s.Name, Rule: s.Rule(), URL: urlFor(s), Fallback: s.Fallback()})
		if len(s.Callbacks) > 0 {
			routes = append(routes, Route{Name: s.Name + "-callbacks", Rule: s.CallbackRule(), URL: urlFor(s), Service: s.Name, Unlimited: true})
		}
	}
	return routes
}

// RenderGatewayConfig renders the static and dynamic Traefik configuration
// from the templates in gatewayDir.
func RenderGatewayConfig(gatewayDir string, cfg GatewayConfig) (static, dynamic []byte, err error) {
	if cfg.LogLevel == "" {
		cfg.LogLevel = "INFO"
	}
	if cfg.HealthCheck == (HealthCheck{}) {
		cfg.HealthCheck = DefaultHealthCheck
	}
	if cfg.HealthCheck.Interval <= 0 || cfg.HealthCheck.Timeout <= 0 {
		return nil, nil, fmt.Errorf("health check needs a positive interval and timeout: %+v", cfg.HealthCheck)
	}
	if cfg.RateLimit.Average <= 0 || cfg.RateLimit.Burst <= 0 {
		return nil, nil, fmt.Errorf("rate limit needs a positive average and burst: %+v", cfg.RateLimit)
	}
	seen := map[string]bool{"https-required": true}
	for _, r := range cfg.Routes {
		if r.Name == "" || r.Rule == "" || r.URL == "" || seen[r.Name] {
			return nil, nil, fmt.Errorf("invalid or duplicate route %+v", r)
		}
		seen[r.Name] = true
	}
	funcs := template.FuncMap{"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	}}
	tmpl, err := template.New("gateway").Funcs(funcs).Option("missingkey=error").
		ParseFiles(filepath.Join(gatewayDir, staticTemplate), filepath.Join(gatewayDir, dynamicTemplate))
	if err != nil {
		return nil, nil, err
	}
	var s, d bytes.Buffer
	if err := tmpl.ExecuteTemplate(&s, staticTemplate, cfg); err != nil {
		return nil, nil, err
	}
	if err := tmpl.ExecuteTemplate(&d, dynamicTemplate, cfg); err != nil {
		return nil, nil, err
	}
	return s.Bytes(), d.Bytes(), nil
}

// GatewayOptions configures one Traefik process.
type GatewayOptions struct {
	RepoRoot   string
	TraefikBin string // default RepoRoot/bin/traefik
	// Dir receives the rendered configuration, the plugin copy (Traefik's
	// working directory), traefik.log and access.log.
	Dir       string
	HTTPSPort int // 0: a free port
	HTTPPort  int // 0: a free port
	Routes    []Route
	RateLimit RateLimit
	// RequestTimeout is the services' REQUEST_TIMEOUT (zero: the default).
	RequestTimeout time.Duration
	TLS            *DevTLS
	LogLevel       string
	Log            io.Writer // prefixed "[traefik] " lines; nil: discarded
	LogName        string    // prefix, default "traefik"
	// OTLPEndpoint, when set, is the OTLP/HTTP collector's base URL (as
	// OTEL_EXPORTER_OTLP_ENDPOINT) that Traefik sends its spans to.
	OTLPEndpoint string
	// HealthCheck of the replicated routes' services; zero:
	// DefaultHealthCheck.
	HealthCheck HealthCheck
	// Debug: GatewayConfig.Debug (pprof at APIURL/debug/pprof/).
	Debug bool
}

// Gateway is a running Traefik.
type Gateway struct {
	HTTPSURL      string // https://127.0.0.1:port
	HTTPURL       string // http://127.0.0.1:port (refuses everything)
	APIURL        string // http://127.0.0.1:port of the loopback API/ping entrypoint
	HTTPSPort     int
	HTTPPort      int
	Dir           string
	AccessLogFile string
	LogFile       string
	proc          *process
	healthChecked map[string][]string // servers by Traefik service, for replicated routes
}

// StartGateway renders the configuration from the gateway/ templates and
// starts Traefik, returning once every router and middleware is loaded and
// enabled.
func StartGateway(ctx context.Context, opts GatewayOptions) (*Gateway, error) {
	if opts.TraefikBin == "" {
		opts.TraefikBin = filepath.Join(opts.RepoRoot, "bin", "traefik")
	}
	if opts.LogName == "" {
		opts.LogName = "traefik"
	}
	if opts.RateLimit == (RateLimit{}) {
		opts.RateLimit = DefaultRateLimit
	}
	ports, err := freePorts(opts.HTTPSPort, opts.HTTPPort, 0)
	if err != nil {
		return nil, err
	}
	g := &Gateway{
		HTTPSPort:     ports[0],
		HTTPPort:      ports[1],
		HTTPSURL:      "https://127.0.0.1:" + strconv.Itoa(ports[0]),
		HTTPURL:       "http://127.0.0.1:" + strconv.Itoa(ports[1]),
		APIURL:        "http://127.0.0.1:" + strconv.Itoa(ports[2]),
		Dir:           opts.Dir,
		AccessLogFile: filepath.Join(opts.Dir, "access.log"),
		LogFile:       filepath.Join(opts.Dir, "traefik.log"),
	}
	gatewayDir := filepath.Join(opts.RepoRoot, "gateway")
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	// Traefik finds local plugins under ./plugins-local of its working
	// directory: run it in Dir with a fresh copy of the plugin source.
	pluginCopy := filepath.Join(opts.Dir, PluginDir)
	if err := os.RemoveAll(pluginCopy); err != nil {
		return nil, err
	}
	if err := os.CopyFS(pluginCopy, os.DirFS(filepath.Join(gatewayDir, PluginDir))); err != nil {
		return nil, fmt.Errorf("copy gateway plugins: %w", err)
	}
	cfg := GatewayConfig{
		WebAddress:       "127.0.0.1:" + strconv.Itoa(g.HTTPPort),
		WebSecureAddress: "127.0.0.1:" + strconv.Itoa(g.HTTPSPort),
		APIAddress:       "127.0.0.1:" + strconv.Itoa(ports[2]),
		DynamicFile:      filepath.Join(opts.Dir, "dynamic.yml"),
		AccessLogFile:    g.AccessLogFile,
		LogLevel:         opts.LogLevel,
		Routes:           opts.Routes,
		RateLimit:        opts.RateLimit,
		RequestTimeout:   opts.RequestTimeout,
		TLS:              opts.TLS,
		TracingEndpoint:  TracesURL(opts.OTLPEndpoint),
		HealthCheck:      opts.HealthCheck,
		Debug:            opts.Debug,
	}
	static, dynamic, err := RenderGatewayConfig(gatewayDir, cfg)
	if err != nil {
		return nil, err
	}
	staticFile := filepath.Join(opts.Dir, "traefik.yml")
	if err := os.WriteFile(staticFile, static, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(cfg.DynamicFile, dynamic, 0o644); err != nil {
		return nil, err
	}
	g.proc, err = startProcess(processSpec{
		name:    opts.LogName,
		bin:     opts.TraefikBin,
		args:    []string{"--configFile=" + staticFile},
		dir:     opts.Dir,
		env:     baseEnv(),
		log:     opts.Log,
		logFile: g.LogFile,
	})
	if err != nil {
		return nil, err
	}
	names := []string{"https-required@file"}
	g.healthChecked = map[string][]string{}
	for _, r := range opts.Routes {
		names = append(names, r.Name+"@file")
		if r.Replicated() {
			g.healthChecked[r.TraefikService()] = r.Servers()
		}
	}
	if err := g.proc.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
		if err := checkTraefikRouters(ctx, g.APIURL, names); err != nil {
			return err
		}
		// Every server of a replicated service in the rotation.
		var errs []error
		for svc, urls := range g.healthChecked {
			errs = append(errs, checkTraefikServers(ctx, g.APIURL, svc, urls))
		}
		return errors.Join(errs...)
	}); err != nil {
		_ = g.Stop()
		return nil, fmt.Errorf("traefik not ready: %w", err)
	}
	return g, nil
}

// Stop terminates Traefik and waits for it.
func (g *Gateway) Stop() error {
	if g == nil || g.proc == nil {
		return nil
	}
	return g.proc.stop(10 * time.Second)
}

type traefikRouter struct {
	Name        string   `json:"name"`
	Status      string   `json:"status"`
	Error       []string `json:"error"`
	Middlewares []string `json:"middlewares"`
}

// checkTraefikRouters asks Traefik's API whether each named router is
// loaded and enabled. A plugin that fails to load disables the router using
// it, so this also proves that Yaegi accepted the local plugin.
func checkTraefikRouters(ctx context.Context, apiURL string, names []string) error {
	var routers []traefikRouter
	if err := getJSON(ctx, apiURL+"/api/http/routers", &routers); err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		i := slices.IndexFunc(routers, func(r traefikRouter) bool { return r.Name == name })
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("router %s not loaded", name))
		case routers[i].Status != "enabled":
			errs = append(errs, fmt.Errorf("router %s is %s: %v", name, routers[i].Status, routers[i].Error))
		}
	}
	return errors.Join(errs...)
}

// checkTraefikServers asks Traefik's API whether its health check has
// every one of urls of the (file provider's) service up.
func checkTraefikServers(ctx context.Context, apiURL, service string, urls []string) error {
	var svc struct {
		ServerStatus map[string]string `json:"serverStatus"`
	}
	if err := getJSON(ctx, apiURL+"/api/http/services/"+service+"@file", &svc); err != nil {
		return err
	}
	var errs []error
	for _, u := range urls {
		if st := svc.ServerStatus[u]; st != "UP" {
			errs = append(errs, fmt.Errorf("service %s: server %s is %q", service, u, st))
		}
	}
	return errors.Join(errs...)
}

// WaitServerUp waits until the gateway's health check has put url, a
// server of a replicated route's service, back in the rotation.
func (g *Gateway) WaitServerUp(ctx context.Context, service, url string) error {
	if _, ok := g.healthChecked[service]; !ok {
		return nil // a lone server is always in the rotation
	}
	return g.proc.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
		return checkTraefikServers(ctx, g.APIURL, service, []string{url})
	})
}

func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// TracesURL is the OTLP/HTTP traces URL of a collector's base URL (as
// OTEL_EXPORTER_OTLP_ENDPOINT, which the SDK completes the same way); ""
// for "".
func TracesURL(base string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/v1/traces"
}
