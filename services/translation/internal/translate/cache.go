package translate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"time"
)

// Cache stores finished translations. Implementations must be safe for concurrent use. A failing
// cache never fails a translation: errors are logged and the engines asked instead.
type Cache interface {
	// Get returns the value and true on a hit, "" and false on a miss.
	Get(ctx context.Context, key string) (string, bool, error)
	Set(ctx context.Context, key, val string, ttl time.Duration) error
}

// Mode is the output form a translation was made for; the same text translated as plain text
// and as HTML gives different results, so the mode is part of the cache key.
type Mode string

const (
	ModePlain Mode = "plain"
	ModeHTML  Mode = "html"
)

// CacheKey derives the key of a finished translation: the hex SHA-256 of the customer (tenant),
// the source text, the source language the request gave ("" when it asked for detection), the
// target language and the mode. The customer is part of the key so that
// tenants never share an entry: otherwise one tenant could learn from a fast answer that another
// had translated the same text. The detected source language and the chosen provider are left
// out on purpose: both follow from the text and the configuration (and, for a short text, the
// customer's usual languages, which a cached answer may outlive: the customer got the first
// answer too), so a repeated request is answered from the cache before any detection or
// provider selection runs. Each part is
// length-prefixed so that no two different tuples hash the same input.
func CacheKey(customerID int64, text, source, target string, mode Mode) string {
	h := sha256.New()
	var n [8]byte
	for _, part := range []string{"v4", strconv.FormatInt(customerID, 10), text, source, target, string(mode)} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil))
}
