package idempotency_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/redistest"
	"supportplatform.dev/services/tickets/internal/idempotency"
)

// harness is an engine with the middleware on a few routes whose handlers
// count their runs.
type harness struct {
	e      *gin.Engine
	rdb    *redis.Client
	prefix string
	runs   atomic.Int32
	// release, when set, is waited on by /slow.
	release chan struct{}
	started chan struct{}
	// failures is how many more times /flaky answers 500.
	failures atomic.Int32
}

func newHarness(t *testing.T, pendingTTL time.Duration) *harness {
	t.Helper()
	rdb := redis.NewClient(redistest.Options(t))
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis: %v", err)
	}
	h := &harness{rdb: rdb, prefix: "test:idem:" + randid.Hex(6) + ":", release: make(chan struct{}), started: make(chan struct{}, 4)}
	t.Cleanup(func() {
		ctx := context.Background()
		if keys, _ := rdb.Keys(ctx, h.prefix+"*").Result(); len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		_ = rdb.Close()
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	fail := func(c *gin.Context, err error) { httpserver.WriteError(c, log, err) }
	gin.SetMode(gin.TestMode)
	h.e = gin.New()
	// The customer comes from a header instead of a token.
	auth := func(c *gin.Context) {
		id, _ := strconv.ParseInt(c.GetHeader("X-Customer"), 10, 64)
		c.Request = c.Request.WithContext(authn.WithPrincipal(c.Request.Context(), authn.Principal{CustomerID: id}))
	}
	idem := idempotency.Middleware(idempotency.Options{Redis: rdb, Prefix: h.prefix, Service: "test",
		PendingTTL: pendingTTL, Fail: fail})
	g := h.e.Group("", auth, idem)
	g.POST("/things", func(c *gin.Context) {
		body, _ := io.ReadAll(c.Request.Body)
		n := h.runs.Add(1)
		c.Header("Location", fmt.Sprintf("/things/%d", n))
		c.JSON(http.StatusCreated, map[string]any{"run": n, "got": string(body)})
	})
	g.POST("/bad", func(c *gin.Context) {
		n := h.runs.Add(1)
		fail(c, apperr.E(apperr.Invalid, "run %d", n))
	})
	g.POST("/flaky", func(c *gin.Context) {
		n := h.runs.Add(1)
		if h.failures.Add(-1) >= 0 {
			fail(c, fmt.Errorf("run %d broke", n))
			return
		}
		c.JSON(http.StatusCreated, map[string]any{"run": n})
	})
	g.POST("/panic", func(c *gin.Context) {
		if h.runs.Add(1) == 1 {
			panic("handler bug")
		}
		c.JSON(http.StatusCreated, map[string]any{"ok": true})
	})
	g.POST("/slow", func(c *gin.Context) {
		h.runs.Add(1)
		h.started <- struct{}{}
		<-h.release
		c.JSON(http.StatusCreated, map[string]any{"slow": true})
	})
	return h
}

func hexSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (h *harness) post(path, customer, key, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Customer", customer)
	if key != "-" {
		req.Header.Set(idempotency.Header, key)
	}
	w := httptest.NewRecorder()
	h.e.ServeHTTP(w, req)
	return w
}

func problemStatus(t *testing.T, w *httptest.ResponseRecorder, want int) {
	t.Helper()
	if w.Code != want {
		t.Fatalf("status %d, want %d: %s", w.Code, want, w.Body.String())
	}
	if !strings.HasPrefix(w.Header().Get("Content-Type"), httpserver.ProblemContentType) {
		t.Fatalf("%d without a problem body: %q", want, w.Header().Get("Content-Type"))
	}
}

func TestReplayReturnsTheFirstAnswer(t *testing.T) {
	h := newHarness(t, 0)
	first := h.post("/things", "1", "key-1", `{"a":1}`)
	if first.Code != http.StatusCreated || first.Header().Get(idempotency.ReplayedHeader) != "" {
		t.Fatalf("first: %d %v", first.Code, first.Header())
	}
	again := h.post("/things", "1", "key-1", `{"a":1}`)
	if again.Code != http.StatusCreated || again.Body.String() != first.Body.String() ||
		again.Header().Get("Location") != first.Header().Get("Location") ||
		again.Header().Get("Content-Type") != first.Header().Get("Content-Type") ||
		again.Header().Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("replay %d %v %q, first %v %q", again.Code, again.Header(), again.Body, first.Header(), first.Body)
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times", n)
	}
	// Another body under the same key: 422, also for a key in progress.
	problemStatus(t, h.post("/things", "1", "key-1", `{"a":2}`), http.StatusUnprocessableEntity)
	// Keys are per customer and per route; no key, no bookkeeping.
	for _, w := range []*httptest.ResponseRecorder{
		h.post("/things", "2", "key-1", `{"a":2}`),
		h.post("/things", "1", "key-2", `{"a":1}`),
		h.post("/things", "1", "-", `{"a":1}`),
		h.post("/things", "1", "-", `{"a":1}`),
	} {
		if w.Code != http.StatusCreated || w.Header().Get(idempotency.ReplayedHeader) != "" {
			t.Fatalf("independent request: %d %v", w.Code, w.Header())
		}
	}
	if n := h.runs.Load(); n != 5 {
		t.Fatalf("handler ran %d times, want 5", n)
	}
	// The answer is kept for a day.
	keys, err := h.rdb.Keys(context.Background(), h.prefix+"*").Result()
	if err != nil || len(keys) != 3 {
		t.Fatalf("keys %v %v", keys, err)
	}
	if ttl := h.rdb.TTL(context.Background(), keys[0]).Val(); ttl < 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("ttl %s", ttl)
	}
}

// 4xx answers are stored: a replay of a bad request gets the same problem.
func TestClientErrorsAreReplayed(t *testing.T) {
	h := newHarness(t, 0)
	first := h.post("/bad", "1", "k", `{}`)
	problemStatus(t, first, http.StatusBadRequest)
	again := h.post("/bad", "1", "k", `{}`)
	problemStatus(t, again, http.StatusBadRequest)
	if again.Body.String() != first.Body.String() || !strings.Contains(first.Body.String(), "run 1") ||
		again.Header().Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("replayed %q, first %q", again.Body, first.Body)
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("runs %d", n)
	}
}

func TestInvalidKeys(t *testing.T) {
	h := newHarness(t, 0)
	for _, key := range []string{"", strings.Repeat("k", 256), "tab\tkey", "\u00e9"} {
		problemStatus(t, h.post("/things", "1", key, `{}`), http.StatusBadRequest)
	}
	if n := h.runs.Load(); n != 0 {
		t.Fatalf("runs %d", n)
	}
	if w := h.post("/things", "1", strings.Repeat("k", 255), `{}`); w.Code != http.StatusCreated {
		t.Fatalf("255-character key: %d", w.Code)
	}
}

func TestServerErrorsFreeTheKey(t *testing.T) {
	h := newHarness(t, 0)
	h.failures.Store(1)
	problemStatus(t, h.post("/flaky", "1", "k", `{}`), http.StatusInternalServerError)
	w := h.post("/flaky", "1", "k", `{}`)
	if w.Code != http.StatusCreated || w.Header().Get(idempotency.ReplayedHeader) != "" {
		t.Fatalf("retry after 500: %d %s", w.Code, w.Body)
	}
	w = h.post("/flaky", "1", "k", `{}`)
	if w.Code != http.StatusCreated || w.Header().Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("replay of the retry: %d %v", w.Code, w.Header())
	}
	if n := h.runs.Load(); n != 2 {
		t.Fatalf("runs %d", n)
	}
}

// Simultaneous requests with one key: exactly one runs; each other one is
// told the first is running (409) or gets its answer replayed.
func TestConcurrentClaimsRunOnce(t *testing.T) {
	h := newHarness(t, 0)
	const n = 20
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			w := h.post("/things", "1", "race", `{"same":true}`)
			if w.Code == http.StatusCreated && w.Header().Get(idempotency.ReplayedHeader) == "" {
				codes <- 0 // the one that ran
				return
			}
			codes <- w.Code
		})
	}
	wg.Wait()
	close(codes)
	ran := 0
	for code := range codes {
		switch code {
		case 0:
			ran++
		case http.StatusConflict, http.StatusCreated:
		default:
			t.Fatalf("status %d", code)
		}
	}
	if ran != 1 || h.runs.Load() != 1 {
		t.Fatalf("%d answered as first, handler ran %d times", ran, h.runs.Load())
	}
}

// A handler that panics gives the key up at once, as a 5xx does.
func TestPanicFreesTheKey(t *testing.T) {
	h := newHarness(t, 0)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not propagate to the server's recovery")
			}
		}()
		h.post("/panic", "1", "k", `{}`)
	}()
	if w := h.post("/panic", "1", "k", `{}`); w.Code != http.StatusCreated || w.Header().Get(idempotency.ReplayedHeader) != "" {
		t.Fatalf("retry after the panic: %d %s", w.Code, w.Body)
	}
}

func TestReplayWhileRunningIsAConflict(t *testing.T) {
	h := newHarness(t, 0)
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- h.post("/slow", "1", "k", `{}`) }()
	<-h.started
	problemStatus(t, h.post("/slow", "1", "k", `{}`), http.StatusConflict)
	problemStatus(t, h.post("/slow", "1", "k", `{"other":1}`), http.StatusUnprocessableEntity)
	close(h.release)
	if w := <-done; w.Code != http.StatusCreated {
		t.Fatalf("first: %d", w.Code)
	}
	if w := h.post("/slow", "1", "k", `{}`); w.Code != http.StatusCreated || w.Header().Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("after: %d %v", w.Code, w.Header())
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("runs %d", n)
	}
}

// A process that dies mid-request leaves its marker, which expires after
// PendingTTL; then the key can be used again.
func TestAbandonedClaimExpires(t *testing.T) {
	h := newHarness(t, 200*time.Millisecond)
	ctx := context.Background()
	// What a dead process leaves behind: the claim of the first request.
	w := h.post("/things", "1", "probe", `{}`)
	if w.Code != http.StatusCreated {
		t.Fatal(w.Code)
	}
	keys, _ := h.rdb.Keys(ctx, h.prefix+"*").Result()
	if len(keys) != 1 {
		t.Fatalf("keys %v", keys)
	}
	stored := keys[0]
	dead := strings.Replace(stored, ":"+hexSHA("probe"), ":"+hexSHA("dead"), 1)
	claim, _ := json.Marshal(map[string]string{"token": "gone", "bodySha256": hexSHA("{}")})
	if err := h.rdb.Set(ctx, dead, claim, 200*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	problemStatus(t, h.post("/things", "1", "dead", `{}`), http.StatusConflict)
	time.Sleep(300 * time.Millisecond) // the expiry is Redis's own clock
	if w := h.post("/things", "1", "dead", `{}`); w.Code != http.StatusCreated || w.Header().Get(idempotency.ReplayedHeader) != "" {
		t.Fatalf("after expiry: %d %v", w.Code, w.Header())
	}
}
