package translate_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/pkg/redistest"

	"supportplatform.dev/pkg/apperr"

	"supportplatform.dev/ai/apertium"
	"supportplatform.dev/ai/llmtranslate"
	"supportplatform.dev/ai/mt"
	"supportplatform.dev/ai/openai"
	"supportplatform.dev/ai/openai/openaifake"
	"supportplatform.dev/services/translation/internal/translate"
	"supportplatform.dev/services/translation/internal/translate/rediscache"
)

// customer is the tenant the tests translate for.
const customer = int64(42)

// These tests wire the service to the real engines: Apertium as installed from Debian, and the
// LLM engine through the real OpenAI client against a local server speaking the same API.

func realApertium(t *testing.T) *apertium.Engine {
	t.Helper()
	e := apertium.New(apertium.Config{Timeout: 30 * time.Second})
	if ok, err := e.Supports(context.Background(), mt.Pair{Source: "en", Target: "es"}); !ok || err != nil {
		t.Fatalf("apertium eng-spa is not installed (apt-get install -y apertium apertium-eng-spa): %v, %v", ok, err)
	}
	return e
}

// countingEngine counts the calls that reach the wrapped engine.
type countingEngine struct {
	mt.Translator
	calls atomic.Int32
}

func (c *countingEngine) Translate(ctx context.Context, p mt.Pair, texts []string) ([]string, error) {
	c.calls.Add(1)
	return c.Translator.Translate(ctx, p, texts)
}

func TestApertiumEndToEnd(t *testing.T) {
	svc := translate.New(translate.Config{Providers: []mt.Translator{realApertium(t)}})
	ctx := context.Background()

	for _, target := range []string{"es", "spa"} {
		got, err := svc.Translate(ctx, translate.Request{CustomerID: customer, SourceText: "The house is big", TargetLang: target})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, "casa") || !strings.Contains(got, "grande") {
			t.Fatalf("Translate to %s = %q, want Spanish", target, got)
		}
	}

	got, err := svc.Translate(ctx, translate.Request{CustomerID: customer, SourceText: "Hello", TargetLang: "es"})
	if err != nil || !strings.Contains(got, "Hola") {
		t.Fatalf("Translate(Hello) = %q, %v", got, err)
	}

	html, err := svc.TranslateToHTML(ctx, translate.Request{CustomerID: customer, SourceText: `<p onclick="x()">Hello <b>friend</b></p><script>alert(1)</script><p>The house is big.</p>`, TargetLang: "es"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Hola", "<b>", "</b>", "casa"} {
		if !strings.Contains(html, want) {
			t.Errorf("TranslateToHTML lacks %q: %s", want, html)
		}
	}
	for _, bad := range []string{"script", "alert", "onclick"} {
		if strings.Contains(html, bad) {
			t.Errorf("TranslateToHTML kept %q: %s", bad, html)
		}
	}

	paras, err := svc.TranslateToHTML(ctx, translate.Request{CustomerID: customer, SourceText: "Hello.\n\nThe house is big & old.", TargetLang: "es"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(paras, "<p>Hola") || !strings.Contains(paras, "</p>\n<p>La casa es grande") || !strings.Contains(paras, "&amp;") {
		t.Fatalf("plain text to HTML = %q", paras)
	}
}

func TestApertiumUnsupportedPair(t *testing.T) {
	svc := translate.New(translate.Config{Providers: []mt.Translator{realApertium(t)}})
	_, err := svc.Translate(context.Background(), translate.Request{CustomerID: customer, SourceText: "The house is big", TargetLang: "xho"})
	var de *apperr.Error
	if !errors.As(err, &de) || !errors.Is(err, mt.ErrUnsupportedPair) || de.Message != "no translation provider serves en->xh" {
		t.Fatalf("error = %v, want the unsupported-pair error naming en->xh", err)
	}
}

// germanModel is a chat-completions server that "translates" into German.
func germanModel(t *testing.T) (*openai.Client, *atomic.Int32) {
	var calls atomic.Int32
	f := openaifake.New(t, openaifake.Options{}).Handle(func(r openaifake.Request) openaifake.Answer {
		calls.Add(1)
		out := "Das Haus ist groß"
		if !strings.Contains(r.System(), "German (de)") {
			out = "wrong target"
		}
		return openaifake.Answer{Content: `{"translation":"` + out + `"}`}
	})
	return openai.New(openai.Config{BaseURL: f.URL, Model: "test"}), &calls
}

func TestChainOfRealEngines(t *testing.T) {
	ap := &countingEngine{Translator: realApertium(t)}
	client, llmCalls := germanModel(t)
	llm := llmtranslate.New(client, llmtranslate.Config{})
	providers, err := translate.OrderProviders("apertium,openai", llm, ap)
	if err != nil {
		t.Fatal(err)
	}
	svc := translate.New(translate.Config{Providers: providers})
	ctx := context.Background()

	// en->es: Apertium has it, the model is not asked.
	if got, err := svc.Translate(ctx, translate.Request{CustomerID: customer, SourceText: "The house is big", TargetLang: "es"}); err != nil || !strings.Contains(got, "casa") {
		t.Fatalf("en->es = %q, %v", got, err)
	}
	// en->de: Apertium lacks it, the model serves it.
	if got, err := svc.Translate(ctx, translate.Request{CustomerID: customer, SourceText: "The house is big", TargetLang: "de"}); err != nil || got != "Das Haus ist groß" {
		t.Fatalf("en->de = %q, %v", got, err)
	}
	if ap.calls.Load() != 1 || llmCalls.Load() != 1 {
		t.Fatalf("apertium calls %d, model calls %d; want 1 and 1", ap.calls.Load(), llmCalls.Load())
	}
}

func TestBrokenApertiumFallsBackToTheModel(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/modes", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/modes/eng-deu.mode", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/apertium", []byte("#!/bin/sh\necho 'lt-proc: cannot open transducer' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	broken := apertium.New(apertium.Config{Command: dir + "/apertium", DataDir: dir})
	client, llmCalls := germanModel(t)
	svc := translate.New(translate.Config{Providers: []mt.Translator{broken, llmtranslate.New(client, llmtranslate.Config{})}})
	got, err := svc.Translate(context.Background(), translate.Request{CustomerID: customer, SourceText: "The house is big", TargetLang: "de"})
	if err != nil || got != "Das Haus ist groß" || llmCalls.Load() != 1 {
		t.Fatalf("Translate = %q, %v with %d model calls; want the model's answer", got, err, llmCalls.Load())
	}
}

func TestRedisCachedTranslation(t *testing.T) {
	rdb, prefix := redistest.Open(t, "translation")
	ctx := context.Background()

	ap := &countingEngine{Translator: realApertium(t)}
	svc := translate.New(translate.Config{Providers: []mt.Translator{ap}, Cache: rediscache.New(rdb, prefix), CacheTTL: time.Minute})
	first, err := svc.Translate(ctx, translate.Request{CustomerID: customer, SourceText: "The house is big", TargetLang: "es"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := svc.Translate(ctx, translate.Request{CustomerID: customer, SourceText: "The house is big", TargetLang: "es"})
	if err != nil || second != first {
		t.Fatalf("second = %q, %v; want %q", second, err, first)
	}
	if ap.calls.Load() != 1 {
		t.Fatalf("apertium ran %d times, want 1", ap.calls.Load())
	}
	key := prefix + translate.CacheKey(customer, "The house is big", "", "es", translate.ModePlain)
	if val, err := rdb.Get(ctx, key).Result(); err != nil || val != first {
		t.Fatalf("redis %s = %q, %v", key, val, err)
	}
}
