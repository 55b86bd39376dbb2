package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// step is one scripted answer of the fake provider.
type step struct {
	status  int
	header  map[string]string
	body    string
	block   bool // hold the request until the client gives up
	content string
}

// fakeProvider speaks the chat-completions API: it checks each request the way a real server
// would and answers from a script.
type fakeProvider struct {
	t      *testing.T
	apiKey string
	model  string

	mu       sync.Mutex
	steps    []step
	requests []request
	auths    []string
}

func newFakeProvider(t *testing.T, apiKey, model string, steps ...step) (*fakeProvider, *httptest.Server) {
	f := &fakeProvider{t: t, apiKey: apiKey, model: model, steps: steps}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		http.Error(w, `{"error":{"message":"bad content type"}}`, http.StatusUnsupportedMediaType)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	if len(f.steps) == 0 {
		f.mu.Unlock()
		f.t.Errorf("unexpected extra request")
		http.Error(w, `{"error":{"message":"no more steps"}}`, http.StatusInternalServerError)
		return
	}
	s := f.steps[0]
	f.steps = f.steps[1:]
	f.mu.Unlock()

	if f.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+f.apiKey {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`))
		return
	}
	if req.Model != f.model {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"model not found"}}`))
		return
	}
	if s.block {
		<-r.Context().Done()
		return
	}
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	status := s.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	body := s.body
	if body == "" && status == http.StatusOK {
		b, _ := json.Marshal(map[string]any{
			"id":      "chatcmpl-1",
			"object":  "chat.completion",
			"created": 1700000000,
			"model":   f.model,
			"choices": []any{map[string]any{
				"index":         0,
				"message":       map[string]any{"role": "assistant", "content": s.content},
				"finish_reason": "stop",
			}},
			"usage": map[string]int{"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
		})
		body = string(b)
	}
	_, _ = w.Write([]byte(body))
}

func (f *fakeProvider) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

var msgs = []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Say hi"}}

func TestCompleteHappyPath(t *testing.T) {
	f, srv := newFakeProvider(t, "sk-test", "gpt-test", step{content: "Hi!"})
	c := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Model: "gpt-test"})
	got, err := c.Complete(context.Background(), msgs, WithTemperature(0), WithMaxTokens(50))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got != "Hi!" {
		t.Fatalf("Complete = %q, want Hi!", got)
	}
	req := f.requests[0]
	if len(req.Messages) != 2 || req.Messages[1].Content != "Say hi" || req.Messages[0].Role != "system" {
		t.Errorf("server got messages %+v", req.Messages)
	}
	if req.Temperature == nil || *req.Temperature != 0 || req.MaxTokens != 50 || req.Stream {
		t.Errorf("server got temperature %v max_tokens %d stream %v", req.Temperature, req.MaxTokens, req.Stream)
	}
	if f.auths[0] != "Bearer sk-test" {
		t.Errorf("Authorization = %q", f.auths[0])
	}
}

func TestCompleteWithoutKeySendsNoAuthorization(t *testing.T) {
	f, srv := newFakeProvider(t, "", "llama3.2", step{content: "ok"})
	c := New(Config{BaseURL: srv.URL + "/v1", Model: "llama3.2"})
	if _, err := c.Complete(context.Background(), msgs); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if f.auths[0] != "" {
		t.Fatalf("Authorization = %q, want none", f.auths[0])
	}
}

func TestCompleteContentParts(t *testing.T) {
	_, srv := newFakeProvider(t, "", "m", step{body: `{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"Hel"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"lo"}]},"finish_reason":"stop"}]}`})
	got, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m"}).Complete(context.Background(), msgs)
	if err != nil || got != "Hello" {
		t.Fatalf("Complete = %q, %v; want Hello", got, err)
	}
}

func TestCompleteRetries(t *testing.T) {
	clock := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		steps     []step
		wantWaits func(t *testing.T, waits []time.Duration)
	}{
		{
			name: "429 with fractional Retry-After then success",
			steps: []step{
				{status: 429, header: map[string]string{"Retry-After": "2.128"}, body: `{"error":{"message":"Rate limit reached","type":"requests"}}`},
				{content: "done"},
			},
			wantWaits: exactWaits(2128 * time.Millisecond),
		},
		{
			name: "429 with integer Retry-After then success",
			steps: []step{
				{status: 429, header: map[string]string{"Retry-After": "3"}, body: `{"error":{"message":"slow down"}}`},
				{content: "done"},
			},
			wantWaits: exactWaits(3 * time.Second),
		},
		{
			name: "503 with HTTP-date Retry-After then success",
			steps: []step{
				{status: 503, header: map[string]string{"Retry-After": clock.Add(4 * time.Second).Format(http.TimeFormat)}},
				{content: "done"},
			},
			wantWaits: exactWaits(4 * time.Second),
		},
		{
			name: "500 then success uses jittered backoff",
			steps: []step{
				{status: 500, body: `{"error":{"message":"internal"}}`},
				{content: "done"},
			},
			wantWaits: func(t *testing.T, waits []time.Duration) {
				if len(waits) != 1 || waits[0] < 50*time.Millisecond || waits[0] > 100*time.Millisecond {
					t.Fatalf("waits = %v, want one in [50ms, 100ms]", waits)
				}
			},
		},
		{
			name: "two 502 then success doubles the backoff",
			steps: []step{
				{status: 502, body: "<html>bad gateway</html>"},
				{status: 502, body: "<html>bad gateway</html>"},
				{content: "done"},
			},
			wantWaits: func(t *testing.T, waits []time.Duration) {
				if len(waits) != 2 || waits[1] < 100*time.Millisecond || waits[1] > 200*time.Millisecond {
					t.Fatalf("waits = %v, want a second one in [100ms, 200ms]", waits)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFakeProvider(t, "k", "m", tt.steps...)
			rec := &sleepRecorder{}
			c := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", MaxRetries: 3},
				WithSleep(rec.sleep), WithClock(func() time.Time { return clock }),
				WithBackoff(100*time.Millisecond, time.Second, time.Minute))
			got, err := c.Complete(context.Background(), msgs)
			if err != nil || got != "done" {
				t.Fatalf("Complete = %q, %v; want done", got, err)
			}
			if f.count() != len(tt.steps) {
				t.Fatalf("server saw %d requests, want %d", f.count(), len(tt.steps))
			}
			tt.wantWaits(t, rec.waits)
		})
	}
}

func exactWaits(want ...time.Duration) func(t *testing.T, waits []time.Duration) {
	return func(t *testing.T, waits []time.Duration) {
		t.Helper()
		if len(waits) != len(want) {
			t.Fatalf("waits = %v, want %v", waits, want)
		}
		for i := range want {
			if waits[i] != want[i] {
				t.Fatalf("waits = %v, want %v", waits, want)
			}
		}
	}
}

func TestCompleteFailures(t *testing.T) {
	tests := []struct {
		name         string
		cfg          Config
		steps        []step
		wantRequests int
		check        func(t *testing.T, err error)
	}{
		{
			name:         "persistent 500",
			cfg:          Config{MaxRetries: 2},
			steps:        []step{{status: 500, body: `{"error":{"message":"overloaded"}}`}, {status: 500, body: `{"error":{"message":"overloaded"}}`}, {status: 500, body: `{"error":{"message":"overloaded"}}`}},
			wantRequests: 3,
			check:        upstream(500, "overloaded", 3),
		},
		{
			name:         "400 is not retried",
			cfg:          Config{MaxRetries: 2},
			steps:        []step{{status: 400, body: `{"error":{"message":"context length exceeded","code":"context_length_exceeded"}}`}},
			wantRequests: 1,
			check:        upstream(400, "context length exceeded", 1),
		},
		{
			name:         "plain string error body",
			cfg:          Config{MaxRetries: 0},
			steps:        []step{{status: 404, body: `{"error":"model 'nope' not found"}`}},
			wantRequests: 1,
			check:        upstream(404, "model 'nope' not found", 1),
		},
		{
			name:         "Retry-After above the cap is not waited for",
			cfg:          Config{MaxRetries: 3},
			steps:        []step{{status: 429, header: map[string]string{"Retry-After": "3600"}}},
			wantRequests: 1,
			check:        upstream(429, "", 1),
		},
		{
			name:         "malformed JSON",
			cfg:          Config{MaxRetries: 2},
			steps:        []step{{body: `{"choices":[{"message":`}},
			wantRequests: 1,
			check:        malformed("invalid JSON"),
		},
		{
			name:         "empty choices",
			cfg:          Config{MaxRetries: 2},
			steps:        []step{{body: `{"id":"x","choices":[]}`}},
			wantRequests: 1,
			check:        malformed("no choices"),
		},
		{
			name:         "null content",
			cfg:          Config{MaxRetries: 2},
			steps:        []step{{body: `{"choices":[{"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}`}},
			wantRequests: 1,
			check:        malformed("no text content"),
		},
		{
			name:         "timeout on every attempt",
			cfg:          Config{MaxRetries: 1, Timeout: 50 * time.Millisecond},
			steps:        []step{{block: true}, {block: true}},
			wantRequests: 2,
			check: func(t *testing.T, err error) {
				upstream(0, "", 2)(t, err)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("error %v does not wrap context.DeadlineExceeded", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFakeProvider(t, "", "m", tt.steps...)
			cfg := tt.cfg
			cfg.BaseURL, cfg.Model = srv.URL+"/v1", "m"
			rec := &sleepRecorder{}
			c := New(cfg, WithSleep(rec.sleep), WithBackoff(time.Millisecond, 10*time.Millisecond, 10*time.Second))
			start := time.Now()
			got, err := c.Complete(context.Background(), msgs)
			if err == nil {
				t.Fatalf("Complete = %q, want an error", got)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("Complete took %v", time.Since(start))
			}
			tt.check(t, err)
			if f.count() != tt.wantRequests {
				t.Fatalf("server saw %d requests, want %d", f.count(), tt.wantRequests)
			}
		})
	}
}

func upstream(status int, msg string, attempts int) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var ue *UpstreamError
		if !errors.As(err, &ue) {
			t.Fatalf("error %T %v is not *UpstreamError", err, err)
		}
		if ue.StatusCode != status || ue.Message != msg || ue.Attempts != attempts {
			t.Fatalf("UpstreamError{status %d, message %q, attempts %d}, want {%d, %q, %d}",
				ue.StatusCode, ue.Message, ue.Attempts, status, msg, attempts)
		}
		var me *MalformedReplyError
		if errors.As(err, &me) {
			t.Fatalf("upstream failure also reported as malformed: %v", err)
		}
	}
}

func malformed(reason string) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var me *MalformedReplyError
		if !errors.As(err, &me) {
			t.Fatalf("error %T %v is not *MalformedReplyError", err, err)
		}
		if !strings.Contains(me.Error(), reason) {
			t.Fatalf("error %q does not mention %q", me.Error(), reason)
		}
		var ue *UpstreamError
		if errors.As(err, &ue) {
			t.Fatalf("malformed reply also reported as upstream failure: %v", err)
		}
	}
}

func TestCompleteNotConfigured(t *testing.T) {
	f, srv := newFakeProvider(t, "", "m")
	for name, cfg := range map[string]Config{
		"empty":      {},
		"no model":   {BaseURL: srv.URL + "/v1"},
		"no URL":     {Model: "m", APIKey: "k"},
		"blank URLs": {BaseURL: "  ", Model: "m"},
	} {
		t.Run(name, func(t *testing.T) {
			c := New(cfg)
			if c.Configured() {
				t.Fatal("Configured() = true")
			}
			if _, err := c.Complete(context.Background(), msgs); !errors.Is(err, ErrNotConfigured) {
				t.Fatalf("error = %v, want ErrNotConfigured", err)
			}
		})
	}
	if f.count() != 0 {
		t.Fatalf("an unconfigured client sent %d requests", f.count())
	}
}

func TestCompleteCallerCancellationStopsRetrying(t *testing.T) {
	f, srv := newFakeProvider(t, "", "m",
		step{status: 503, header: map[string]string{"Retry-After": "5"}},
		step{content: "too late"})
	ctx, cancel := context.WithCancel(context.Background())
	c := New(Config{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: 3},
		WithSleep(func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }))
	_, err := c.Complete(ctx, msgs)
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Attempts != 1 || ue.StatusCode != 503 {
		t.Fatalf("error = %v, want an UpstreamError with status 503 after 1 attempt", err)
	}
	if f.count() != 1 {
		t.Fatalf("server saw %d requests after cancellation, want 1", f.count())
	}
}

// A retrying call made within a request's budget stops at the request's deadline: no attempt
// starts once too little time is left, none runs past it, and the error says why.
func TestCompleteRetriesStopAtRequestDeadline(t *testing.T) {
	var (
		mu     sync.Mutex
		starts []time.Time
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		// A slow, overloaded server: each attempt takes 150 ms and asks to come back at once.
		select {
		case <-time.After(150 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	const budget = time.Second
	const minAttempt = 200 * time.Millisecond
	c := New(Config{BaseURL: srv.URL + "/v1", Model: "m", Timeout: 10 * time.Second, MaxRetries: 100},
		WithMinAttempt(minAttempt))
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	deadline, _ := ctx.Deadline()
	_, err := c.Complete(ctx, msgs)
	took := time.Since(start)

	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("error = %v, want the upstream's 503", err)
	}
	if took > budget+100*time.Millisecond {
		t.Fatalf("Complete returned after %v, past the %v budget", took, budget)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(starts) < 3 || ue.Attempts != len(starts) {
		t.Fatalf("%d attempts reached the server (error says %d); want at least 3 within the budget", len(starts), ue.Attempts)
	}
	for i, s := range starts {
		if left := deadline.Sub(s); left < minAttempt-20*time.Millisecond {
			t.Errorf("attempt %d started %v before the deadline, less than MinAttempt %v", i+1, left, minAttempt)
		}
	}
}
