package translate_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"supportplatform.dev/ai/mt"
	"supportplatform.dev/services/translation/internal/translate"
)

// recordingEngine remembers the pairs that reach the wrapped engine. Unless real is set it only
// tags the texts, so that the pairs and routes are the real engine's but no process starts.
type recordingEngine struct {
	mt.Translator
	real  bool
	mu    sync.Mutex
	pairs []mt.Pair
}

func (r *recordingEngine) Translate(ctx context.Context, p mt.Pair, texts []string) ([]string, error) {
	r.mu.Lock()
	r.pairs = append(r.pairs, p)
	r.mu.Unlock()
	if r.real {
		return r.Translator.Translate(ctx, p, texts)
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = "[" + p.String() + "]" + t
	}
	return out, nil
}

// Pairs keeps the wrapped engine's listing visible to the service.
func (r *recordingEngine) Pairs(ctx context.Context) ([]mt.Pair, error) {
	return r.Translator.(interface {
		Pairs(context.Context) ([]mt.Pair, error)
	}).Pairs(ctx)
}

// TestShortSupportLines runs short real-world support lines in the languages the installed
// Apertium pairs cover through the service, with no sourceLang and no history: each must be read
// in its language (the first pair the engine is asked starts there, or the text comes back
// unchanged when it is already in the target), with the installed pairs deciding what is
// servable. Lines with a word are also translated by the real engine (about a second of CPU
// each on this machine, hence not all), into a text containing the word.
func TestShortSupportLines(t *testing.T) {
	ap := realApertium(t)
	eng := &recordingEngine{Translator: ap}
	svc := translate.New(translate.Config{Providers: []mt.Translator{eng}})
	realSvc := translate.New(translate.Config{Providers: []mt.Translator{&recordingEngine{Translator: ap, real: true}}})
	tests := []struct {
		text, target string
		source       string // the language the text must be read in
		want         string // a word of the translation (lower case), "" to check the source only
	}{
		// English
		{"Thanks!", "es", "en", "gracias"},
		{"Thank you so much", "es", "en", ""},
		{"Order #123 not arrived", "es", "en", ""},
		{"Hello", "es", "en", ""},
		{"Where is my order?", "es", "en", ""},
		{"Can you help me?", "es", "en", ""},
		{"I need a refund", "es", "en", ""},
		{"My package is late", "es", "en", ""},
		{"Please cancel my order", "es", "en", ""},
		{"Good morning", "es", "en", ""},
		{"The item is broken", "ca", "en", ""},
		{"Any update?", "es", "en", ""},
		{"Line one.\n\nLine <two>.", "es", "en", "línea"},
		// Spanish
		{"¿Dónde está mi pedido?", "en", "es", ""},
		{"Gracias", "en", "es", ""},
		{"Muchas gracias", "en", "es", ""},
		{"Hola, necesito ayuda", "en", "es", ""},
		{"Mi pedido no ha llegado", "en", "es", ""},
		{"Quiero un reembolso", "en", "es", ""},
		{"¿Me pueden ayudar?", "en", "es", ""},
		{"Buenos días", "en", "es", ""},
		{"El producto está roto", "en", "es", ""},
		{"Todavía no he recibido nada", "en", "es", ""},
		{"Hola", "es", "es", ""},                          // already Spanish: unchanged
		{"Hola, necesito ayuda", "ca", "es", "necessito"}, // es->ca through English
		// Catalan (to Spanish through English)
		{"Moltes gràcies", "es", "ca", "gracias"},
		{"Bon dia", "es", "ca", ""},
		{"On és la meva comanda?", "es", "ca", ""},
		{"La meva comanda encara no ha arribat", "es", "ca", ""},
		{"Gràcies per la vostra ajuda", "es", "ca", ""},
		{"Necessito ajuda amb la comanda", "es", "ca", ""},
		{"Bona tarda", "en", "ca", ""},
		{"Hola, com estàs?", "en", "ca", ""},
		{"Encara no he rebut el paquet", "en", "ca", ""},
		{"Vull cancel·lar la comanda", "en", "ca", ""},
		// French
		{"Merci beaucoup", "es", "fr", "gracias"},
		{"Merci", "es", "fr", ""},
		{"Bonjour", "es", "fr", ""},
		{"Où est ma commande ?", "es", "fr", ""},
		{"Ma commande n'est pas arrivée", "es", "fr", ""},
		{"J'ai besoin d'aide", "es", "fr", ""},
		{"Pouvez-vous m'aider ?", "es", "fr", ""},
		{"Je veux un remboursement", "es", "fr", ""},
		{"Bonjour, merci pour votre aide", "en", "fr", "thank"}, // fr->en through Spanish
		{"Le produit est cassé", "es", "fr", ""},
		// Portuguese
		{"Obrigado pela ajuda", "es", "pt", "gracias"},
		{"Obrigado", "es", "pt", ""},
		{"Muito obrigada", "es", "pt", ""},
		{"Olá, bom dia", "es", "pt", ""},
		{"Meu pedido ainda não chegou", "es", "pt", ""},
		{"Onde está o meu pedido?", "es", "pt", ""},
		{"Preciso de ajuda", "es", "pt", ""},
		{"Ainda não recebi o produto", "es", "pt", ""},
		{"Boa tarde, tudo bem?", "en", "pt", ""}, // pt->en through Spanish
	}
	if len(tests) < 50 {
		t.Fatalf("only %d lines", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.source+"/"+tt.text, func(t *testing.T) {
			eng.mu.Lock()
			before := len(eng.pairs)
			eng.mu.Unlock()
			got, err := svc.Translate(context.Background(), translate.Request{CustomerID: customer, SourceText: tt.text, TargetLang: tt.target})
			if err != nil {
				t.Fatalf("Translate(%q) to %s: %v", tt.text, tt.target, err)
			}
			eng.mu.Lock()
			asked := append([]mt.Pair(nil), eng.pairs[before:]...)
			eng.mu.Unlock()
			if tt.source == tt.target {
				if got != tt.text || len(asked) != 0 {
					t.Fatalf("Translate(%q) = %q after %v; want it unchanged", tt.text, got, asked)
				}
				return
			}
			if len(asked) == 0 || asked[0].Source != tt.source {
				t.Fatalf("Translate(%q) = %q; engine asked %v, want a translation from %s", tt.text, got, asked, tt.source)
			}
			if tt.want == "" {
				return
			}
			got, err = realSvc.Translate(context.Background(), translate.Request{CustomerID: customer, SourceText: tt.text, TargetLang: tt.target})
			if err != nil || !strings.Contains(strings.ToLower(got), tt.want) {
				t.Fatalf("Translate(%q) = %q, %v; want it to contain %q", tt.text, got, err, tt.want)
			}
		})
	}
}

// modelEngine stands for an LLM engine: it serves every pair and counts its calls.
type modelEngine struct{ calls atomic.Int32 }

func (m *modelEngine) Name() string                                    { return "model" }
func (m *modelEngine) Supports(context.Context, mt.Pair) (bool, error) { return true, nil }
func (m *modelEngine) Translate(_ context.Context, p mt.Pair, texts []string) ([]string, error) {
	m.calls.Add(1)
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = "[" + p.Target + "] " + t
	}
	return out, nil
}

// TestApertiumPivotBeforeTheModel is the gateway's configuration (apertium,openai): Catalan and
// Spanish go through English with Apertium, and the short text is read as English by
// Apertium, without asking the model.
func TestApertiumPivotBeforeTheModel(t *testing.T) {
	model := &modelEngine{}
	svc := translate.New(translate.Config{Providers: []mt.Translator{realApertium(t), model}})
	ctx := context.Background()
	for _, tc := range []struct {
		req  translate.Request
		want string
	}{
		{translate.Request{SourceText: "Moltes gràcies per la vostra ajuda", TargetLang: "es"}, "gracias"},
		{translate.Request{SourceText: "Muchas gracias.\n\nMi pedido no ha llegado.", TargetLang: "cat"}, "<p>gràcies"},
		{translate.Request{SourceText: "Line one.\n\nLine <two>.", TargetLang: "es"}, "</p>\n<p>línea &lt;dos&gt;.</p>"},
		{translate.Request{SourceText: "Hello", SourceLang: "eng", TargetLang: "ca"}, "hola"},
	} {
		tc.req.CustomerID = customer
		call := svc.Translate
		if strings.Contains(tc.req.SourceText, "\n") {
			call = svc.TranslateToHTML
		}
		got, err := call(ctx, tc.req)
		if err != nil || !strings.Contains(strings.ToLower(got), tc.want) {
			t.Fatalf("%+v = %q, %v; want %q", tc.req, got, err, tc.want)
		}
	}
	if n := model.calls.Load(); n != 0 {
		t.Fatalf("the model was asked %d times", n)
	}
}
