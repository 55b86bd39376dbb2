package stack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// Account is a customer with its admin account, seeded with the auth
// binary's bootstrap subcommand.
type Account struct {
	Customer string
	Email    string
	Password string
	Name     string
}

// Options configures Start. RepoRoot is required; everything else has a
// default suited to tests.
type Options struct {
	RepoRoot string
	BinDir   string // service binaries and traefik; default RepoRoot/bin
	// DataDir holds TLS material, the auth signing key, logs and the
	// gateway's files. Default: a temporary directory that Stop removes.
	DataDir string
	// Database is the name of an existing database. Default: a fresh one
	// (CreateDatabase) that Stop drops.
	Database string
	// Services to start, in table order whatever the order given. Default:
	// every table service whose binary is in BinDir.
	Services []string
	// Env adds KEY=VALUE entries to a service's environment, after (and so
	// overriding) the stack's own; the key "*" applies to every service.
	Env          map[string][]string
	HTTPSPort    int            // 0: a free port
	HTTPPort     int            // 0: a free port
	ServicePorts map[string]int // 0 or missing: a free port
	RateLimit    RateLimit      // zero: DefaultRateLimit
	// RequestTimeout is every service's REQUEST_TIMEOUT, and the gateway's
	// timeouts are derived from it. Zero: DefaultRequestTimeout.
	RequestTimeout time.Duration
	// ExtraRoutes are added to the gateway next to the services' routes
	// (the benchmark's static baseline handler).
	ExtraRoutes []Route
	// Demo, when set, is created or updated with `auth bootstrap` once auth
	// is ready.
	Demo *Account
	// Log receives every process's output, line by line with a "[name] "
	// prefix. nil: the output only goes to the log files (LogFile), written
	// by the children directly, which keeps the supervisor off the request
	// path (the benchmark).
	Log         io.Writer
	LogLevel    string // services' LOG_LEVEL; default "info"
	RedisPrefix string // default: unique per Start
	NATSPrefix  string // default: unique per Start
	// NATSNodes is 3 for a NATS cluster of three servers (routes between
	// them, JetStream on each, every stream with three replicas); 0 or 1:
	// one server (natscluster.go).
	NATSNodes   int
	JWTIssuer   string // default DefaultJWTIssuer
	JWTAudience string // default DefaultJWTAudience
	Infra       *Infra // default LocalInfra
	// OTLPEndpoint, when set, turns tracing on: every service exports its
	// spans there (OTEL_EXPORTER_OTLP_ENDPOINT) and so does Traefik. It is
	// an OTLP/HTTP collector's base URL (http://127.0.0.1:4318); make run
	// takes it from OTEL_EXPORTER_OTLP_ENDPOINT.
	OTLPEndpoint string
	// GatewayDebug serves Traefik's /debug/pprof on its loopback API
	// entrypoint (GatewayConfig.Debug).
	GatewayDebug bool
	// Now is used for TLS certificate validity; default time.Now.
	Now func() time.Time
	// Replicas is the number of processes of each service (by name; the
	// key "*" for every service not named); default 1. Each process has
	// its own port and the service's environment; the gateway balances a
	// routed service's processes with HealthCheck and the replica-retry
	// middleware, and each of them gets DRAIN_DELAY =
	// HealthCheck.DrainDelay() (gateway/README.md, Replicas).
	Replicas map[string]int
	// HealthCheck of the replicated services in the gateway; zero:
	// DefaultHealthCheck.
	HealthCheck HealthCheck
}

// Defaults of the token claims the services agree on.
const (
	DefaultJWTIssuer   = "https://supportplatform.dev/auth"
	DefaultJWTAudience = "supportplatform-api"
)

// Stack is the running platform: every service and the gateway in front.
type Stack struct {
	HTTPSURL    string            // gateway TLS entrypoint, https://127.0.0.1:port
	HTTPURL     string            // gateway plain-HTTP entrypoint (refuses everything)
	ServiceURLs map[string]string // each service's own plain-HTTP URL (its first process's)
	Gateway     *Gateway
	TLS         *DevTLS
	Database    string
	// DatabaseURL is the administrator's (postgres) connection to the
	// database; each service gets its own role's (DATABASE_URL) and this one
	// to migrate with (DATABASE_MIGRATE_URL).
	DatabaseURL string
	// NATSURL is the stack's own NATS server as the harness user (tests
	// and tools; credentials included). Services get their own users.
	NATSURL     string
	RedisPrefix string
	NATSPrefix  string
	DataDir     string
	Demo        *Account
	Services    []string // started services, in start order
	// Mail is the SMTP relay auth sends through (started with auth): it
	// prints and keeps the mails instead of delivering them.
	Mail *MailRelay

	env      map[string][]string
	bins     map[string]string
	mu       sync.Mutex // procs, replicas and sets, which StartReplica and RestartReplica change
	procs    []*process
	replicas map[string]int // replicas started per service beyond the first
	// sets are the processes Start started per service (Options.Replicas).
	sets     map[string][]*Replica
	routed   map[string]bool // services with a gateway route
	natsProc *process
	natsAddr string
	// natsNodes are the NATS servers (one, or a cluster's); natsProc and
	// natsAddr are the first's.
	natsNodes []*natsNode
	// natsPasswords by NATS user; generated per Start.
	natsPasswords map[string]string
	// ticketRefSecret signs tickets' references (TICKET_REF_SECRET), kept
	// in DataDir so that a restarted stack reads its earlier subjects.
	ticketRefSecret string
	log             io.Writer
	infra           Infra
	ownsDB          bool
	ownsDataDir     bool
	stopOnce        sync.Once
	stopErr         error
}

// Start starts the requested services against the local infrastructure,
// seeds the demo account, starts Traefik in front of them and returns once
// every /readyz answers 200 and every gateway router is enabled. On error,
// whatever was started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Stack, err error) {
	if opts.RepoRoot == "" {
		return nil, errors.New("stack: Options.RepoRoot is required")
	}
	if opts.BinDir == "" {
		opts.BinDir = filepath.Join(opts.RepoRoot, "bin")
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	if opts.JWTIssuer == "" {
		opts.JWTIssuer = DefaultJWTIssuer
	}
	if opts.JWTAudience == "" {
		opts.JWTAudience = DefaultJWTAudience
	}
	if opts.RateLimit == (RateLimit{}) {
		opts.RateLimit = DefaultRateLimit
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	unique := randid.Hex(5)
	if opts.RedisPrefix == "" {
		opts.RedisPrefix = "t" + unique
	}
	if opts.NATSPrefix == "" {
		opts.NATSPrefix = "t" + unique
	}
	infra := LocalInfra(nil)
	if opts.Infra != nil {
		infra = *opts.Infra
	}

	s := &Stack{
		ServiceURLs: map[string]string{},
		RedisPrefix: opts.RedisPrefix,
		NATSPrefix:  opts.NATSPrefix,
		DataDir:     opts.DataDir,
		Demo:        opts.Demo,
		env:         map[string][]string{},
		bins:        map[string]string{},
		replicas:    map[string]int{},
		sets:        map[string][]*Replica{},
		routed:      map[string]bool{},
		infra:       infra,
	}
	if opts.Log != nil {
		s.log = SyncWriter(opts.Log)
	}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()

	if s.DataDir == "" {
		if s.DataDir, err = os.MkdirTemp("", "sp-stack-"); err != nil {
			return nil, err
		}
		s.ownsDataDir = true
	}
	for _, d := range []string{"logs", "auth"} {
		if err := os.MkdirAll(filepath.Join(s.DataDir, d), 0o700); err != nil {
			return nil, err
		}
	}
	if s.TLS, err = EnsureDevTLS(filepath.Join(s.DataDir, "tls"), opts.Now()); err != nil {
		return nil, fmt.Errorf("dev TLS: %w", err)
	}
	if s.ticketRefSecret, err = ensureSecret(filepath.Join(s.DataDir, "ticket-ref-secret")); err != nil {
		return nil, fmt.Errorf("ticket reference secret: %w", err)
	}

	s.Database = opts.Database
	if s.Database == "" {
		if s.Database, err = infra.CreateDatabase(ctx); err != nil {
			return nil, err
		}
		s.ownsDB = true
	}
	s.DatabaseURL = infra.DatabaseURL(s.Database)

	services, err := selectServices(opts)
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(services, func(svc Service) bool { return svc.Name == "auth" }) {
		if s.Mail, err = startMailRelay(s.TLS, filepath.Join(s.DataDir, "logs"), s.log); err != nil {
			return nil, fmt.Errorf("mail relay: %w", err)
		}
	}
	if err := s.startNATS(ctx, contracts.Names{Prefix: opts.NATSPrefix}, opts.NATSNodes); err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	// Every table service gets a port, started or not, so that the URLs
	// services give each other (AUTH_JWKS_URL) are known up front.
	want := make([]int, len(Services))
	for i, svc := range Services {
		want[i] = opts.ServicePorts[svc.Name]
	}
	// The gateway's port too: services that give an outside provider a
	// callback address (PUBLIC_BASE_URL) need it before the gateway starts.
	// Then one port per further replica of the started services.
	want = append(want, opts.HTTPSPort)
	for _, svc := range services {
		for range replicaCount(opts.Replicas, svc.Name) - 1 {
			want = append(want, 0)
		}
	}
	ports, err := freePorts(want...)
	if err != nil {
		return nil, err
	}
	portOf := map[string]int{}
	for i, svc := range Services {
		portOf[svc.Name] = ports[i]
	}
	opts.HTTPSPort = ports[len(Services)]
	extra := ports[len(Services)+1:]
	replicaPorts := map[string][]int{}
	for _, svc := range services {
		replicaPorts[svc.Name] = []int{portOf[svc.Name]}
		for range replicaCount(opts.Replicas, svc.Name) - 1 {
			replicaPorts[svc.Name] = append(replicaPorts[svc.Name], extra[0])
			extra = extra[1:]
		}
	}
	if opts.HealthCheck == (HealthCheck{}) {
		opts.HealthCheck = DefaultHealthCheck
	}

	for _, svc := range services {
		s.bins[svc.Name] = filepath.Join(opts.BinDir, svc.Name)
		s.ServiceURLs[svc.Name] = "http://127.0.0.1:" + strconv.Itoa(portOf[svc.Name])
		if s.env[svc.Name], err = s.serviceEnv(svc, opts, portOf, jwksURLs(portOf["auth"], replicaPorts["auth"])); err != nil {
			return nil, err
		}
	}

	// auth first: the others fetch its JWKS, and the demo account needs it.
	first, rest := services, []Service(nil)
	if len(services) > 0 && services[0].Bootstrap {
		first, rest = services[:1], services[1:]
	}
	if err := s.startServices(ctx, first, replicaPorts); err != nil {
		return nil, err
	}
	if opts.Demo != nil {
		if err := s.Bootstrap(ctx, *opts.Demo); err != nil {
			return nil, err
		}
	}
	if err := s.startServices(ctx, rest, replicaPorts); err != nil {
		return nil, err
	}

	routes := ServiceRoutes(services, func(svc Service) string { return s.ServiceURLs[svc.Name] })
	for i, r := range routes {
		for _, p := range replicaPorts[r.TraefikService()][1:] {
			routes[i].Replicas = append(routes[i].Replicas, "http://127.0.0.1:"+strconv.Itoa(p))
		}
		s.routed[r.TraefikService()] = true
	}
	routes = append(routes, opts.ExtraRoutes...)
	gw, err := StartGateway(ctx, GatewayOptions{
		RepoRoot:       opts.RepoRoot,
		TraefikBin:     filepath.Join(opts.BinDir, "traefik"),
		Dir:            filepath.Join(s.DataDir, "gateway"),
		HTTPSPort:      opts.HTTPSPort,
		HTTPPort:       opts.HTTPPort,
		Routes:         routes,
		RateLimit:      opts.RateLimit,
		RequestTimeout: opts.RequestTimeout,
		TLS:            s.TLS,
		OTLPEndpoint:   opts.OTLPEndpoint,
		HealthCheck:    opts.HealthCheck,
		Debug:          opts.GatewayDebug,
		Log:            s.log,
	})
	if err != nil {
		return nil, err
	}
	s.Gateway = gw
	s.HTTPSURL = gw.HTTPSURL
	s.HTTPURL = gw.HTTPURL
	return s, nil
}

func selectServices(opts Options) ([]Service, error) {
	var out []Service
	for _, svc := range Services {
		bin := filepath.Join(opts.BinDir, svc.Name)
		switch {
		case opts.Services == nil:
			if fileExists(bin) {
				out = append(out, svc)
			}
		case slices.Contains(opts.Services, svc.Name):
			if !fileExists(bin) {
				return nil, fmt.Errorf("service %s requested but %s is missing (run stack.Build)", svc.Name, bin)
			}
			out = append(out, svc)
		}
	}
	for _, name := range opts.Services {
		if _, ok := LookupService(name); !ok {
			return nil, fmt.Errorf("unknown service %q (not in stack.Services)", name)
		}
	}
	return out, nil
}

// serviceEnv is a service's environment. Least privilege: the service
// connects to PostgreSQL as its own role (created and granted by its
// migrations, which run as the administrator) and to NATS as its own user;
// a service without a schema gets no database URL at all, and a standalone
// one no URL of any backend.
func (s *Stack) serviceEnv(svc Service, opts Options, portOf map[string]int, jwks string) ([]string, error) {
	if svc.Standalone {
		env := append(baseEnv(),
			"HTTP_ADDR=127.0.0.1:"+strconv.Itoa(portOf[svc.Name]),
			"LOG_LEVEL="+opts.LogLevel,
			"REQUEST_TIMEOUT="+TimeoutsFor(opts.RequestTimeout).RequestTimeout().String(),
		)
		env = append(env, drainEnv(svc, opts)...)
		env = append(env, opts.Env["*"]...)
		return append(env, opts.Env[svc.Name]...), nil
	}
	natsURL, err := s.serviceNATSURL(svc)
	if err != nil {
		return nil, err
	}
	env := baseEnv()
	if role := svc.DatabaseRole(); role != "" {
		env = append(env,
			"DATABASE_URL="+replaceUser(s.DatabaseURL, role),
			"DATABASE_MIGRATE_URL="+s.DatabaseURL,
		)
	}
	env = append(env,
		"HTTP_ADDR=127.0.0.1:"+strconv.Itoa(portOf[svc.Name]),
		"LOG_LEVEL="+opts.LogLevel,
		"REDIS_URL="+s.infra.RedisURL(),
		"REDIS_PREFIX="+s.RedisPrefix,
		"NATS_URL="+natsURL,
		"NATS_PREFIX="+s.NATSPrefix,
		"NATS_REPLICAS="+strconv.Itoa(s.NATSReplicas()),
		"AUTH_JWKS_URL="+jwks,
		"JWT_ISSUER="+opts.JWTIssuer,
		"JWT_AUDIENCE="+opts.JWTAudience,
		"REQUEST_TIMEOUT="+TimeoutsFor(opts.RequestTimeout).RequestTimeout().String(),
		"PUBLIC_BASE_URL=https://127.0.0.1:"+strconv.Itoa(opts.HTTPSPort),
	)
	if opts.OTLPEndpoint != "" {
		env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+opts.OTLPEndpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
	}
	if svc.Name == "auth" {
		env = append(env,
			"AUTH_SIGNING_KEY_FILE="+filepath.Join(s.DataDir, "auth", "signing-key.pem"),
			"AUTH_DEV_KEYGEN=true",
			"AUTH_RESET_URL=https://127.0.0.1:"+strconv.Itoa(opts.HTTPSPort)+"/reset-password",
		)
		if s.Mail != nil {
			env = append(env, s.Mail.Env...)
		}
	}
	if svc.Name == "tickets" {
		env = append(env, "TICKET_REF_SECRET="+s.ticketRefSecret)
	}
	env = append(env, drainEnv(svc, opts)...)
	env = append(env, opts.Env["*"]...)
	return append(env, opts.Env[svc.Name]...), nil
}

// startServices starts svcs together, each with its replicas (one process
// per port of ports[name], the first named after the service, the others
// name-2, name-3...), and waits until all are ready.
func (s *Stack) startServices(ctx context.Context, svcs []Service, ports map[string][]int) error {
	var started []*Replica
	for _, svc := range svcs {
		for i, port := range ports[svc.Name] {
			name := svc.Name
			env := s.env[svc.Name]
			url := s.ServiceURLs[svc.Name]
			if i > 0 {
				name += "-" + strconv.Itoa(i+1)
				var err error
				if env, err = replicaEnv(env, port); err != nil {
					return err
				}
				url = "http://127.0.0.1:" + strconv.Itoa(port)
			}
			p, err := startProcess(processSpec{
				name:    name,
				bin:     s.bins[svc.Name],
				dir:     s.DataDir,
				env:     env,
				log:     s.log,
				logFile: s.LogFile(name),
			})
			if err != nil {
				return err
			}
			r := &Replica{Name: name, Service: svc.Name, URL: url, p: p, s: s}
			s.mu.Lock()
			s.procs = append(s.procs, p)
			s.sets[svc.Name] = append(s.sets[svc.Name], r)
			s.replicas[svc.Name] = i
			s.mu.Unlock()
			started = append(started, r)
		}
		s.Services = append(s.Services, svc.Name)
	}
	errs := make([]error, len(started))
	var wg sync.WaitGroup
	for i, r := range started {
		wg.Go(func() {
			errs[i] = r.p.waitReady(ctx, 90*time.Second, func(ctx context.Context) error { return checkStatus(ctx, r.URL+"/readyz", http.StatusOK) })
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// jwksURLs is AUTH_JWKS_URL: the JWKS of every auth process, tried in
// turn, so that a service's first fetch does not fail while one auth
// replica restarts (no load balancer between the services and auth).
// port is auth's first port, whether auth is started or not.
func jwksURLs(port int, replicaPorts []int) string {
	if len(replicaPorts) == 0 {
		replicaPorts = []int{port}
	}
	urls := make([]string, len(replicaPorts))
	for i, p := range replicaPorts {
		urls[i] = "http://127.0.0.1:" + strconv.Itoa(p) + "/api/Auth/jwks"
	}
	return strings.Join(urls, ",")
}

// replicaCount is the number of processes Options.Replicas asks of service.
func replicaCount(replicas map[string]int, service string) int {
	n, ok := replicas[service]
	if !ok {
		n = replicas["*"]
	}
	return max(n, 1)
}

// drainEnv is DRAIN_DELAY for a routed service with more than one process:
// long enough for the gateway's health check to take a stopping replica
// out of the rotation while it still serves. A lone process, or one the
// gateway does not route to, stops accepting at once.
func drainEnv(svc Service, opts Options) []string {
	if !svc.Routed() || replicaCount(opts.Replicas, svc.Name) < 2 {
		return nil
	}
	hc := opts.HealthCheck
	if hc == (HealthCheck{}) {
		hc = DefaultHealthCheck
	}
	return []string{"DRAIN_DELAY=" + hc.DrainDelay().String()}
}

// Bootstrap creates (or updates) a customer with its admin account with
// auth's bootstrap subcommand: the demo customer, or another one of a
// benchmark case.
func (s *Stack) Bootstrap(ctx context.Context, a Account) error {
	if _, ok := s.bins["auth"]; !ok {
		return errors.New("account requested but auth is not started")
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := s.Command(ctx, "auth", "bootstrap",
		"-customer", a.Customer, "-email", a.Email, "-password", a.Password, "-name", a.Name).CombinedOutput()
	if s.log != nil {
		w := &lineWriter{prefix: "[auth bootstrap] ", log: s.log, file: io.Discard}
		_, _ = w.Write(out)
		w.flush()
	}
	if err != nil {
		return fmt.Errorf("auth bootstrap: %w: %s", err, out)
	}
	return nil
}

// Command prepares the binary of a started service with the environment
// the stack gave it, for its subcommands (e.g. auth bootstrap).
func (s *Stack) Command(ctx context.Context, service string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.bins[service], args...)
	cmd.Env = slices.Clone(s.env[service])
	cmd.Dir = s.DataDir
	return cmd
}

// PIDs returns the process id of each running service and of the gateway
// ("traefik").
func (s *Stack) PIDs() map[string]int {
	pids := map[string]int{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		pids[p.spec.name] = p.cmd.Process.Pid
	}
	if s.Gateway != nil && s.Gateway.proc != nil {
		pids["traefik"] = s.Gateway.proc.cmd.Process.Pid
	}
	if s.natsProc != nil {
		pids["nats"] = s.natsProc.cmd.Process.Pid
	}
	return pids
}

// ServiceEnv is the environment a started service was given.
func (s *Stack) ServiceEnv(service string) []string { return slices.Clone(s.env[service]) }

// LogFile is the file holding the raw output of a service ("auth") or of
// the gateway ("traefik"; its JSON access log is Gateway.AccessLogFile).
func (s *Stack) LogFile(name string) string {
	if name == "traefik" && s.Gateway != nil {
		return s.Gateway.LogFile
	}
	return filepath.Join(s.DataDir, "logs", name+".log")
}

// HTTPClient returns a client for the gateway that trusts only the dev CA.
func (s *Stack) HTTPClient() *http.Client { return s.TLS.Client() }

// Client returns an HTTP client that trusts only the dev CA, keeping
// connections alive.
func (d *DevTLS) Client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: d.CAPool, MinVersion: tls.VersionTLS12}
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// Stop stops the gateway, then the services in reverse start order, each
// with SIGTERM and a wait; then drops the database and removes the data
// directory when Start made them. It is safe to call more than once.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		if s.Gateway != nil {
			errs = append(errs, s.Gateway.Stop())
		}
		s.mu.Lock()
		procs := slices.Clone(s.procs)
		s.mu.Unlock()
		// Services in the reverse order of their first start; the
		// processes of one service (its replicas, restarted ones
		// included, each draining for its DRAIN_DELAY) together.
		var order []string
		bySvc := map[string][]*process{}
		for _, p := range procs {
			svc := serviceOf(p.spec.name)
			if _, ok := bySvc[svc]; !ok {
				order = append(order, svc)
			}
			bySvc[svc] = append(bySvc[svc], p)
		}
		for i := len(order) - 1; i >= 0; i-- {
			group := bySvc[order[i]]
			gerrs := make([]error, len(group))
			var wg sync.WaitGroup
			for k, p := range group {
				wg.Go(func() { gerrs[k] = p.stop(15 * time.Second) })
			}
			wg.Wait()
			errs = append(errs, gerrs...)
		}
		errs = append(errs, s.stopNATS()...)
		if s.Mail != nil {
			errs = append(errs, s.Mail.Close())
		}
		if s.ownsDB && s.Database != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			errs = append(errs, s.infra.DropDatabase(ctx, s.Database))
			cancel()
		}
		if s.ownsDataDir && s.DataDir != "" {
			errs = append(errs, os.RemoveAll(s.DataDir))
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

func checkStatus(ctx context.Context, url string, want int) error {
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
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// ensureSecret returns the secret kept in file, generating one (32 random
// bytes, hex) when the file is missing.
func ensureSecret(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	secret := randid.Hex(32)
	return secret, os.WriteFile(file, []byte(secret+"\n"), 0o600)
}
