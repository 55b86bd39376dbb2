package translate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"

	"supportplatform.dev/ai/mt"
)

// fakeEngine is an engine whose pairs and behaviour a test sets. By default it "translates" by
// tagging each text with its name and target, so tests can see who translated what.
type fakeEngine struct {
	name       string
	pairs      map[string]bool // "en->es"; "*" serves everything
	supportErr error
	fail       error
	reply      func(text string) string

	mu       sync.Mutex
	calls    []fakeCall
	supports int
}

type fakeCall struct {
	pair  mt.Pair
	texts []string
}

func (f *fakeEngine) Name() string { return f.name }

func (f *fakeEngine) supportCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.supports
}

func (f *fakeEngine) Supports(_ context.Context, p mt.Pair) (bool, error) {
	f.mu.Lock()
	f.supports++
	f.mu.Unlock()
	if f.supportErr != nil {
		return false, f.supportErr
	}
	return f.pairs["*"] || f.pairs[p.Source+"->"+p.Target], nil
}

func (f *fakeEngine) Translate(ctx context.Context, p mt.Pair, texts []string) ([]string, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{pair: p, texts: append([]string(nil), texts...)})
	f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.fail != nil {
		return nil, f.fail
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		if f.reply != nil {
			out[i] = f.reply(t)
		} else {
			out[i] = fmt.Sprintf("[%s:%s]%s", f.name, p.Target, t)
		}
	}
	return out, nil
}

func (f *fakeEngine) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func serves(pairs ...string) map[string]bool {
	m := map[string]bool{}
	for _, p := range pairs {
		m[p] = true
	}
	return m
}

// memCache is an in-memory Cache recording what it was asked.
type memCache struct {
	mu      sync.Mutex
	data    map[string]string
	ttls    map[string]time.Duration
	gets    int
	failGet error
	failSet error
}

func newMemCache() *memCache {
	return &memCache{data: map[string]string{}, ttls: map[string]time.Duration{}}
}

func (m *memCache) Get(_ context.Context, key string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.failGet != nil {
		return "", false, m.failGet
	}
	v, ok := m.data[key]
	return v, ok, nil
}

func (m *memCache) Set(_ context.Context, key, val string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failSet != nil {
		return m.failSet
	}
	m.data[key] = val
	m.ttls[key] = ttl
	return nil
}

// customer is the tenant the tests translate for.
const customer = int64(42)

const english = "My order has not arrived yet, can you help me?"

func TestValidation(t *testing.T) {
	svc := New(Config{Providers: []mt.Translator{&fakeEngine{name: "x", pairs: serves("*")}}})
	long := strings.Repeat("a", MaxSourceChars+1)
	tests := []struct {
		name   string
		text   string
		target string
		fields map[string]string // field -> part of its message
	}{
		{"missing text", "", "es", map[string]string{"sourceText": "required"}},
		{"blank text", " \n\t ", "es", map[string]string{"sourceText": "blank"}},
		{"text too long", long, "es", map[string]string{"sourceText": "at most 10000"}},
		{"invalid UTF-8", "abc\xff", "es", map[string]string{"sourceText": "UTF-8"}},
		{"missing target", english, "", map[string]string{"targetLang": "required"}},
		{"unknown target", english, "xx", map[string]string{"targetLang": `"xx"`}},
		{"private-use target", english, "qqq", map[string]string{"targetLang": "ISO 639"}},
		{"four letters", english, "abcd", map[string]string{"targetLang": "ISO 639"}},
		{"full locale is not a code", english, "en-US", map[string]string{"targetLang": "ISO 639"}},
		{"both fields", "", "e1", map[string]string{"sourceText": "required", "targetLang": "ISO 639"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, call := range []func(context.Context, Request) (string, error){svc.Translate, svc.TranslateToHTML} {
				_, err := call(context.Background(), Request{CustomerID: customer, SourceText: tt.text, TargetLang: tt.target})
				var de *apperr.Error
				if !errors.As(err, &de) || !apperr.Is(err, apperr.Invalid) {
					t.Fatalf("error = %v, want invalid", err)
				}
				if len(de.Fields) != len(tt.fields) {
					t.Fatalf("fields = %+v, want %v", de.Fields, tt.fields)
				}
				for field, msg := range de.Fields {
					if want, ok := tt.fields[field]; !ok || !strings.Contains(msg, want) {
						t.Errorf("field %s: %q, want it to mention %q", field, msg, want)
					}
				}
			}
		})
	}
}

func TestMaxLengthCountsCharactersNotBytes(t *testing.T) {
	e := &fakeEngine{name: "x", pairs: serves("*")}
	svc := New(Config{Providers: []mt.Translator{e}})
	text := strings.Repeat("é", MaxSourceChars) // 20,000 bytes
	if _, err := svc.Translate(context.Background(), Request{CustomerID: customer, SourceText: text, TargetLang: "de"}); err != nil {
		t.Fatalf("a text of exactly %d characters was refused: %v", MaxSourceChars, err)
	}
}

func TestSameLanguageIsReturnedUnchanged(t *testing.T) {
	e := &fakeEngine{name: "x", pairs: serves("*")}
	svc := New(Config{Providers: []mt.Translator{e}})
	for _, target := range []string{"en", "eng", "EN"} {
		got, err := svc.Translate(context.Background(), Request{CustomerID: customer, SourceText: english, TargetLang: target})
		if err != nil || got != english {
			t.Fatalf("Translate to %s = %q, %v; want the text unchanged", target, got, err)
		}
	}
	for _, text := range []string{"12345", "!!!", "😀 👍"} {
		got, err := svc.Translate(context.Background(), Request{CustomerID: customer, SourceText: text, TargetLang: "es"})
		if err != nil || got != text {
			t.Fatalf("Translate(%q) = %q, %v; want it unchanged", text, got, err)
		}
	}
	if e.callCount() != 0 {
		t.Fatalf("engine called %d times, want 0", e.callCount())
	}
}

func TestChain(t *testing.T) {
	upstream := errors.New("503 from upstream")
	tests := []struct {
		name      string
		engines   []*fakeEngine
		target    string
		want      string
		wantKind  string
		wantMsg   string
		wantCalls []int
	}{
		{
			name: "first serving provider wins",
			engines: []*fakeEngine{
				{name: "apertium", pairs: serves("en->es")},
				{name: "openai", pairs: serves("*")},
			},
			target: "es", want: "[apertium:es]" + english, wantCalls: []int{1, 0},
		},
		{
			name: "provider that does not serve the pair is skipped",
			engines: []*fakeEngine{
				{name: "apertium", pairs: serves("en->ca")},
				{name: "libretranslate", pairs: serves("en->es")},
				{name: "openai", pairs: serves("*")},
			},
			target: "es", want: "[libretranslate:es]" + english, wantCalls: []int{0, 1, 0},
		},
		{
			name: "upstream failure falls through to the next serving provider",
			engines: []*fakeEngine{
				{name: "libretranslate", pairs: serves("en->es"), fail: upstream},
				{name: "apertium", pairs: serves("en->ca")},
				{name: "openai", pairs: serves("*")},
			},
			target: "es", want: "[openai:es]" + english, wantCalls: []int{1, 0, 1},
		},
		{
			name: "engine reporting the pair unsupported at translate time falls through",
			engines: []*fakeEngine{
				{name: "a", pairs: serves("en->es"), fail: fmt.Errorf("a: %w", mt.ErrUnsupportedPair)},
				{name: "b", pairs: serves("en->es")},
			},
			target: "es", want: "[b:es]" + english, wantCalls: []int{1, 1},
		},
		{
			name: "empty output counts as a failure",
			engines: []*fakeEngine{
				{name: "a", pairs: serves("en->es"), reply: func(string) string { return "  " }},
				{name: "b", pairs: serves("en->es")},
			},
			target: "es", want: "[b:es]" + english, wantCalls: []int{1, 1},
		},
		{
			name: "every provider fails",
			engines: []*fakeEngine{
				{name: "a", pairs: serves("en->es"), fail: upstream},
				{name: "b", pairs: serves("*"), fail: upstream},
			},
			target: "es", wantKind: kindUpstream, wantMsg: "every translation provider for en->es failed", wantCalls: []int{1, 1},
		},
		{
			name: "nobody serves the pair",
			engines: []*fakeEngine{
				{name: "apertium", pairs: serves("en->es")},
				{name: "libretranslate", pairs: serves("en->fr")},
			},
			target: "xho", wantKind: kindUnsupported, wantMsg: "no translation provider serves en->xh", wantCalls: []int{0, 0},
		},
		{
			name: "nobody could be asked",
			engines: []*fakeEngine{
				{name: "apertium", pairs: serves("en->fr")},
				{name: "libretranslate", supportErr: errors.New("connection refused")},
			},
			target: "es", wantKind: kindUpstream, wantMsg: "unavailable", wantCalls: []int{0, 0},
		},
		{
			name: "a provider that cannot tell does not stop the others",
			engines: []*fakeEngine{
				{name: "libretranslate", supportErr: errors.New("connection refused")},
				{name: "openai", pairs: serves("*")},
			},
			target: "es", want: "[openai:es]" + english, wantCalls: []int{0, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var providers []mt.Translator
			for _, e := range tt.engines {
				providers = append(providers, e)
			}
			svc := New(Config{Providers: providers})
			got, err := svc.Translate(context.Background(), Request{CustomerID: customer, SourceText: english, TargetLang: tt.target})
			if tt.wantKind != "" {
				var de *apperr.Error
				if !errors.As(err, &de) || errorKind(err) != tt.wantKind || !strings.Contains(de.Message, tt.wantMsg) {
					t.Fatalf("error = %v, want %s mentioning %q", err, tt.wantKind, tt.wantMsg)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("Translate = %q, %v; want %q", got, err, tt.want)
			}
			for i, e := range tt.engines {
				if e.callCount() != tt.wantCalls[i] {
					t.Errorf("engine %s called %d times, want %d", e.name, e.callCount(), tt.wantCalls[i])
				}
			}
		})
	}
}

func TestUpstreamErrorKeepsCauseForLogs(t *testing.T) {
	cause := errors.New("secret upstream detail")
	svc := New(Config{Providers: []mt.Translator{&fakeEngine{name: "a", pairs: serves("*"), fail: cause}}})
	_, err := svc.Translate(context.Background(), Request{CustomerID: customer, SourceText: english, TargetLang: "es"})
	var de *apperr.Error
	if !errors.As(err, &de) || !errors.Is(err, cause) || strings.Contains(de.Message, "secret") {
		t.Fatalf("error = %v: want the cause wrapped but not in the client message %q", err, de.Message)
	}
	if errorKind(err) != kindUpstream {
		t.Fatalf("error kind = %v", errorKind(err))
	}
}

func TestCancelledRequestStopsTheChain(t *testing.T) {
	a := &fakeEngine{name: "a", pairs: serves("*")}
	b := &fakeEngine{name: "b", pairs: serves("*")}
	svc := New(Config{Providers: []mt.Translator{a, b}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: english, TargetLang: "es"})
	if !errors.Is(err, context.Canceled) || errorKind(err) != kindUpstream {
		t.Fatalf("error = %v, want upstream wrapping context.Canceled", err)
	}
	if b.callCount() != 0 {
		t.Fatal("the chain went on after the request was cancelled")
	}
}

func TestPlainTextIsSentAsIs(t *testing.T) {
	e := &fakeEngine{name: "x", pairs: serves("*"), reply: func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "Hello", "Hola"), "world", "mundo")
	}}
	svc := New(Config{Providers: []mt.Translator{e}})
	in := "  <b>Hello</b> world & <script>x</script>\n"
	got, err := svc.Translate(context.Background(), Request{CustomerID: customer, SourceText: in, TargetLang: "es"})
	if err != nil {
		t.Fatal(err)
	}
	if sent := e.calls[0].texts[0]; sent != "<b>Hello</b> world & <script>x</script>" {
		t.Fatalf("engine received %q, want the markup untouched and only outer space trimmed", sent)
	}
	if got != "  <b>Hola</b> mundo & <script>x</script>\n" {
		t.Fatalf("Translate = %q, want markup characters as the engine returned them and outer space kept", got)
	}
}

func TestSourceDetection(t *testing.T) {
	e := &fakeEngine{name: "x", pairs: serves("*")}
	svc := New(Config{Providers: []mt.Translator{e}})
	ctx := context.Background()
	if _, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: "Mi pedido aún no ha llegado, ¿me pueden ayudar?", TargetLang: "en"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: "Hello", TargetLang: "de"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: "Բարեւ, իմ պատվերը դեռ չի հասել", TargetLang: "en"}); err != nil {
		t.Fatal(err)
	}
	want := []mt.Pair{
		{Source: "es", Target: "en"},
		{Source: "en", Target: "de", SourceUncertain: true},
		{Source: "", Target: "en", SourceUncertain: true},
	}
	for i, w := range want {
		if e.calls[i].pair != w {
			t.Errorf("call %d pair = %+v, want %+v", i, e.calls[i].pair, w)
		}
	}
}

func TestCache(t *testing.T) {
	ctx := context.Background()
	t.Run("hit skips the engines", func(t *testing.T) {
		e := &fakeEngine{name: "apertium", pairs: serves("en->es")}
		c := newMemCache()
		svc := New(Config{Providers: []mt.Translator{e}, Cache: c, CacheTTL: time.Hour})
		first, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: english, TargetLang: "es"})
		if err != nil {
			t.Fatal(err)
		}
		second, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: english, TargetLang: "spa"})
		if err != nil || second != first {
			t.Fatalf("second Translate = %q, %v; want the cached %q", second, err, first)
		}
		if e.callCount() != 1 {
			t.Fatalf("engine called %d times, want 1", e.callCount())
		}
		key := CacheKey(customer, english, "", "es", ModePlain)
		if c.data[key] != first || c.ttls[key] != time.Hour {
			t.Fatalf("cache holds %q with TTL %v under the documented key", c.data[key], c.ttls[key])
		}
	})
	t.Run("plain and HTML results are cached apart", func(t *testing.T) {
		e := &fakeEngine{name: "x", pairs: serves("*")}
		svc := New(Config{Providers: []mt.Translator{e}, Cache: newMemCache()})
		plain, _ := svc.Translate(ctx, Request{CustomerID: customer, SourceText: english, TargetLang: "es"})
		html, err := svc.TranslateToHTML(ctx, Request{CustomerID: customer, SourceText: english, TargetLang: "es"})
		if err != nil || html == plain || !strings.HasPrefix(html, "<p>") {
			t.Fatalf("TranslateToHTML = %q, %v; want HTML, not the cached plain text %q", html, err, plain)
		}
	})
	t.Run("a cached answer is served before detection and provider choice", func(t *testing.T) {
		a := &fakeEngine{name: "a", pairs: serves("*")}
		c := newMemCache()
		c.data[CacheKey(customer, english, "", "es", ModePlain)] = "cached answer"
		svc := New(Config{Providers: []mt.Translator{a}, Cache: c})
		got, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: english, TargetLang: "spa"})
		if err != nil || got != "cached answer" || a.callCount() != 0 || a.supportCalls() != 0 {
			t.Fatalf("Translate = %q, %v with %d engine calls; want the cached value and no engine work", got, err, a.callCount())
		}
	})
	t.Run("customers do not share entries", func(t *testing.T) {
		// Otherwise a fast answer would tell one tenant that another translated the text.
		e := &fakeEngine{name: "x", pairs: serves("*")}
		c := newMemCache()
		svc := New(Config{Providers: []mt.Translator{e}, Cache: c})
		for _, call := range []func(context.Context, Request) (string, error){svc.Translate, svc.TranslateToHTML} {
			before := e.callCount()
			if _, err := call(ctx, Request{CustomerID: 1, SourceText: english, TargetLang: "es"}); err != nil {
				t.Fatal(err)
			}
			if _, err := call(ctx, Request{CustomerID: 2, SourceText: english, TargetLang: "es"}); err != nil {
				t.Fatal(err)
			}
			if n := e.callCount() - before; n != 2 {
				t.Fatalf("engine ran %d times for two customers, want 2: the second was served the first's entry", n)
			}
			if _, err := call(ctx, Request{CustomerID: 2, SourceText: english, TargetLang: "es"}); err != nil || e.callCount()-before != 2 {
				t.Fatalf("customer 2's repeat was not served from its own entry (%d engine calls, %v)", e.callCount()-before, err)
			}
		}
		if len(c.data) != 4 {
			t.Fatalf("cache holds %d entries, want 4 (2 customers x plain/HTML)", len(c.data))
		}
	})
	t.Run("broken cache does not fail translation", func(t *testing.T) {
		e := &fakeEngine{name: "x", pairs: serves("*")}
		c := newMemCache()
		c.failGet, c.failSet = errors.New("redis down"), errors.New("redis down")
		svc := New(Config{Providers: []mt.Translator{e}, Cache: c})
		if got, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: english, TargetLang: "es"}); err != nil || got == "" {
			t.Fatalf("Translate = %q, %v", got, err)
		}
	})
}

func TestCacheKey(t *testing.T) {
	base := CacheKey(customer, "text", "", "es", ModePlain)
	if len(base) != 64 {
		t.Fatalf("key %q is not a hex SHA-256", base)
	}
	for name, other := range map[string]string{
		"text":     CacheKey(customer, "text2", "", "es", ModePlain),
		"target":   CacheKey(customer, "text", "", "ca", ModePlain),
		"mode":     CacheKey(customer, "text", "", "es", ModeHTML),
		"boundary": CacheKey(customer, "tex", "", "tes", ModePlain),
		"customer": CacheKey(customer+1, "text", "", "es", ModePlain),
		"source":   CacheKey(customer, "text", "en", "es", ModePlain),
	} {
		if other == base {
			t.Errorf("changing the %s does not change the key", name)
		}
	}
	if CacheKey(customer, "text", "", "es", ModePlain) != base {
		t.Error("the key is not deterministic")
	}
}

func TestOrderProviders(t *testing.T) {
	ap := &fakeEngine{name: "apertium"}
	lt := &fakeEngine{name: "libretranslate"}
	oa := &fakeEngine{name: "openai"}
	got, err := OrderProviders(" OpenAI , apertium,libretranslate ", ap, lt, oa)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != oa || got[1] != ap || got[2] != lt {
		t.Fatalf("order = %v", got)
	}
	if got, err := OrderProviders("apertium", ap, lt, oa); err != nil || len(got) != 1 {
		t.Fatalf("subset = %v, %v", got, err)
	}
	for _, bad := range []string{"", " , ", "apertium,libretranslte", "apertium,apertium"} {
		if _, err := OrderProviders(bad, ap, lt, oa); err == nil {
			t.Errorf("OrderProviders(%q) accepted", bad)
		}
	}
}

// The three ways a translation fails, as the HTTP layer tells them apart.
const (
	kindInvalid     = "invalid"     // 400 naming the field
	kindUnsupported = "unsupported" // 400 naming the pair
	kindUpstream    = "upstream"    // 500, no detail leaked
)

func errorKind(err error) string {
	switch {
	case apperr.Is(err, apperr.Invalid) && errors.Is(err, mt.ErrUnsupportedPair):
		return kindUnsupported
	case apperr.Is(err, apperr.Invalid):
		return kindInvalid
	case apperr.Is(err, apperr.Internal), apperr.Is(err, apperr.Unavailable):
		return kindUpstream
	}
	return "none"
}
