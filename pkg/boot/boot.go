// Package boot opens the dependencies every service shares (logger,
// PostgreSQL with its migrations, Redis, NATS, the token verifier and the HTTP
// server) from config.Common, and closes them in order.
package boot

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/logging"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/redisconn"
)

// Options say what a service needs.
type Options struct {
	Service    string
	Schema     string // "" = no database
	Migrations fs.FS
	NoRedis    bool
	NoNATS     bool
	Now        func() time.Time
}

// Deps are the opened dependencies.
type Deps struct {
	Log      *slog.Logger
	DB       *pgxpool.Pool
	Redis    *redis.Client
	Bus      *natsbus.Bus
	Verifier *authn.Verifier
	Server   *httpserver.Server
	Now      func() time.Time
	cfg      config.Common
}

// Open connects everything; on error what was opened is closed again.
func Open(ctx context.Context, cfg config.Common, o Options, stdout io.Writer) (d *Deps, err error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	d = &Deps{Log: logging.New(stdout, cfg.LogLevel, o.Service), Now: o.Now, cfg: cfg}
	defer func() {
		if err != nil {
			d.Close()
			d = nil
		}
	}()
	var checks []httpserver.Check
	if o.Schema != "" {
		if d.DB, err = postgres.Open(ctx, postgres.Options{URL: cfg.DatabaseURL, Schema: o.Schema, Migrations: o.Migrations}, d.Log); err != nil {
			return nil, err
		}
		checks = append(checks, httpserver.Check{Name: "postgres", Check: d.DB.Ping})
	}
	if !o.NoRedis {
		if d.Redis, err = redisconn.Open(ctx, cfg.RedisURL); err != nil {
			return nil, err
		}
		checks = append(checks, httpserver.Check{Name: "redis", Check: func(ctx context.Context) error { return d.Redis.Ping(ctx).Err() }})
		d.Verifier = &authn.Verifier{
			Keys:        authn.NewKeySet(cfg.JWKSURL, &http.Client{Timeout: 5 * time.Second}, o.Now),
			Revocations: authn.NewRevocations(d.Redis, cfg.RedisPrefix),
			Issuer:      cfg.JWTIssuer, Audience: cfg.JWTAudience, Now: o.Now,
		}
	}
	if !o.NoNATS {
		if d.Bus, err = natsbus.Connect(cfg.NATSURL, o.Service, contracts.Names{Prefix: cfg.NATSPrefix}, d.Log); err != nil {
			return nil, err
		}
		if err = d.Bus.EnsureEventsStream(ctx); err != nil {
			return nil, err
		}
		checks = append(checks, httpserver.Check{Name: "nats", Check: d.Bus.Check})
	}
	d.Server, err = httpserver.New(httpserver.Options{Service: o.Service, Logger: d.Log,
		MaxBodyBytes: cfg.MaxBodyBytes, RequestTimeout: cfg.RequestTimeout, Checks: checks, TrustedProxies: cfg.TrustedProxies})
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
// services on port 0) and serves until ctx ends.
func (d *Deps) Serve(ctx context.Context, addr string, stdout io.Writer) error {
	ln, err := httpserver.Listen(addr)
	if err != nil {
		return err
	}
	d.Log.Info("listening", "addr", ln.Addr().String())
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr().String())
	return httpserver.Serve(ctx, ln, d.Server.Handler(), d.Log, d.cfg.ShutdownGrace, d.cfg.RequestTimeout)
}

// Close shuts down in order: NATS (drain), Redis, PostgreSQL.
func (d *Deps) Close() {
	if d.Bus != nil {
		_ = d.Bus.Drain()
	}
	if d.Redis != nil {
		_ = d.Redis.Close()
	}
	if d.DB != nil {
		d.DB.Close()
	}
}
