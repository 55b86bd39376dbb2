// Command docs serves the API reference page at /docs: Swagger UI showing
// the OpenAPI document of the public API, both embedded in the binary. It
// uses no database, Redis or NATS, so it is ready as soon as it listens.
//
//	docs              serve
//	docs healthcheck  GET /readyz of HTTP_ADDR, exit 0 or 1 (the container healthcheck)
//	docs migrate      nothing to do (no schema): the same deployment step for every binary
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/services/docs/internal/reference"
)

// Config of the docs service: the common variables it uses (no database,
// Redis, NATS or token settings: it has none of them).
type Config struct {
	HTTPAddr       string        `env:"HTTP_ADDR" default:"127.0.0.1:8091" desc:"listen address of the API reference page"`
	LogLevel       string        `env:"LOG_LEVEL" default:"info" desc:"debug, info, warn or error"`
	TrustedProxies []string      `env:"TRUSTED_PROXIES" default:"127.0.0.1,::1" desc:"addresses whose X-Forwarded-For is trusted (the gateway)"`
	ShutdownGrace  time.Duration `env:"SHUTDOWN_GRACE" default:"15s" desc:"how long in-flight requests may finish on SIGTERM"`
	DrainDelay     time.Duration `env:"DRAIN_DELAY" default:"0s" desc:"on SIGTERM, how long the service goes on accepting and serving with /readyz answering 503, so that a load balancer polling /readyz (Traefik's health check) takes it out of rotation first; longer than that check's interval plus timeout; 0 = stop accepting at once (a lone replica, or Kubernetes, whose preStop hook waits instead)"`
	RequestTimeout time.Duration `env:"REQUEST_TIMEOUT" default:"60s" desc:"time budget of one request: its handler's context ends then (503 problem); the server's write timeout and the gateway's timeouts are derived from it, every upstream call (AI) must fit in it"`
}

func main() { boot.Main("docs", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	cmd, err := boot.Command(args)
	if err != nil {
		return err
	}
	switch cmd {
	case "migrate":
		fmt.Fprintln(stdout, "docs has no schema: nothing to migrate")
		return nil
	case "healthcheck":
		return boot.Healthcheck(ctx, cfg.HTTPAddr, stdout)
	}
	site, err := reference.New(reference.Files)
	if err != nil {
		return err
	}
	// Only GET and HEAD are routed: no request body is ever read.
	deps, err := boot.OpenServer(config.Common{LogLevel: cfg.LogLevel, TrustedProxies: cfg.TrustedProxies, MaxBodyBytes: 64 << 10,
		RequestTimeout: cfg.RequestTimeout, ShutdownGrace: cfg.ShutdownGrace, DrainDelay: cfg.DrainDelay}, "docs", stdout)
	if err != nil {
		return err
	}
	site.Routes(deps.Server.Engine, deps.Server.Handle)
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}
