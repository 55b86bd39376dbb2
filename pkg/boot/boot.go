// Package boot opens the dependencies every service shares (logger, tracing,
// PostgreSQL with its migrations, Redis, NATS, the token verifier and the HTTP
// server) from config.Common, serves, and shuts them down in order.
package boot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/logging"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/redisconn"
	"supportplatform.dev/pkg/telemetry"
)

// Options say what a service needs.
type Options struct {
	Service    string
	Schema     string // "" = no database
	Migrations fs.FS
	// Outbox relays the schema's outbox table to JetStream while serving.
	Outbox bool
	// MaxConns is the service's default pool size (DATABASE_MAX_CONNS
	// overrides it); 0 = pgx's.
	MaxConns int
}

// Deps are the opened dependencies.
type Deps struct {
	Log      *slog.Logger
	DB       *pgxpool.Pool
	Redis    *redis.Client
	Bus      *natsbus.Bus
	Verifier *authn.Verifier
	Server   *httpserver.Server
	// Tracing exports the spans when OTEL_EXPORTER_OTLP_ENDPOINT is set;
	// Close flushes it last.
	Tracing *telemetry.Tracing
	Now     func() time.Time
	cfg     config.Common
	opts    Options

	closeOnce sync.Once
	closeErr  error
	// stopWork ends the background work (the outbox relay and what Go
	// added); workDone is closed when all of it has returned.
	stopWork context.CancelFunc
	workDone chan struct{}
	relay    *outbox.Relay
	work     []func(ctx context.Context)
	// pooler is what DATABASE_URL reaches (DATABASE_POOLER).
	pooler postgres.Pooler

	// OutboxWake is what the service's store calls after committing
	// events to the schema's outbox: the relay of this process when
	// Options.Outbox is set, else a NOTIFY that wakes the relay of the
	// binary that runs it (outbox.Notify). Nil without a schema.
	OutboxWake func()
}

// Go adds background work that Serve runs while serving: fn gets a context
// that ends at shutdown, after the HTTP server and the NATS subscriptions
// have stopped and before the pools close, and Close waits for fn to
// return.
func (d *Deps) Go(fn func(ctx context.Context)) { d.work = append(d.work, fn) }

// Migrate applies the service's migrations and returns: it needs PostgreSQL
// only (the `migrate` subcommand).
func Migrate(ctx context.Context, cfg config.Common, o Options, stdout io.Writer) error {
	log := logging.New(stdout, cfg.LogLevel, o.Service)
	pooler, err := postgres.ParsePooler(cfg.DatabasePooler)
	if err != nil {
		return err
	}
	return postgres.Setup(ctx, postgres.Options{URL: cfg.DatabaseURL, MigrateURL: cfg.DatabaseMigrateURL, Schema: o.Schema, Migrations: o.Migrations,
		Pooler: pooler}, log)
}

// Open connects everything; on error what was opened is closed again.
func Open(ctx context.Context, cfg config.Common, o Options, stdout io.Writer) (d *Deps, err error) {
	d = &Deps{Log: logging.New(stdout, cfg.LogLevel, o.Service), Now: time.Now, cfg: cfg, opts: o}
	// On an error, what was opened is closed again; `return nil, err` has
	// set d to nil by then.
	opened := d
	defer func() {
		if err != nil {
			_ = opened.Close()
			d = nil
		}
	}()
	// Tracing first: the instrumented clients below (pgx, Redis, HTTP)
	// take the provider installed with the process's globals.
	if d.Tracing, err = telemetry.Setup(ctx, cfg.Telemetry, o.Service); err != nil {
		return nil, err
	}
	setProcessGlobals(d.Log, d.Tracing)
	if d.Tracing.Enabled() {
		d.Log.Info("tracing: exporting spans", "endpoint", d.Tracing.Endpoint())
	}
	var checks []httpserver.Check
	if o.Schema != "" {
		if d.pooler, err = postgres.ParsePooler(cfg.DatabasePooler); err != nil {
			return nil, err
		}
		if cfg.DatabaseMaxConns < 0 || cfg.DatabaseMaxConns > 1000 {
			return nil, fmt.Errorf("config: DATABASE_MAX_CONNS %d: want 0 (the service's default) to 1000", cfg.DatabaseMaxConns)
		}
		if d.DB, err = postgres.Open(ctx, postgres.Options{URL: cfg.DatabaseURL, MigrateURL: cfg.DatabaseMigrateURL, Schema: o.Schema, Migrations: o.Migrations,
			MaxConns: int32(cmp.Or(cfg.DatabaseMaxConns, o.MaxConns)), Pooler: d.pooler}, d.Log); err != nil {
			return nil, err
		}
		checks = append(checks, httpserver.Check{Name: "postgres", Check: d.DB.Ping})
	}
	if d.Redis, err = redisconn.Open(ctx, cfg.RedisURL); err != nil {
		return nil, err
	}
	checks = append(checks, httpserver.Check{Name: "redis", Check: func(ctx context.Context) error { return d.Redis.Ping(ctx).Err() }})
	d.Verifier = &authn.Verifier{
		Keys:        authn.NewKeySet(cfg.JWKSURL, telemetry.HTTPClient(nil, 5*time.Second), d.Now),
		Revocations: authn.NewRevocations(d.Redis, cfg.RedisPrefix),
		Issuer:      cfg.JWTIssuer, Audience: cfg.JWTAudience, Now: d.Now,
	}
	if err = contracts.ValidateReplicas(cfg.NATSReplicas); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if d.Bus, err = natsbus.Connect(cfg.NATSURL, o.Service, contracts.Names{Prefix: cfg.NATSPrefix, Replicas: cfg.NATSReplicas}, d.Log); err != nil {
		return nil, err
	}
	if err = d.Bus.EnsureEventsStream(ctx); err != nil {
		return nil, err
	}
	checks = append(checks, httpserver.Check{Name: "nats", Check: d.Bus.Check})
	if o.Outbox {
		if d.DB == nil {
			return nil, errors.New("boot: an outbox needs a schema")
		}
		d.relay = outbox.NewRelay(d.DB, d.Bus, d.Log)
		if d.pooler == postgres.PoolerTransaction {
			// Behind a transaction pooler the LISTEN needs a session of
			// its own, or there is none and the relay polls.
			var listen func(ctx context.Context) (*pgx.Conn, error)
			if url := d.sessionURL(); url != "" {
				listen = func(ctx context.Context) (*pgx.Conn, error) {
					return postgres.Connect(ctx, url, o.Schema, d.pooler)
				}
			}
			d.relay.ListenOn(listen)
		}
		d.OutboxWake = d.relay.Wake
	} else if d.DB != nil {
		d.OutboxWake = outbox.Notify(d.DB, d.Log)
	}
	d.Server, err = httpserver.New(httpserver.Options{Service: o.Service, Logger: d.Log,
		MaxBodyBytes: cfg.MaxBodyBytes, RequestTimeout: cfg.RequestTimeout, Checks: checks, TrustedProxies: cfg.TrustedProxies,
		// A database or network error a handler returned unmapped is an
		// outage: the same 503 as the store's and InTx's, never a 500.
		Outage: postgres.Outage})
	if err != nil {
		return nil, err
	}
	// The JetStream consumers' state (natsbus.Bus.WatchConsumer) and the
	// outbox backlog, next to the request metrics.
	if err = d.Server.Registry.Register(d.Bus.Collector()); err != nil {
		return nil, fmt.Errorf("boot: consumer metrics: %w", err)
	}
	if d.DB != nil {
		if err = d.Server.Registry.Register(postgres.PoolCollector(d.DB)); err != nil {
			return nil, fmt.Errorf("boot: pool metrics: %w", err)
		}
	}
	if d.relay != nil {
		if err = d.Server.Registry.Register(outbox.NewPendingCollector(d.DB, d.Now)); err != nil {
			return nil, fmt.Errorf("boot: outbox metrics: %w", err)
		}
	}
	return d, nil
}

// sessionURL is the connection that keeps a session (DATABASE_SESSION_URL,
// or DATABASE_URL when no transaction pooler is in front), "" when there
// is none.
func (d *Deps) sessionURL() string {
	return postgres.SessionURL(d.cfg.DatabaseURL, d.cfg.DatabaseSessionURL, d.pooler)
}

// SessionPool opens a pool of its own on the connection that keeps a
// session, as the service's role in its schema, for session state held
// across transactions (importreply's folder locks); the caller closes it.
// Behind a transaction pooler without DATABASE_SESSION_URL it returns
// postgres.ErrNoSession.
func (d *Deps) SessionPool(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) {
	url := d.sessionURL()
	if url == "" {
		return nil, postgres.ErrNoSession
	}
	return postgres.Open(ctx, postgres.Options{URL: url, Schema: d.opts.Schema, MaxConns: maxConns, Pooler: d.pooler}, d.Log)
}

// OpenServer opens what a service without PostgreSQL, Redis or NATS needs
// (docs): the logger and the HTTP server, whose /readyz has nothing to
// check. Of cfg it reads LogLevel, TrustedProxies, MaxBodyBytes and
// RequestTimeout, and Serve ShutdownGrace and DrainDelay; the rest may stay empty, so such
// a service neither reads nor documents settings it has no use for.
func OpenServer(cfg config.Common, service string, stdout io.Writer) (*Deps, error) {
	d := &Deps{Log: logging.New(stdout, cfg.LogLevel, service), Now: time.Now, cfg: cfg, opts: Options{Service: service}}
	// Such a service exports no spans: a disabled Tracing installs the
	// no-op provider.
	setProcessGlobals(d.Log, &telemetry.Tracing{})
	var err error
	d.Server, err = httpserver.New(httpserver.Options{Service: service, Logger: d.Log,
		MaxBodyBytes: cfg.MaxBodyBytes, RequestTimeout: cfg.RequestTimeout, TrustedProxies: cfg.TrustedProxies})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Auth is the bearer-token middleware for protected route groups.
func (d *Deps) Auth() gin.HandlerFunc {
	return authn.Middleware(d.Verifier, d.Server.Fail)
}

// Serve listens on addr, writes the bound address to stdout (tests start
// services on port 0), runs the background work and serves until ctx ends;
// then it shuts everything down in order (Close) and returns.
func (d *Deps) Serve(ctx context.Context, addr string, stdout io.Writer) error {
	if d.cfg.DrainDelay < 0 {
		return errors.Join(fmt.Errorf("config: DRAIN_DELAY %s: want 0 or more", d.cfg.DrainDelay), d.Close())
	}
	ln, err := httpserver.Listen(addr)
	if err != nil {
		return errors.Join(err, d.Close())
	}
	if d.relay != nil {
		relay := d.relay
		d.work = append(d.work, func(ctx context.Context) { _ = relay.Run(ctx) })
	}
	if len(d.work) > 0 {
		var workCtx context.Context
		workCtx, d.stopWork = context.WithCancel(context.WithoutCancel(ctx))
		d.workDone = make(chan struct{})
		var wg sync.WaitGroup
		for _, fn := range d.work {
			wg.Go(func() { fn(workCtx) })
		}
		go func() {
			wg.Wait()
			close(d.workDone)
		}()
	}
	if d.cfg.DebugAddr != "" {
		debugCtx, stopDebug := context.WithCancel(context.WithoutCancel(ctx))
		defer stopDebug()
		// Waits (channels, locks, the pool's acquire) show in
		// /debug/pprof/block and /debug/pprof/mutex only when sampled.
		runtime.SetBlockProfileRate(d.cfg.DebugBlockRate)
		runtime.SetMutexProfileFraction(d.cfg.DebugMutexFraction)
		if _, err := serveDebug(debugCtx, d.cfg.DebugAddr, d.Log); err != nil {
			return errors.Join(fmt.Errorf("DEBUG_ADDR: %w", err), ln.Close(), d.Close())
		}
	}
	d.Log.Info("listening", "addr", ln.Addr().String())
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr().String())
	err = httpserver.Serve(ctx, ln, d.Server.Handler(), d.Log, httpserver.Shutdown{Grace: d.cfg.ShutdownGrace,
		RequestTimeout: d.cfg.RequestTimeout, DrainDelay: d.cfg.DrainDelay, Draining: d.Server.Drain})
	return errors.Join(err, d.Close())
}

// Close shuts down in order, each step waiting for the one before: the NATS
// subscriptions and consumers are drained (their running handlers finish, with
// at most SHUTDOWN_GRACE), the outbox relay stops after publishing what the
// last handlers committed, the NATS connection drains and closes (waiting for
// its closed callback), then Redis and PostgreSQL close, and the spans still
// queued are exported. The HTTP server has stopped before (Serve). Safe to
// call more than once.
func (d *Deps) Close() error {
	d.closeOnce.Do(func() {
		grace := d.cfg.ShutdownGrace
		if grace <= 0 {
			grace = 15 * time.Second
		}
		var errs []error
		if d.Bus != nil {
			ctx, cancel := context.WithTimeout(context.Background(), grace)
			errs = append(errs, d.Bus.DrainSubscriptions(ctx))
			cancel()
		}
		if d.stopWork != nil {
			d.stopWork()
			<-d.workDone
		}
		if d.relay != nil && d.workDone != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if _, err := d.relay.Flush(ctx); err != nil {
				d.Log.Warn("outbox: events stay queued for the next start", "error", err.Error())
			}
			cancel()
		}
		if d.Bus != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, d.Bus.Close(ctx))
			cancel()
		}
		if d.Redis != nil {
			errs = append(errs, d.Redis.Close())
		}
		if d.DB != nil {
			d.DB.Close()
		}
		if d.Tracing != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := d.Tracing.Shutdown(ctx); err != nil {
				// Lost spans do not fail a shutdown.
				d.Log.Warn("tracing: spans not flushed", "error", err.Error())
			}
			cancel()
		}
		d.closeErr = errors.Join(errs...)
		if d.closeErr != nil {
			d.Log.Error("shutdown", "error", d.closeErr.Error())
		}
	})
	return d.closeErr
}

// Command returns the subcommand in args (args[0] is the program): "serve"
// when there is none, else one of "serve", "migrate", "healthcheck"
// (Healthcheck) and extra; anything else is an error naming the known ones.
func Command(args []string, extra ...string) (string, error) {
	known := append([]string{"serve", "migrate", "healthcheck"}, extra...)
	if len(args) < 2 {
		return "serve", nil
	}
	if slices.Contains(known, args[1]) {
		return args[1], nil
	}
	return "", fmt.Errorf("unknown command %q (%s)", args[1], strings.Join(known, ", "))
}
