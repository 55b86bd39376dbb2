// Package httpserver sets up the Gin engine every service uses: request ids,
// recovery, JSON access logs, metrics, body limits, problem+json errors,
// case-insensitive paths, health endpoints and graceful shutdown.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/requestid"
)

// Check is a readiness probe of one dependency.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Options configure a Server.
type Options struct {
	Service      string
	Logger       *slog.Logger
	MaxBodyBytes int64 // default 1 MiB
	// RequestTimeout bounds every handler through its request context
	// (default DefaultRequestTimeout); see WriteTimeout.
	RequestTimeout time.Duration
	Checks         []Check
	// TrustedProxies are the addresses whose X-Forwarded-For is believed
	// (the gateway). Default: loopback.
	TrustedProxies []string
	// Outage maps an error a handler returned to the 503 of an outage,
	// or returns nil when it is none (boot sets the one rule,
	// postgres.Outage): an error no layer mapped that means a dependency
	// is down answers that 503, like the mapped ones, not 500. The
	// server builds no outage answer of its own. nil: none does.
	Outage func(error) *apperr.Error
}

// Server wraps the Gin engine with the platform's middleware.
type Server struct {
	Engine   *gin.Engine
	Registry *prometheus.Registry
	log      *slog.Logger
	checks   []Check
	outage   func(error) *apperr.Error
	// bodyLimits are the routes' own limits ("METHOD /path/:param"),
	// written while routes are registered and only read while serving.
	bodyLimits map[string]int64
	// draining is set on shutdown (Drain): /readyz answers 503 from then
	// on while the server still serves (Serve's drain delay).
	draining atomic.Bool
}

// New builds the engine. Services register routes on Engine (in their
// routes.go) and serve Handler().
func New(o Options) (*Server, error) {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if len(o.TrustedProxies) == 0 {
		o.TrustedProxies = []string{"127.0.0.1", "::1"}
	}
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.ContextWithFallback = true
	if err := e.SetTrustedProxies(o.TrustedProxies); err != nil {
		return nil, fmt.Errorf("httpserver: trusted proxies: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "http_requests_total", Help: "HTTP requests by route, method and status.",
	}, []string{"route", "method", "status"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "http_request_duration_seconds", Help: "HTTP request latency by route.",
		Buckets: prometheus.DefBuckets,
	}, []string{"route", "method"})
	reg.MustRegister(requests, latency)

	s := &Server{Engine: e, Registry: reg, log: o.Logger, checks: o.Checks, outage: o.Outage, bodyLimits: map[string]int64{}}
	e.Use(traced(o.Service), s.requestID, s.accessLog(requests, latency), s.recover, deadline(o.RequestTimeout), s.bodyLimit(o.MaxBodyBytes), s.queryCheck)
	e.NoRoute(func(c *gin.Context) {
		WriteError(c, s.log, apperr.E(apperr.NotFound, "no route for %s %s", c.Request.Method, c.Request.URL.Path))
	})
	e.NoMethod(func(c *gin.Context) {
		WriteError(c, s.log, &apperr.Error{Code: methodNotAllowed, Message: "method " + c.Request.Method + " is not allowed here"})
	})
	e.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/readyz", s.ready)
	e.GET("/metrics", gin.WrapH(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	return s, nil
}

// Handle adapts a handler that returns an error; the error is mapped to a
// problem answer here, the one place where that happens.
func (s *Server) Handle(fn func(c *gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := fn(c); err != nil {
			s.Fail(c, err)
		}
	}
}

// Fail writes err as a problem (for middleware that cannot return errors).
func (s *Server) Fail(c *gin.Context, err error) {
	if s.outage != nil {
		if o := s.outage(err); o != nil {
			err = o
		}
	}
	WriteError(c, s.log, err)
}

// Handler is the root handler: case-insensitive path matching over the engine.
func (s *Server) Handler() http.Handler { return CaseInsensitive(s.Engine) }

// requestIDKey is requestid.Header as net/http stores header names
// (canonical): looked up and set under it directly, the name is not
// canonicalised into a new string twice per request.
var requestIDKey = textproto.CanonicalMIMEHeaderKey(requestid.Header)

func (s *Server) requestID(c *gin.Context) {
	var id string
	if v := c.Request.Header[requestIDKey]; len(v) > 0 {
		id = v[0]
	}
	if !requestid.Valid(id) {
		id = requestid.New()
	}
	c.Writer.Header()[requestIDKey] = []string{id}
	c.Request = c.Request.WithContext(requestid.With(c.Request.Context(), id))
	c.Next()
}

func (s *Server) accessLog(requests *prometheus.CounterVec, latency *prometheus.HistogramVec) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		status := c.Writer.Status()
		d := time.Since(start)
		requests.WithLabelValues(route, c.Request.Method, strconv.Itoa(status)).Inc()
		latency.WithLabelValues(route, c.Request.Method).Observe(d.Seconds())
		if route == "/healthz" || route == "/readyz" || route == "/metrics" {
			return
		}
		// The record goes to the handler as LogAttrs would pass it, but
		// without the caller's PC, which LogAttrs finds by unwinding the
		// stack (runtime.Callers) on every call and which no handler of
		// ours prints (AddSource is off).
		ctx, h := c.Request.Context(), s.log.Handler()
		if !h.Enabled(ctx, slog.LevelInfo) {
			return
		}
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "http request", 0)
		r.AddAttrs(slog.String("method", c.Request.Method), slog.String("path", c.Request.URL.Path),
			slog.String("route", route), slog.Int("status", status),
			slog.Float64("durationMs", float64(d.Microseconds())/1000),
			slog.Int("bytes", c.Writer.Size()), slog.String("clientIp", c.ClientIP()))
		_ = h.Handle(ctx, r)
	}
}

func (s *Server) recover(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.ErrorContext(c.Request.Context(), "panic", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			if !c.Writer.Written() {
				WriteError(c, s.log, apperr.Wrap(apperr.Internal, fmt.Errorf("panic: %v", r), ""))
			}
			c.Abort()
		}
	}()
	c.Next()
}

// SetBodyLimit gives one route its own body limit instead of MaxBodyBytes
// (an upload route takes more than the JSON routes). method and path are
// as the route is registered ("/api/Items/:id/files"). Call it while
// registering routes, before serving.
func (s *Server) SetBodyLimit(method, path string, n int64) {
	s.bodyLimits[method+" "+path] = n
}

func (s *Server) bodyLimit(def int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.Body == http.NoBody {
			// net/http's body of a request without one (a GET, nearly
			// every call): nothing to limit or drain, and no wrapper
			// and gin key map made for it (3 allocations of every GET).
			c.Next()
			return
		}
		n := def
		// The route is matched before the middleware runs: FullPath is
		// the registered path.
		if l, ok := s.bodyLimits[c.Request.Method+" "+c.FullPath()]; ok {
			n = l
		}
		b := &limitedBody{src: c.Request.Body, limit: n}
		c.Request.Body = b
		c.Set(bodyKey, b)
		if c.Request.ContentLength > n {
			// WriteError drains the body first (see DrainBytes).
			WriteError(c, s.log, apperr.E(apperr.TooLarge, "the request body exceeds %d bytes", n))
			return
		}
		c.Next()
	}
}

// queryCheck refuses query strings that do not decode: Go's URL.Query()
// silently drops malformed pairs (a broken pageSize=%zz would quietly become
// the default page) and keeps invalid UTF-8 that the database would refuse.
func (s *Server) queryCheck(c *gin.Context) {
	raw := c.Request.URL.RawQuery
	if raw == "" {
		c.Next()
		return
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		WriteError(c, s.log, apperr.E(apperr.Invalid, "the query string is malformed: %s", err.Error()))
		return
	}
	for k, vs := range vals {
		for _, v := range append(vs, k) {
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				WriteError(c, s.log, apperr.Field(strings.ToValidUTF8(k, "?"), "must be valid UTF-8 text without NUL",
					"the query string is not valid UTF-8 text"))
				return
			}
		}
	}
	c.Next()
}

// quiet discards what WriteError would log.
var quiet = slog.New(slog.DiscardHandler)

// Drain marks the server as shutting down: from now on /readyz answers 503
// (whatever its checks say), so that a load balancer polling it takes this
// replica out of rotation while it still serves (Serve's drain delay).
func (s *Server) Drain() { s.draining.Store(true) }

func (s *Server) ready(c *gin.Context) {
	if s.draining.Load() {
		// Expected, every health-check interval until the process exits:
		// Serve logs the drain once, this answer is not an error.
		WriteError(c, quiet, apperr.E(apperr.Unavailable, "the service is shutting down"))
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	failed := map[string]string{}
	for _, ch := range s.checks {
		if err := ch.Check(ctx); err != nil {
			failed[ch.Name] = "not ready"
			s.log.WarnContext(ctx, "readiness check failed", "check", ch.Name, "error", err.Error())
		}
	}
	if len(failed) > 0 {
		WriteError(c, s.log, &apperr.Error{Code: apperr.Unavailable, Message: "dependencies are not ready", Fields: failed})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}

// Listen opens the TCP listener (port 0 picks a free port).
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}

// DefaultRequestTimeout is REQUEST_TIMEOUT's default (config.Common).
const DefaultRequestTimeout = 60 * time.Second

// ResponseMargin is the time a handler that stopped at its deadline has to
// write its answer (a 503 problem) before the server's write deadline cuts
// the connection.
const ResponseMargin = 5 * time.Second

// WriteTimeout is the server's write timeout for a request budget: the
// budget plus ResponseMargin. net/http counts it from the end of the request
// headers, as the handler's deadline is counted, so a handler that keeps to
// its context always gets its answer out. The gateway's timeouts are longer
// again (deploy/stack GatewayTimeouts), so that the service's own answer is
// what the client sees.
func WriteTimeout(requestTimeout time.Duration) time.Duration {
	return requestTimeout + ResponseMargin
}

// deadline gives every handler a context that ends requestTimeout after the
// request started: database calls, NATS requests and upstream (AI) calls made
// with it stop there, and the answer is a 503 problem (WriteError).
func deadline(requestTimeout time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), requestTimeout)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// Shutdown says how Serve stops once its context ends.
type Shutdown struct {
	// Grace bounds the wait for the in-flight requests once the server
	// stopped accepting (SHUTDOWN_GRACE); default 15 s.
	Grace time.Duration
	// RequestTimeout is the budget the handlers were given
	// (Options.RequestTimeout); the server's read and write timeouts are
	// derived from it.
	RequestTimeout time.Duration
	// DrainDelay is how long the server goes on accepting and serving
	// after the context ended, with Draining called first (DRAIN_DELAY):
	// time for a load balancer that polls /readyz to take the replica out
	// of rotation before its listener closes. Zero: it stops accepting at
	// once.
	DrainDelay time.Duration
	// Draining is called when the context ends, before the drain delay
	// (Server.Drain: /readyz answers 503 from then on).
	Draining func()
}

// Serve serves h on ln until ctx ends, then shuts down gracefully: Draining
// is called, the server keeps serving for DrainDelay, then it stops
// accepting and waits up to Grace for the requests under way.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger, sd Shutdown) error {
	grace, requestTimeout := sd.Grace, sd.RequestTimeout
	if grace <= 0 {
		grace = 15 * time.Second
	}
	if requestTimeout <= 0 {
		requestTimeout = DefaultRequestTimeout
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// The body is read within the handler, so within its budget.
		ReadTimeout:    requestTimeout,
		WriteTimeout:   WriteTimeout(requestTimeout),
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	if sd.Draining != nil {
		sd.Draining()
	}
	if sd.DrainDelay > 0 {
		// Still accepting and serving, keep-alive included: the load
		// balancer sends here until its next health check sees the 503,
		// and it must not find the door closed meanwhile.
		log.Info("draining: /readyz answers 503, serving on until the listener closes", "drainDelay", sd.DrainDelay.String())
		t := time.NewTimer(sd.DrainDelay)
		select {
		case err := <-errc:
			t.Stop()
			return fmt.Errorf("http server: %w", err)
		case <-t.C:
		}
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
