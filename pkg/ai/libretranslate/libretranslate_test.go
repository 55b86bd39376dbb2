package libretranslate

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

	"supportplatform.dev/ai/mt"
)

// fakeServer imitates LibreTranslate's HTTP API: it validates requests the way the real server
// does, translates from a small dictionary, and can be told to fail the next calls.
type fakeServer struct {
	t      *testing.T
	apiKey string

	mu            sync.Mutex
	languageCalls int
	translateReqs []map[string]any
	failures      []failure // consumed by the next /translate or /languages calls, in order
	languagesDown bool
}

type failure struct {
	status int
	header map[string]string
	body   string
	block  bool
}

var fakeLanguages = []Language{
	{Code: "en", Name: "English", Targets: []string{"es", "fr", "pt", "zh-Hans"}},
	{Code: "es", Name: "Spanish", Targets: []string{"en", "fr"}},
	{Code: "fr", Name: "French", Targets: []string{"en", "es"}},
	{Code: "pt", Name: "Portuguese", Targets: []string{"en"}},
	{Code: "pt-BR", Name: "Portuguese (Brazil)", Targets: []string{"en"}},
	{Code: "zh-Hans", Name: "Chinese", Targets: []string{"en"}},
}

var fakeDict = map[string]map[string]string{
	"es":      {"Hello": "Hola", "The house is big": "La casa es grande", "Good morning": "Buenos días"},
	"zh-Hans": {"Hello": "你好"},
}

func newFake(t *testing.T, apiKey string) (*fakeServer, *httptest.Server) {
	f := &fakeServer{t: t, apiKey: apiKey}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeServer) popFailure() (failure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failures) == 0 {
		return failure{}, false
	}
	fl := f.failures[0]
	f.failures = f.failures[1:]
	return fl, true
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/languages":
		f.mu.Lock()
		f.languageCalls++
		down := f.languagesDown
		f.mu.Unlock()
		if down {
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": "bad gateway"})
			return
		}
		writeJSON(w, http.StatusOK, fakeLanguages)
	case r.Method == http.MethodPost && r.URL.Path == "/translate":
		f.translate(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Not Found"})
	}
}

func (f *fakeServer) translate(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Invalid JSON format"})
		return
	}
	f.mu.Lock()
	f.translateReqs = append(f.translateReqs, req)
	f.mu.Unlock()
	if fl, ok := f.popFailure(); ok {
		if fl.block {
			<-r.Context().Done()
			return
		}
		for k, v := range fl.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fl.status)
		_, _ = w.Write([]byte(fl.body))
		return
	}
	if f.apiKey != "" && req["api_key"] != f.apiKey {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "Invalid API key"})
		return
	}
	for _, p := range []string{"q", "source", "target"} {
		if _, ok := req[p]; !ok {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Invalid request: missing " + p + " parameter"})
			return
		}
	}
	if req["format"] != "text" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "format must be text in this fake"})
		return
	}
	source, target := req["source"].(string), req["target"].(string)
	known := map[string]bool{"auto": true}
	for _, l := range fakeLanguages {
		known[l.Code] = true
	}
	for _, c := range []string{source, target} {
		if !known[c] {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": c + " is not supported"})
			return
		}
	}
	tr := func(s string) string {
		if out, ok := fakeDict[target][s]; ok {
			return out
		}
		return "[" + target + "]" + s
	}
	switch q := req["q"].(type) {
	case string:
		resp := map[string]any{"translatedText": tr(q)}
		if source == "auto" {
			resp["detectedLanguage"] = map[string]any{"confidence": 90, "language": "en"}
		}
		writeJSON(w, http.StatusOK, resp)
	case []any:
		if len(q) == 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Invalid request: missing q parameter"})
			return
		}
		out := make([]string, len(q))
		for i, s := range q {
			out[i] = tr(s.(string))
		}
		writeJSON(w, http.StatusOK, map[string]any{"translatedText": out})
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Invalid request: q must be text"})
	}
}

func (f *fakeServer) translateCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.translateReqs)
}

func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func TestTranslate(t *testing.T) {
	f, srv := newFake(t, "secret")
	c := New(Config{BaseURL: srv.URL + "/", APIKey: "secret"}, WithSleep(noSleep))
	ctx := context.Background()

	got, err := c.Translate(ctx, mt.Pair{Source: "en", Target: "es"}, []string{"Hello"})
	if err != nil || len(got) != 1 || got[0] != "Hola" {
		t.Fatalf("single Translate = %q, %v; want [Hola]", got, err)
	}
	req := f.translateReqs[0]
	if req["q"] != "Hello" || req["source"] != "en" || req["target"] != "es" || req["format"] != "text" || req["api_key"] != "secret" {
		t.Fatalf("server got %v", req)
	}

	got, err = c.Translate(ctx, mt.Pair{Source: "en", Target: "es"}, []string{"The house is big", "Good morning"})
	if err != nil || strings.Join(got, "|") != "La casa es grande|Buenos días" {
		t.Fatalf("batch Translate = %q, %v", got, err)
	}
	if _, isList := f.translateReqs[1]["q"].([]any); !isList {
		t.Fatalf("batch sent q = %#v, want an array", f.translateReqs[1]["q"])
	}

	got, err = c.Translate(ctx, mt.Pair{Source: "en", Target: "zh"}, []string{"Hello"})
	if err != nil || got[0] != "你好" || f.translateReqs[2]["target"] != "zh-Hans" {
		t.Fatalf("zh Translate = %q, %v, sent target %v", got, err, f.translateReqs[2]["target"])
	}

	got, err = c.Translate(ctx, mt.Pair{Source: "de", SourceUncertain: true, Target: "es"}, []string{"Hello"})
	if err != nil || got[0] != "Hola" || f.translateReqs[3]["source"] != "auto" {
		t.Fatalf("uncertain-source Translate = %q, %v, sent source %v", got, err, f.translateReqs[3]["source"])
	}
	f.mu.Lock()
	calls := f.languageCalls
	f.mu.Unlock()
	if calls != 1 {
		t.Fatalf("GET /languages called %d times, want 1 (cached)", calls)
	}
}

func TestSupports(t *testing.T) {
	_, srv := newFake(t, "")
	c := New(Config{BaseURL: srv.URL})
	tests := []struct {
		name string
		p    mt.Pair
		want bool
	}{
		{"listed pair", mt.Pair{Source: "en", Target: "es"}, true},
		{"listed pair by 639-3 normalised codes", mt.Pair{Source: "fr", Target: "es"}, true},
		{"target not reachable from source", mt.Pair{Source: "pt", Target: "es"}, false},
		{"script-tagged server code", mt.Pair{Source: "en", Target: "zh"}, true},
		{"unlisted target", mt.Pair{Source: "en", Target: "xh"}, false},
		{"unlisted source", mt.Pair{Source: "de", Target: "en"}, false},
		{"unknown source goes auto", mt.Pair{Target: "en"}, true},
		{"uncertain source goes auto", mt.Pair{Source: "de", SourceUncertain: true, Target: "fr"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Supports(context.Background(), tt.p)
			if err != nil || got != tt.want {
				t.Fatalf("Supports(%v) = %v, %v; want %v", tt.p, got, err, tt.want)
			}
		})
	}
	langs, err := c.Languages(context.Background())
	if err != nil || len(langs) != len(fakeLanguages) || langs[0].Code != "en" || langs[0].Name != "English" || len(langs[0].Targets) != 4 {
		t.Fatalf("Languages = %+v, %v", langs, err)
	}
}

func TestUnsupportedPairSendsNothing(t *testing.T) {
	f, srv := newFake(t, "")
	c := New(Config{BaseURL: srv.URL})
	_, err := c.Translate(context.Background(), mt.Pair{Source: "en", Target: "xh"}, []string{"Hello"})
	if !errors.Is(err, mt.ErrUnsupportedPair) {
		t.Fatalf("error = %v, want mt.ErrUnsupportedPair", err)
	}
	if f.translateCount() != 0 {
		t.Fatal("sent a /translate request for an unsupported pair")
	}
}

func TestTranslateRetriesAndFailures(t *testing.T) {
	tests := []struct {
		name      string
		key       string
		failures  []failure
		retries   int
		timeout   time.Duration
		wantText  string
		wantReqs  int
		wantWaits []time.Duration
		check     func(t *testing.T, err error)
	}{
		{
			name:      "429 with Retry-After then success",
			failures:  []failure{{status: 429, header: map[string]string{"Retry-After": "1.5"}, body: `{"error":"Slowdown: 30 per 1 minute"}`}},
			retries:   2,
			wantText:  "Hola",
			wantReqs:  2,
			wantWaits: []time.Duration{1500 * time.Millisecond},
		},
		{
			name:     "500 then success",
			failures: []failure{{status: 500, body: `{"error":"translation failed"}`}},
			retries:  2,
			wantText: "Hola",
			wantReqs: 2,
		},
		{
			name:     "persistent 500",
			failures: []failure{{status: 500, body: `{"error":"translation failed"}`}, {status: 500, body: `{"error":"translation failed"}`}, {status: 500, body: `{"error":"translation failed"}`}},
			retries:  2,
			wantReqs: 3,
			check:    apiError(500, "translation failed", 3),
		},
		{
			name:     "bad API key is not retried",
			key:      "wrong",
			retries:  2,
			wantReqs: 1,
			check:    apiError(403, "Invalid API key", 1),
		},
		{
			name:     "400 error message is kept",
			failures: []failure{{status: 400, body: `{"error":"es is not supported"}`}},
			retries:  2,
			wantReqs: 1,
			check:    apiError(400, "es is not supported", 1),
		},
		{
			name:     "timeout",
			failures: []failure{{block: true}, {block: true}},
			retries:  1,
			timeout:  50 * time.Millisecond,
			wantReqs: 2,
			check: func(t *testing.T, err error) {
				apiError(0, "", 2)(t, err)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("error %v does not wrap context.DeadlineExceeded", err)
				}
			},
		},
		{
			name:     "malformed JSON",
			failures: []failure{{status: 200, body: `{"translatedText": "Hol`}},
			retries:  2,
			wantReqs: 1,
			check:    malformed("invalid JSON"),
		},
		{
			name:     "reply without translatedText",
			failures: []failure{{status: 200, body: `{"detectedLanguage":{"language":"en"}}`}},
			retries:  2,
			wantReqs: 1,
			check:    malformed("no translatedText"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, "secret")
			f.failures = tt.failures
			key := tt.key
			if key == "" {
				key = "secret"
			}
			var waits []time.Duration
			c := New(Config{BaseURL: srv.URL, APIKey: key, MaxRetries: tt.retries, Timeout: tt.timeout},
				WithSleep(func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() }))
			got, err := c.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"Hello"})
			if tt.check == nil {
				if err != nil || len(got) != 1 || got[0] != tt.wantText {
					t.Fatalf("Translate = %q, %v; want %q", got, err, tt.wantText)
				}
			} else {
				if err == nil {
					t.Fatalf("Translate = %q, want an error", got)
				}
				tt.check(t, err)
			}
			if f.translateCount() != tt.wantReqs {
				t.Fatalf("server saw %d /translate requests, want %d", f.translateCount(), tt.wantReqs)
			}
			if tt.wantWaits != nil && (len(waits) != len(tt.wantWaits) || waits[0] != tt.wantWaits[0]) {
				t.Fatalf("waits = %v, want %v", waits, tt.wantWaits)
			}
		})
	}
}

func apiError(status int, msg string, attempts int) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var ae *APIError
		if !errors.As(err, &ae) {
			t.Fatalf("error %T %v is not *APIError", err, err)
		}
		if ae.StatusCode != status || ae.Message != msg || ae.Attempts != attempts {
			t.Fatalf("APIError{%d, %q, %d}, want {%d, %q, %d}", ae.StatusCode, ae.Message, ae.Attempts, status, msg, attempts)
		}
	}
}

func malformed(reason string) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var me *MalformedReplyError
		if !errors.As(err, &me) || !strings.Contains(me.Error(), reason) {
			t.Fatalf("error %T %v is not a *MalformedReplyError about %q", err, err, reason)
		}
	}
}

func TestBatchCountMismatchIsMalformed(t *testing.T) {
	f, srv := newFake(t, "")
	f.failures = []failure{{status: 200, body: `{"translatedText":["Hola"]}`}}
	c := New(Config{BaseURL: srv.URL})
	_, err := c.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"Hello", "Good morning"})
	malformed("sent 2 texts, got 1")(t, err)
}

func TestLanguagesCacheAndStaleOnError(t *testing.T) {
	f, srv := newFake(t, "")
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(Config{BaseURL: srv.URL, LanguagesTTL: time.Minute}, WithClock(func() time.Time { return now }), WithSleep(noSleep))
	ctx := context.Background()
	if ok, err := c.Supports(ctx, mt.Pair{Source: "en", Target: "es"}); !ok || err != nil {
		t.Fatalf("Supports = %v, %v", ok, err)
	}
	now = now.Add(30 * time.Second)
	_, _ = c.Supports(ctx, mt.Pair{Source: "en", Target: "fr"})
	if f.languageCalls != 1 {
		t.Fatalf("languages fetched %d times within the TTL, want 1", f.languageCalls)
	}
	now = now.Add(time.Minute)
	f.mu.Lock()
	f.languagesDown = true
	f.mu.Unlock()
	if ok, err := c.Supports(ctx, mt.Pair{Source: "en", Target: "es"}); !ok || err != nil {
		t.Fatalf("Supports with the server's list unavailable = %v, %v; want the stale list", ok, err)
	}
	if f.languageCalls != 2 {
		t.Fatalf("languages fetched %d times after the TTL, want 2", f.languageCalls)
	}

	// A client that never got a list reports the failure instead of guessing.
	fresh := New(Config{BaseURL: srv.URL}, WithSleep(noSleep))
	_, err := fresh.Supports(ctx, mt.Pair{Source: "en", Target: "es"})
	apiError(502, "bad gateway", 1)(t, err)
}

func TestNotConfigured(t *testing.T) {
	c := New(Config{})
	if ok, err := c.Supports(context.Background(), mt.Pair{Source: "en", Target: "es"}); ok || err != nil {
		t.Fatalf("Supports = %v, %v; want false, nil", ok, err)
	}
	if _, err := c.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"x"}); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("Translate error = %v, want ErrNotConfigured", err)
	}
	if _, err := c.Languages(context.Background()); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("Languages error = %v, want ErrNotConfigured", err)
	}
}
