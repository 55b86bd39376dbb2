// Package rediscache stores finished translations in Redis, so that every instance of the
// translation service shares them and none holds them in its own memory.
package rediscache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cache implements translate.Cache. Keys are prefixed so that the translation service can share
// a Redis database with the other services (and tests with each other).
type Cache struct {
	rdb    redis.UniversalClient
	prefix string
}

// New returns a cache writing keys as prefix+key, e.g. prefix "translation:".
func New(rdb redis.UniversalClient, prefix string) *Cache {
	return &Cache{rdb: rdb, prefix: prefix}
}

// Get returns the stored value, or false when there is none.
func (c *Cache) Get(ctx context.Context, key string) (string, bool, error) {
	val, err := c.rdb.Get(ctx, c.prefix+key).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("rediscache: get: %w", err)
	}
	return val, true, nil
}

// Set stores val for ttl. A ttl of zero or less stores nothing: an entry that never expires
// would outlive every change of engine or model.
func (c *Cache) Set(ctx context.Context, key, val string, ttl time.Duration) error {
	if ttl <= 0 {
		return nil
	}
	if err := c.rdb.Set(ctx, c.prefix+key, val, ttl).Err(); err != nil {
		return fmt.Errorf("rediscache: set: %w", err)
	}
	return nil
}
