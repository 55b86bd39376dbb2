// Package redisconn opens the go-redis client every service uses.
package redisconn

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Open parses url (redis://host:port/db), connects and pings.
func Open(ctx context.Context, url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis: parse url: %w", err)
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis: ping %s: %w", opt.Addr, err)
	}
	return c, nil
}
