// Package redishistory remembers in Redis which source languages each customer's texts were in,
// so that every instance of the translation service reads short texts the same way.
package redishistory

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// DefaultTTL is how long the history of a customer that sends nothing is kept.
	DefaultTTL = 30 * 24 * time.Hour
	// DefaultHalveAt is the count at which every count of a customer is halved, so that the
	// history follows the customer's recent texts (a few hundred) rather than all of them.
	DefaultHalveAt = 200
)

// History implements translate.SourceHistory with one sorted set per customer: member the
// language, score its (decaying) count.
type History struct {
	rdb     redis.UniversalClient
	prefix  string
	ttl     time.Duration
	halveAt int
}

// New returns a history writing keys as prefix+customerID, e.g. prefix "translation:srclang:".
// A ttl of zero or less means DefaultTTL.
func New(rdb redis.UniversalClient, prefix string, ttl time.Duration) *History {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &History{rdb: rdb, prefix: prefix, ttl: ttl, halveAt: DefaultHalveAt}
}

// record counts one text and, when a count reaches the threshold, halves every count and drops
// the languages that fall below one; all in one script so that concurrent writers cannot halve
// twice.
var record = redis.NewScript(`
local n = redis.call('ZINCRBY', KEYS[1], 1, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if tonumber(n) >= tonumber(ARGV[3]) then
  local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    local s = tonumber(all[i + 1]) / 2
    if s < 1 then
      redis.call('ZREM', KEYS[1], all[i])
    else
      redis.call('ZADD', KEYS[1], s, all[i])
    end
  end
end
return 1
`)

// Record implements translate.SourceHistory.
func (h *History) Record(ctx context.Context, customerID int64, lang string) error {
	err := record.Run(ctx, h.rdb, []string{h.key(customerID)}, lang, h.ttl.Milliseconds(), h.halveAt).Err()
	if err != nil {
		return fmt.Errorf("redishistory: record: %w", err)
	}
	return nil
}

// Shares implements translate.SourceHistory.
func (h *History) Shares(ctx context.Context, customerID int64) (map[string]float64, error) {
	zs, err := h.rdb.ZRangeWithScores(ctx, h.key(customerID), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("redishistory: shares: %w", err)
	}
	var total float64
	for _, z := range zs {
		total += z.Score
	}
	out := make(map[string]float64, len(zs))
	for _, z := range zs {
		if lang, ok := z.Member.(string); ok && total > 0 {
			out[lang] = z.Score / total
		}
	}
	return out, nil
}

func (h *History) key(customerID int64) string {
	return h.prefix + strconv.FormatInt(customerID, 10)
}
