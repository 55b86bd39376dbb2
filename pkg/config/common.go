package config

import (
	"time"

	"supportplatform.dev/pkg/telemetry"
)

// Common is the configuration every service shares; each binary embeds it in
// its own Config struct next to HTTP_ADDR and its specific settings.
type Common struct {
	LogLevel           string        `env:"LOG_LEVEL" default:"info" desc:"debug, info, warn or error"`
	DatabaseURL        string        `env:"DATABASE_URL" default:"postgres://postgres@127.0.0.1:5432/support?sslmode=disable" desc:"PostgreSQL database and the service's own role (sp_auth, sp_topics), which may use only the service's schema"`
	DatabaseMigrateURL string        `env:"DATABASE_MIGRATE_URL" default:"" desc:"connection of the schema owner that applies the migrations and grants the role of DATABASE_URL its rights; empty = DATABASE_URL migrates"`
	DatabaseMaxConns   int           `env:"DATABASE_MAX_CONNS" default:"0" desc:"largest number of connections of the service's pool; 0 = the service's default (tickets 8, the others the larger of 4 and the CPU count); pool_max_conns in DATABASE_URL also sets it"`
	DatabasePooler     string        `env:"DATABASE_POOLER" default:"none" desc:"what DATABASE_URL reaches: none (PostgreSQL) or transaction (PgBouncer or another pooler in transaction mode: no named prepared statements, the search_path from the role's setting, no LISTEN or session lock on DATABASE_URL)"`
	DatabaseSessionURL string        `env:"DATABASE_SESSION_URL" default:"" desc:"connection keeping a session (PostgreSQL or a session-mode pooler, as DATABASE_URL's role) for the outbox relay's LISTEN and importreply's folder locks; empty = DATABASE_URL, or with DATABASE_POOLER=transaction none (relays poll each second, importreply refuses to start)"`
	RedisURL           string        `env:"REDIS_URL" default:"redis://127.0.0.1:6379/0" desc:"Redis for revocations, rate limits and caches; with master_name=..., Redis Sentinel (deploy/README.md)"`
	RedisPrefix        string        `env:"REDIS_PREFIX" default:"sp:" desc:"prefix of every Redis key (isolates deployments and tests)"`
	NATSURL            string        `env:"NATS_URL" default:"nats://127.0.0.1:4222" desc:"NATS server with JetStream; a cluster's servers comma-separated (nats://u:p@a:4222,nats://u:p@b:4222)"`
	NATSPrefix         string        `env:"NATS_PREFIX" default:"" desc:"prefix of subjects and stream names (isolates deployments and tests)"`
	NATSReplicas       int           `env:"NATS_REPLICAS" default:"1" desc:"copies every JetStream stream and bucket keeps: 1 on one NATS server, 3 on a three-node cluster (whose servers NATS_URL lists, comma-separated); an existing stream's count is changed to it at start"`
	JWKSURL            string        `env:"AUTH_JWKS_URL" default:"http://127.0.0.1:8081/api/Auth/jwks" desc:"where services fetch the token signing keys: one URL, or several separated by commas (auth replicas without a load balancer in between), tried in turn"`
	JWTIssuer          string        `env:"JWT_ISSUER" default:"https://supportplatform.dev/auth" desc:"iss claim of access tokens"`
	JWTAudience        string        `env:"JWT_AUDIENCE" default:"supportplatform-api" desc:"aud claim of access tokens"`
	TrustedProxies     []string      `env:"TRUSTED_PROXIES" default:"127.0.0.1,::1" desc:"addresses whose X-Forwarded-For is trusted (the gateway)"`
	MaxBodyBytes       int64         `env:"MAX_BODY_BYTES" default:"1048576" desc:"largest accepted request body"`
	DebugAddr          string        `env:"DEBUG_ADDR" default:"" desc:"private address of a listener serving Go's /debug/pprof/ (profiles, goroutine dumps) for diagnosing a service; empty = off; never routed by the gateway"`
	DebugBlockRate     int           `env:"DEBUG_BLOCK_PROFILE_RATE" default:"0" desc:"with DEBUG_ADDR, the block profile's rate (runtime.SetBlockProfileRate, nanoseconds: 1 records every blocking event, 10000 one per 10 µs blocked) for /debug/pprof/block; 0 = off"`
	DebugMutexFraction int           `env:"DEBUG_MUTEX_PROFILE_FRACTION" default:"0" desc:"with DEBUG_ADDR, the mutex profile's fraction (runtime.SetMutexProfileFraction: 1 records every contention, 100 one in 100) for /debug/pprof/mutex; 0 = off"`
	ShutdownGrace      time.Duration `env:"SHUTDOWN_GRACE" default:"15s" desc:"how long in-flight requests may finish on SIGTERM"`
	DrainDelay         time.Duration `env:"DRAIN_DELAY" default:"0s" desc:"on SIGTERM, how long the service goes on accepting and serving with /readyz answering 503, so that a load balancer polling /readyz (Traefik's health check) takes it out of rotation first; longer than that check's interval plus timeout; 0 = stop accepting at once (a lone replica, or Kubernetes, whose preStop hook waits instead)"`
	RequestTimeout     time.Duration `env:"REQUEST_TIMEOUT" default:"60s" desc:"time budget of one request: its handler's context ends then (503 problem); the server's write timeout and the gateway's timeouts are derived from it, every upstream call (AI) must fit in it"`
	// Telemetry is the tracing set-up: the standard OTEL_* variables.
	Telemetry telemetry.Config
}
