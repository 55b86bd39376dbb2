package openai

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// embedStep is one scripted answer of the fake embeddings endpoint. With no body, the reply holds
// vectors for the inputs (see fakeVector), in reverse order with explicit indexes.
type embedStep struct {
	status int
	header map[string]string
	body   string
	block  bool
}

// fakeEmbeddings speaks POST /v1/embeddings and checks requests as a real server would.
type fakeEmbeddings struct {
	t *testing.T

	mu       sync.Mutex
	steps    []embedStep
	requests []embeddingsRequest
	auths    []string
}

func newFakeEmbeddings(t *testing.T, steps ...embedStep) (*fakeEmbeddings, *httptest.Server) {
	f := &fakeEmbeddings{t: t, steps: steps}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

// fakeVector is the embedding the fake gives a text: its length and its first byte.
func fakeVector(s string) []float64 {
	first := 0.0
	if s != "" {
		first = float64(s[0])
	}
	return []float64{float64(len(s)), first}
}

func (f *fakeEmbeddings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var req embeddingsRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Model == "" || len(req.Input) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	if len(f.steps) == 0 {
		f.mu.Unlock()
		f.t.Errorf("unexpected extra embeddings request")
		http.Error(w, `{"error":{"message":"no more steps"}}`, http.StatusInternalServerError)
		return
	}
	s := f.steps[0]
	f.steps = f.steps[1:]
	f.mu.Unlock()

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
		data := make([]any, 0, len(req.Input))
		for i := len(req.Input) - 1; i >= 0; i-- {
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": fakeVector(req.Input[i])})
		}
		b, _ := json.Marshal(map[string]any{"object": "list", "data": data, "model": req.Model,
			"usage": map[string]int{"prompt_tokens": 3, "total_tokens": 3}})
		body = string(b)
	}
	_, _ = w.Write([]byte(body))
}

func (f *fakeEmbeddings) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func TestEmbed(t *testing.T) {
	f, srv := newFakeEmbeddings(t, embedStep{})
	c := New(Config{BaseURL: srv.URL + "/v1", APIKey: "sk-e", Model: "chat-model"})
	inputs := []string{"alpha", "be", "gamma ray"}
	got, err := c.Embed(context.Background(), "embed-model", inputs)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(got) != len(inputs) {
		t.Fatalf("Embed returned %d vectors, want %d", len(got), len(inputs))
	}
	for i, in := range inputs {
		want := fakeVector(in)
		if got[i][0] != want[0] || got[i][1] != want[1] {
			t.Errorf("vector %d = %v, want %v (the vector of %q)", i, got[i], want, in)
		}
	}
	req := f.requests[0]
	if req.Model != "embed-model" || req.EncodingFormat != "float" || len(req.Input) != 3 || req.Input[2] != "gamma ray" {
		t.Errorf("server got %+v", req)
	}
	if f.auths[0] != "Bearer sk-e" {
		t.Errorf("Authorization = %q", f.auths[0])
	}
}

func TestEmbedBase64Vectors(t *testing.T) {
	vec := []float32{0.5, -1.25, 3}
	b := make([]byte, 4*len(vec))
	for i, x := range vec {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	body := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"` + base64.StdEncoding.EncodeToString(b) + `"}]}`
	_, srv := newFakeEmbeddings(t, embedStep{body: body})
	got, err := New(Config{BaseURL: srv.URL + "/v1"}).Embed(context.Background(), "e", []string{"x"})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(got) != 1 || len(got[0]) != 3 || got[0][0] != 0.5 || got[0][1] != -1.25 || got[0][2] != 3 {
		t.Fatalf("Embed = %v, want [[0.5 -1.25 3]]", got)
	}
}

func TestEmbedRetries(t *testing.T) {
	tests := []struct {
		name      string
		steps     []embedStep
		wantWaits []time.Duration
	}{
		{
			name: "429 with Retry-After then success",
			steps: []embedStep{
				{status: 429, header: map[string]string{"Retry-After": "2"}, body: `{"error":{"message":"rate limited"}}`},
				{},
			},
			wantWaits: []time.Duration{2 * time.Second},
		},
		{
			name: "503 with retry-after-ms then success",
			steps: []embedStep{
				{status: 503, header: map[string]string{"Retry-After-Ms": "150"}},
				{},
			},
			wantWaits: []time.Duration{150 * time.Millisecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFakeEmbeddings(t, tt.steps...)
			rec := &sleepRecorder{}
			c := New(Config{BaseURL: srv.URL + "/v1", MaxRetries: 2}, WithSleep(rec.sleep))
			got, err := c.Embed(context.Background(), "e", []string{"hello"})
			if err != nil || len(got) != 1 || got[0][0] != 5 {
				t.Fatalf("Embed = %v, %v; want the vector of hello", got, err)
			}
			if f.count() != len(tt.steps) {
				t.Fatalf("server saw %d requests, want %d", f.count(), len(tt.steps))
			}
			exactWaits(tt.wantWaits...)(t, rec.waits)
		})
	}
}

func TestEmbedFailures(t *testing.T) {
	tests := []struct {
		name         string
		cfg          Config
		steps        []embedStep
		wantRequests int
		check        func(t *testing.T, err error)
	}{
		{
			name:         "persistent 500",
			cfg:          Config{MaxRetries: 1},
			steps:        []embedStep{{status: 500, body: `{"error":{"message":"down"}}`}, {status: 500, body: `{"error":{"message":"down"}}`}},
			wantRequests: 2,
			check:        upstream(500, "down", 2),
		},
		{
			name:         "400 is not retried",
			cfg:          Config{MaxRetries: 2},
			steps:        []embedStep{{status: 400, body: `{"error":{"message":"input too long"}}`}},
			wantRequests: 1,
			check:        upstream(400, "input too long", 1),
		},
		{
			name:         "timeout on every attempt",
			cfg:          Config{MaxRetries: 1, Timeout: 50 * time.Millisecond},
			steps:        []embedStep{{block: true}, {block: true}},
			wantRequests: 2,
			check: func(t *testing.T, err error) {
				upstream(0, "", 2)(t, err)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("error %v does not wrap context.DeadlineExceeded", err)
				}
			},
		},
		{
			name:         "fewer vectors than inputs",
			cfg:          Config{MaxRetries: 2},
			steps:        []embedStep{{body: `{"data":[{"index":0,"embedding":[1,2]}]}`}},
			wantRequests: 1,
			check:        malformed("1 embeddings for 2 inputs"),
		},
		{
			name:         "repeated index",
			cfg:          Config{MaxRetries: 2},
			steps:        []embedStep{{body: `{"data":[{"index":1,"embedding":[1,2]},{"index":1,"embedding":[3,4]}]}`}},
			wantRequests: 1,
			check:        malformed("out of range or repeated"),
		},
		{
			name:         "dimensions differ",
			cfg:          Config{MaxRetries: 2},
			steps:        []embedStep{{body: `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3]}]}`}},
			wantRequests: 1,
			check:        malformed("has 1 dimensions, want 2"),
		},
		{
			name:         "null embedding",
			cfg:          Config{MaxRetries: 2},
			steps:        []embedStep{{body: `{"data":[{"index":0,"embedding":null},{"index":1,"embedding":null}]}`}},
			wantRequests: 1,
			check:        malformed("has 0 dimensions"),
		},
		{
			name:         "not JSON",
			cfg:          Config{MaxRetries: 2},
			steps:        []embedStep{{body: `<html>`}},
			wantRequests: 1,
			check:        malformed("invalid JSON"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFakeEmbeddings(t, tt.steps...)
			cfg := tt.cfg
			cfg.BaseURL = srv.URL + "/v1"
			c := New(cfg, WithSleep((&sleepRecorder{}).sleep), WithBackoff(time.Millisecond, 10*time.Millisecond, time.Second))
			got, err := c.Embed(context.Background(), "e", []string{"one", "two"})
			if err == nil {
				t.Fatalf("Embed = %v, want an error", got)
			}
			tt.check(t, err)
			if f.count() != tt.wantRequests {
				t.Fatalf("server saw %d requests, want %d", f.count(), tt.wantRequests)
			}
		})
	}
}

func TestEmbedNotConfiguredAndEmpty(t *testing.T) {
	f, srv := newFakeEmbeddings(t)
	for name, tc := range map[string]struct {
		cfg   Config
		model string
	}{
		"no base URL": {Config{Model: "chat"}, "e"},
		"no model":    {Config{BaseURL: srv.URL + "/v1", Model: "chat"}, " "},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(tc.cfg).Embed(context.Background(), tc.model, []string{"x"}); !errors.Is(err, ErrNotConfigured) {
				t.Fatalf("error = %v, want ErrNotConfigured", err)
			}
		})
	}
	got, err := New(Config{BaseURL: srv.URL + "/v1"}).Embed(context.Background(), "e", nil)
	if err != nil || got != nil {
		t.Fatalf("Embed(no inputs) = %v, %v; want nil, nil", got, err)
	}
	if f.count() != 0 {
		t.Fatalf("server saw %d requests, want none", f.count())
	}
}
