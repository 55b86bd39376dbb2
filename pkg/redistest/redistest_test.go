package redistest

import (
	"context"
	"testing"
)

// TEST_REDIS_URL names the test Redis, database included: a key a test
// writes lands in that database and nowhere else.
func TestURLNamesTheTestRedis(t *testing.T) {
	t.Setenv("TEST_REDIS_URL", "redis://127.0.0.1:6379/5")
	rdb, prefix := Open(t, "url")
	if got := rdb.Options().DB; got != 5 {
		t.Fatalf("client on database %d, want 5 (TEST_REDIS_URL)", got)
	}
	ctx := context.Background()
	if err := rdb.Set(ctx, prefix+"k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_REDIS_URL", "")
	if URL() != DefaultURL {
		t.Fatalf("URL() = %q without TEST_REDIS_URL, want %q", URL(), DefaultURL)
	}
	other, _ := Open(t, "url")
	if n, err := other.Exists(ctx, prefix+"k").Result(); err != nil || n != 0 {
		t.Fatalf("key found in the default database (%d, %v): TEST_REDIS_URL's database was not used", n, err)
	}
}
