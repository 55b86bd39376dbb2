// Package redisconn opens the go-redis client every service uses.
package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	neturl "net/url"
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

// Open parses url, connects and pings. url is a Redis server
// (redis://[:password@]host:port/db, rediss:// for TLS), or, with a
// master_name parameter, Redis Sentinel: the URL names a sentinel, more
// of them come as addr parameters, the master's password as password
// (the userinfo is the sentinels'), e.g.
// redis://sentinel-0:26379/0?master_name=sp&addr=sentinel-1:26379&addr=sentinel-2:26379&password=PW.
// The client then asks the sentinels for the master and follows a
// failover.
func Open(ctx context.Context, url string) (*redis.Client, error) {
	var c *redis.Client
	var where string
	if failover(url) {
		fo, err := redis.ParseFailoverURL(url)
		if err != nil {
			return nil, fmt.Errorf("redis: parse url: %w", err)
		}
		failFastFailover(fo)
		c, where = redis.NewFailoverClient(fo), fmt.Sprintf("master %s of sentinels %v", fo.MasterName, fo.SentinelAddrs)
	} else {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("redis: parse url: %w", err)
		}
		FailFast(opt)
		c, where = redis.NewClient(opt), opt.Addr
	}
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
		return nil, fmt.Errorf("redis: ping %s: %w", where, err)
	}
	return c, nil
}

// failover reports whether url names Redis Sentinel (a master_name
// parameter).
func failover(url string) bool {
	u, err := neturl.Parse(url)
	return err == nil && u.Query().Has("master_name")
}

// failFastFailover is FailFast for a Sentinel client.
func failFastFailover(fo *redis.FailoverOptions) {
	opt := redis.Options{DialTimeout: fo.DialTimeout, ReadTimeout: fo.ReadTimeout, WriteTimeout: fo.WriteTimeout,
		PoolTimeout: fo.PoolTimeout, MaxRetries: fo.MaxRetries, DialerRetries: fo.DialerRetries, DialerRetryTimeout: fo.DialerRetryTimeout}
	FailFast(&opt)
	fo.DialTimeout, fo.ReadTimeout, fo.WriteTimeout, fo.PoolTimeout = opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout
	fo.MaxRetries, fo.DialerRetries, fo.DialerRetryTimeout = opt.MaxRetries, opt.DialerRetries, opt.DialerRetryTimeout
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
