// Package redisconn opens the go-redis client every service uses.
package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"supportplatform.dev/pkg/telemetry"
)

// Timeouts of a client whose URL sets none (dial_timeout, read_timeout,
// write_timeout, pool_timeout): every command the services send is a quick
// one, so while Redis is down or hangs, a request fails within about a
// second (503) instead of waiting for go-redis's defaults (5 s to dial, 3 s
// to read, each retried).
const (
	DialTimeout  = time.Second
	ReadTimeout  = time.Second
	WriteTimeout = time.Second
	PoolTimeout  = 2 * time.Second
)

// Open parses url (redis://host:port/db), connects and pings.
func Open(ctx context.Context, url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis: parse url: %w", err)
	}
	FailFast(opt)
	c := redis.NewClient(opt)
	// Commands become spans of the request or message they serve; their
	// arguments (keys with e-mail addresses, tokens) stay out of them.
	if telemetry.Recording() {
		if err := redisotel.InstrumentTracing(c, redisotel.WithDBStatement(false)); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("redis: tracing: %w", err)
		}
	}
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis: ping %s: %w", opt.Addr, err)
	}
	return c, nil
}

// FailFast sets the timeouts opt leaves at zero, and one retry: a command
// that met a connection Redis closed (a restart) is sent once more on a new
// one, but a refused dial is not retried for seconds.
func FailFast(opt *redis.Options) {
	if opt.DialTimeout == 0 {
		opt.DialTimeout = DialTimeout
	}
	if opt.ReadTimeout == 0 {
		opt.ReadTimeout = ReadTimeout
	}
	if opt.WriteTimeout == 0 {
		opt.WriteTimeout = WriteTimeout
	}
	if opt.PoolTimeout == 0 {
		opt.PoolTimeout = PoolTimeout
	}
	if opt.MaxRetries == 0 {
		opt.MaxRetries = 1
	}
	// A refused dial is not tried five times 100 ms apart.
	if opt.DialerRetries <= 0 {
		opt.DialerRetries = 2
		opt.DialerRetryTimeout = 50 * time.Millisecond
	}
}

// Logger sends go-redis's own messages (a failed dial while Redis is down,
// a pool notice) to Log as warnings, in the service's JSON format, instead
// of plain text on stderr. go-redis takes its logger only process-wide
// (redis.SetLogger, no per-client option), so boot installs it, once.
type Logger struct{ Log *slog.Logger }

// Printf is go-redis's logging interface.
func (l Logger) Printf(ctx context.Context, format string, v ...any) {
	l.Log.WarnContext(ctx, "go-redis", "detail", fmt.Sprintf(format, v...))
}
