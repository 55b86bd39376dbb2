package translate

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"supportplatform.dev/pkg/apperr"

	"supportplatform.dev/ai/mt"
)

// listingEngine is a fakeEngine that can list its pairs, as Apertium does.
type listingEngine struct{ *fakeEngine }

func (l listingEngine) Pairs(context.Context) ([]mt.Pair, error) {
	var out []mt.Pair
	for p := range l.pairs {
		src, dst, _ := strings.Cut(p, "->")
		out = append(out, mt.Pair{Source: src, Target: dst})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// installed are the Apertium pairs of the test machine.
var installed = []string{"en->ca", "ca->en", "en->es", "es->en", "es->fr", "fr->es", "es->pt", "pt->es"}

func apertiumLike(name string) listingEngine {
	return listingEngine{&fakeEngine{name: name, pairs: serves(installed...)}}
}

// memHistory is an in-memory SourceHistory.
type memHistory struct {
	mu     sync.Mutex
	counts map[int64]map[string]float64
}

func newMemHistory() *memHistory { return &memHistory{counts: map[int64]map[string]float64{}} }

func (m *memHistory) Record(_ context.Context, customerID int64, lang string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts[customerID] == nil {
		m.counts[customerID] = map[string]float64{}
	}
	m.counts[customerID][lang]++
	return nil
}

func (m *memHistory) Shares(_ context.Context, customerID int64) (map[string]float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var total float64
	for _, n := range m.counts[customerID] {
		total += n
	}
	out := map[string]float64{}
	for l, n := range m.counts[customerID] {
		out[l] = n / total
	}
	return out, nil
}

func pairsOf(calls []fakeCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.pair.Source+"->"+c.pair.Target)
	}
	return out
}

func TestPivotSelection(t *testing.T) {
	boom := errors.New("engine crashed")
	tests := []struct {
		name     string
		engines  []mt.Translator
		src, dst string
		want     string   // the answer, or "" for an error
		wantErr  string   // kind
		calls    []string // pairs each engine was asked, "|" between engines
		pivot    string
	}{
		{
			name:    "ca->es through English",
			engines: []mt.Translator{apertiumLike("a")},
			src:     "ca", dst: "es", want: "[a:es][a:en]x", calls: []string{"ca->en,en->es"}, pivot: "en",
		},
		{
			name:    "es->ca through English",
			engines: []mt.Translator{apertiumLike("a")},
			src:     "es", dst: "ca", want: "[a:ca][a:en]x", calls: []string{"es->en,en->ca"}, pivot: "en",
		},
		{
			name:    "fr->en through the language both sides have",
			engines: []mt.Translator{apertiumLike("a")},
			src:     "fr", dst: "en", want: "[a:en][a:es]x", calls: []string{"fr->es,es->en"}, pivot: "es",
		},
		{
			name: "English is preferred to other pivots",
			engines: []mt.Translator{listingEngine{&fakeEngine{name: "a",
				pairs: serves("ca->de", "de->it", "ca->en", "en->it")}}},
			src: "ca", dst: "it", want: "[a:it][a:en]x", calls: []string{"ca->en,en->it"}, pivot: "en",
		},
		{
			name:    "English is tried on engines that cannot list their pairs",
			engines: []mt.Translator{&fakeEngine{name: "a", pairs: serves("ca->en", "en->es")}},
			src:     "ca", dst: "es", want: "[a:es][a:en]x", calls: []string{"ca->en,en->es"}, pivot: "en",
		},
		{
			name:    "other pivots need a listing engine",
			engines: []mt.Translator{&fakeEngine{name: "a", pairs: serves("ca->fr", "fr->es")}},
			src:     "ca", dst: "es", wantErr: kindUnsupported, calls: []string{""},
		},
		{
			name:    "a direct pair wins over a pivot of the same engine",
			engines: []mt.Translator{listingEngine{&fakeEngine{name: "a", pairs: serves("ca->en", "en->es", "ca->es")}}},
			src:     "ca", dst: "es", want: "[a:es]x", calls: []string{"ca->es"},
		},
		{
			name:    "an earlier engine's pivot is preferred to a later engine's direct pair",
			engines: []mt.Translator{apertiumLike("a"), &fakeEngine{name: "llm", pairs: serves("*")}},
			src:     "ca", dst: "es", want: "[a:es][a:en]x", calls: []string{"ca->en,en->es", ""}, pivot: "en",
		},
		{
			name: "a failing pivot falls back to the next engine",
			engines: []mt.Translator{listingEngine{&fakeEngine{name: "a", pairs: serves(installed...), fail: boom}},
				&fakeEngine{name: "llm", pairs: serves("*")}},
			src: "ca", dst: "es", want: "[llm:es]x", calls: []string{"ca->en", "ca->es"},
		},
		{
			name: "legs served by different engines",
			engines: []mt.Translator{listingEngine{&fakeEngine{name: "a", pairs: serves("ca->en")}},
				listingEngine{&fakeEngine{name: "b", pairs: serves("en->es")}}},
			src: "ca", dst: "es", want: "[b:es][a:en]x", calls: []string{"ca->en", "en->es"}, pivot: "en",
		},
		{
			name:    "no pivot leads there",
			engines: []mt.Translator{apertiumLike("a")},
			src:     "ca", dst: "de", wantErr: kindUnsupported, calls: []string{""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			svc := New(Config{Providers: tt.engines, Metrics: m})
			got, err := svc.Translate(context.Background(), Request{CustomerID: customer, SourceText: "x", SourceLang: tt.src, TargetLang: tt.dst})
			if tt.wantErr != "" {
				if errorKind(err) != tt.wantErr {
					t.Fatalf("error = %v, want %s", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.src+"->"+tt.dst) {
					t.Fatalf("error %q does not name the pair", err)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("Translate = %q, %v; want %q", got, err, tt.want)
			}
			for i, e := range tt.engines {
				var f *fakeEngine
				switch e := e.(type) {
				case *fakeEngine:
					f = e
				case listingEngine:
					f = e.fakeEngine
				}
				if got := strings.Join(pairsOf(f.calls), ","); got != tt.calls[i] {
					t.Errorf("engine %s was asked %q, want %q", f.name, got, tt.calls[i])
				}
			}
			var n float64
			if tt.pivot != "" {
				n = testutil.ToFloat64(m.pivots.WithLabelValues(tt.src, tt.pivot, tt.dst))
			}
			if total := testutil.CollectAndCount(m.pivots); tt.pivot != "" && (n != 1 || total != 1) || tt.pivot == "" && total != 0 {
				t.Errorf("pivot metric: %v for %s, %d series; want one count iff a pivot was used", n, tt.pivot, total)
			}
		})
	}
}

func TestSourceLang(t *testing.T) {
	ctx := context.Background()
	t.Run("an unknown code is refused naming the field", func(t *testing.T) {
		svc := New(Config{Providers: []mt.Translator{&fakeEngine{name: "x", pairs: serves("*")}}})
		for _, code := range []string{"xx", "qaa", "english", "en-US"} {
			for _, call := range []func(context.Context, Request) (string, error){svc.Translate, svc.TranslateToHTML} {
				_, err := call(ctx, Request{CustomerID: customer, SourceText: "Hola", SourceLang: code, TargetLang: "en"})
				var de *apperr.Error
				if !errors.As(err, &de) || !apperr.Is(err, apperr.Invalid) || !strings.Contains(de.Fields["sourceLang"], code) {
					t.Fatalf("sourceLang %q: error = %v, want invalid naming sourceLang", code, err)
				}
			}
		}
	})
	t.Run("a given language overrides detection", func(t *testing.T) {
		e := &fakeEngine{name: "x", pairs: serves("*")}
		h := newMemHistory()
		svc := New(Config{Providers: []mt.Translator{e}, History: h})
		// Detected as English, but the caller knows better.
		if _, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: english, SourceLang: "spa", TargetLang: "de"}); err != nil {
			t.Fatal(err)
		}
		if got := e.calls[0].pair; got != (mt.Pair{Source: "es", Target: "de"}) {
			t.Fatalf("pair = %+v, want es->de and certain", got)
		}
		if h.counts[customer]["es"] != 1 {
			t.Fatalf("history = %v, want the given language recorded", h.counts)
		}
	})
	t.Run("a given language equal to the target returns the text", func(t *testing.T) {
		e := &fakeEngine{name: "x", pairs: serves("*")}
		svc := New(Config{Providers: []mt.Translator{e}})
		got, err := svc.TranslateToHTML(ctx, Request{CustomerID: customer, SourceText: "Hello <there>", SourceLang: "fr", TargetLang: "fra"})
		if err != nil || got != "<p>Hello &lt;there&gt;</p>" || e.callCount() != 0 {
			t.Fatalf("TranslateToHTML = %q, %v, %d engine calls", got, err, e.callCount())
		}
	})
	t.Run("given and detected answers are cached apart", func(t *testing.T) {
		e := &fakeEngine{name: "x", pairs: serves("*")}
		svc := New(Config{Providers: []mt.Translator{e}, Cache: newMemCache()})
		for _, src := range []string{"", "fr", ""} {
			if _, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: english, SourceLang: src, TargetLang: "es"}); err != nil {
				t.Fatal(err)
			}
		}
		if got := pairsOf(e.calls); !slices.Equal(got, []string{"en->es", "fr->es"}) {
			t.Fatalf("engine asked %v; want one detected and one given translation, the repeat cached", got)
		}
	})
}

func TestShortTextCandidates(t *testing.T) {
	ctx := context.Background()
	const lines = "Line one.\n\nLine <two>."
	tests := []struct {
		name    string
		text    string
		target  string
		history []string // languages the customer's earlier texts were in
		engines func() []mt.Translator
		want    string // the source translated from, "same" for the text returned unchanged
	}{
		// DetectText's guess is Italian, which nothing translates to Spanish here.
		{name: "the issue's example is read as English", text: lines, target: "es", want: "en"},
		{name: "a customer writing French tips it to French", text: lines, target: "es", history: []string{"fr", "fr", "fr"}, want: "fr"},
		{name: "usual languages do not overrule clear words", text: "Bonjour", target: "en", history: []string{"es", "es", "es", "es"}, want: "fr"},
		{name: "the best guess gives way to a language a provider serves", text: lines, target: "es", want: "fr",
			engines: func() []mt.Translator {
				return []mt.Translator{listingEngine{&fakeEngine{name: "a", pairs: serves("fr->es", "es->fr")}}}
			}},
		{name: "a text in the target language comes back", text: "Hola", target: "es", want: "same"},
		{name: "Catalan, which the trigram profiles lack", text: "Moltes gràcies", target: "es", want: "ca"},
		{name: "an English customer's jargon", text: "Password reset", target: "es", history: []string{"en", "en"}, want: "en"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var engines []mt.Translator
			if tt.engines != nil {
				engines = tt.engines()
			} else {
				engines = []mt.Translator{apertiumLike("a")}
			}
			h := newMemHistory()
			for _, l := range tt.history {
				_ = h.Record(ctx, customer, l)
			}
			svc := New(Config{Providers: engines, History: h})
			got, err := svc.Translate(ctx, Request{CustomerID: customer, SourceText: tt.text, TargetLang: tt.target})
			if err != nil {
				t.Fatal(err)
			}
			var calls []fakeCall
			for _, e := range engines {
				calls = append(calls, e.(listingEngine).calls...)
			}
			if tt.want == "same" {
				if got != tt.text || len(calls) != 0 {
					t.Fatalf("Translate = %q after %v; want the text unchanged", got, pairsOf(calls))
				}
				return
			}
			if len(calls) == 0 || calls[0].pair.Source != tt.want || !calls[0].pair.SourceUncertain {
				t.Fatalf("engines asked %v; want an uncertain %s source first", pairsOf(calls), tt.want)
			}
			if n := len(h.counts[customer]); n != len(uniq(tt.history)) {
				t.Fatalf("history %v: a guess was recorded as the customer's language", h.counts[customer])
			}
		})
	}
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func TestReliableDetectionIsRecorded(t *testing.T) {
	h := newMemHistory()
	svc := New(Config{Providers: []mt.Translator{apertiumLike("a")}, History: h})
	if _, err := svc.Translate(context.Background(), Request{CustomerID: customer, SourceText: english, TargetLang: "es"}); err != nil {
		t.Fatal(err)
	}
	if h.counts[customer]["en"] != 1 {
		t.Fatalf("history = %v, want en recorded", h.counts)
	}
}
