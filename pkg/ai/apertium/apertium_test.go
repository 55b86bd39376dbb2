package apertium

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/ai/mt"
)

// requireApertium fails the test when the Debian packages are missing: these tests exist to prove
// real translation works, so a silent skip would hide a broken install. `make test` installs them.
func requireApertium(t *testing.T) *Engine {
	t.Helper()
	e := New(Config{})
	ok, err := e.Supports(context.Background(), mt.Pair{Source: "en", Target: "es"})
	if err != nil || !ok {
		t.Fatalf("apertium eng-spa is not installed (apt-get install -y apertium apertium-eng-spa): supports=%v err=%v", ok, err)
	}
	return e
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
		want Mode
	}{
		{"eng-spa", true, Mode{Name: "eng-spa", Source: "en", Target: "es"}},
		{"spa-eng", true, Mode{Name: "spa-eng", Source: "es", Target: "en"}},
		{"fr-es", true, Mode{Name: "fr-es", Source: "fr", Target: "es"}},
		{"es-pt_BR", true, Mode{Name: "es-pt_BR", Source: "es", Target: "pt", Variant: "BR"}},
		{"eng-cat_valencia_uni", true, Mode{Name: "eng-cat_valencia_uni", Source: "en", Target: "ca", Variant: "valencia_uni"}},
		{"nno-nob", true, Mode{Name: "nno-nob", Source: "nn", Target: "no"}},
		{"eco-fr-es", false, Mode{}},
		{"eng-spa-tagger", false, Mode{}},
		{"eng", false, Mode{}},
		{"xx-yy", false, Mode{}},
		{"eng-eng", false, Mode{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseMode(tt.name)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("ParseMode(%q) = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestIndexPrefersMainMode(t *testing.T) {
	byPair, list := indexModes([]string{"es-pt_BR", "eng-cat_valencia", "es-pt", "eco-fr-es", "eng-cat_iec2017"})
	if got := byPair[mt.Pair{Source: "es", Target: "pt"}].Name; got != "es-pt" {
		t.Errorf("es->pt mode = %q, want es-pt", got)
	}
	// Only variants installed: still served, by a deterministic choice.
	if got := byPair[mt.Pair{Source: "en", Target: "ca"}].Name; got != "eng-cat_iec2017" {
		t.Errorf("en->ca mode = %q, want eng-cat_iec2017", got)
	}
	if len(list) != 4 {
		t.Errorf("listed %d modes, want 4 (eco-fr-es is not a pair)", len(list))
	}
}

func TestInstalledPairs(t *testing.T) {
	e := requireApertium(t)
	pairs, err := e.Pairs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, p := range pairs {
		have[p.String()] = true
	}
	for _, want := range []string{"en->es", "es->en"} {
		if !have[want] {
			t.Errorf("pairs %v lack %s", pairs, want)
		}
	}
	ctx := context.Background()
	for _, tt := range []struct {
		p    mt.Pair
		want bool
	}{
		{mt.Pair{Source: "en", Target: "es"}, true},
		{mt.Pair{Source: "en", Target: "es", SourceUncertain: true}, true},
		{mt.Pair{Target: "es"}, false},
		{mt.Pair{Source: "en", Target: "xh"}, false},
	} {
		if got, err := e.Supports(ctx, tt.p); err != nil || got != tt.want {
			t.Errorf("Supports(%v) = %v, %v; want %v", tt.p, got, err, tt.want)
		}
	}
}

func TestTranslateEnglishToSpanish(t *testing.T) {
	e := requireApertium(t)
	ctx := context.Background()
	en2es := mt.Pair{Source: "en", Target: "es"}
	tests := []struct {
		in      string
		contain []string
	}{
		{"Hello", []string{"Hola"}},
		{"The house is big", []string{"casa", "grande"}},
		{"Thank you for your help.", []string{"ayuda"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := e.Translate(ctx, en2es, []string{tt.in})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.contain {
				if !strings.Contains(got[0], w) {
					t.Fatalf("Translate(%q) = %q, want it to contain %q", tt.in, got[0], w)
				}
			}
		})
	}
}

func TestTranslatePlainTextKeepsMarkupCharacters(t *testing.T) {
	e := requireApertium(t)
	got, err := e.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"<b>Hello</b> & goodbye"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got[0], "<b>") || !strings.Contains(got[0], "</b>") || !strings.Contains(got[0], "&") || !strings.Contains(got[0], "Hola") {
		t.Fatalf("got %q, want the <b> tags and & kept as characters around Hola", got[0])
	}
}

func TestTranslateBatchInOneRun(t *testing.T) {
	e := requireApertium(t)
	texts := []string{"The house is big", "Tom & Jerry <3 \"quoted\"", "Good morning", "Hello"}
	got, err := e.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) {
		t.Fatalf("got %d results for %d texts", len(got), len(texts))
	}
	if !strings.Contains(got[0], "casa") {
		t.Errorf("text 0 = %q, want casa", got[0])
	}
	if !strings.Contains(got[1], "Tom & Jerry <3") {
		t.Errorf("text 1 = %q, want the escaped characters restored", got[1])
	}
	if !strings.Contains(got[2], "Buenos días") {
		t.Errorf("text 2 = %q, want Buenos días", got[2])
	}
	if !strings.Contains(got[3], "Hola") {
		t.Errorf("text 3 = %q, want Hola", got[3])
	}
}

func TestTranslateKeepsLowerCaseStart(t *testing.T) {
	e := requireApertium(t)
	got, err := e.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"Hello", "friend"})
	if err != nil {
		t.Fatal(err)
	}
	if got[1] != "amigo" {
		t.Fatalf("mid-sentence text node %q came back as %q, want amigo", "friend", got[1])
	}
	single, err := e.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"friend"})
	if err != nil || single[0] != "amigo" {
		t.Fatalf("single text = %q, %v; want amigo", single, err)
	}
}

func TestMatchInitialCase(t *testing.T) {
	for _, tt := range []struct{ src, out, want string }{
		{"friend", "Amigo", "amigo"},
		{"Friend", "Amigo", "Amigo"},
		{"  friend", "  Amigo", "  amigo"},
		{"usb cable", "USB cable", "USB cable"},
		{"élan", "Élan", "élan"},
		{"42 friends", "42 amigos", "42 amigos"},
		{"friend", "", ""},
	} {
		if got := matchInitialCase(tt.src, tt.out); got != tt.want {
			t.Errorf("matchInitialCase(%q, %q) = %q, want %q", tt.src, tt.out, got, tt.want)
		}
	}
}

func TestTranslateSpanishToEnglish(t *testing.T) {
	e := requireApertium(t)
	got, err := e.Translate(context.Background(), mt.Pair{Source: "es", Target: "en"}, []string{"La casa es grande"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got[0], "house") {
		t.Fatalf("got %q, want house", got[0])
	}
}

func TestUnsupportedPair(t *testing.T) {
	e := requireApertium(t)
	_, err := e.Translate(context.Background(), mt.Pair{Source: "en", Target: "xh"}, []string{"Hello"})
	if !errors.Is(err, mt.ErrUnsupportedPair) {
		t.Fatalf("error = %v, want mt.ErrUnsupportedPair", err)
	}
}

// fakeInstall builds a data directory with the given modes and an executable standing in for
// the apertium command.
func fakeInstall(t *testing.T, script string, modes ...string) Config {
	t.Helper()
	dir := t.TempDir()
	if modes != nil {
		if err := os.MkdirAll(filepath.Join(dir, "data", "modes"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, m := range modes {
			if err := os.WriteFile(filepath.Join(dir, "data", "modes", m+".mode"), []byte("cat\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := filepath.Join(dir, "apertium")
	if err := os.WriteFile(cmd, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return Config{Command: cmd, DataDir: filepath.Join(dir, "data")}
}

func TestTimeoutKillsThePipeline(t *testing.T) {
	// Like the real script, the fake starts a pipeline whose members inherit stdout; killing only
	// the shell would leave sleep holding the pipe and Run waiting for it.
	cfg := fakeInstall(t, "sleep 30 | cat\n", "eng-spa")
	cfg.Timeout = 200 * time.Millisecond
	e := New(cfg)
	start := time.Now()
	_, err := e.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"Hello"})
	var rerr *RunError
	if !errors.As(err, &rerr) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want a *RunError wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("Translate returned after %v, want soon after the 200ms timeout", d)
	}
}

func TestCommandFailureCarriesStderr(t *testing.T) {
	cfg := fakeInstall(t, "echo 'Error: Mode eng-spa does not exist' >&2\nexit 1\n", "eng-spa")
	_, err := New(cfg).Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"Hello"})
	var rerr *RunError
	if !errors.As(err, &rerr) || rerr.Mode != "eng-spa" || !strings.Contains(rerr.Stderr, "does not exist") {
		t.Fatalf("error = %v, want a *RunError with the command's stderr", err)
	}
}

func TestDiscoveryFallsBackToCommandList(t *testing.T) {
	cfg := fakeInstall(t, "if [ \"$3\" = -l ]; then printf '  eng-spa\\n  fr-es\\n  eco-fr-es\\n'; fi\n")
	e := New(cfg)
	pairs, err := e.Pairs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 2 || pairs[0].String() != "en->es" || pairs[1].String() != "fr->es" {
		t.Fatalf("pairs = %v, want [en->es fr->es]", pairs)
	}
}

func TestNotInstalled(t *testing.T) {
	e := New(Config{Command: filepath.Join(t.TempDir(), "no-such-apertium"), DataDir: filepath.Join(t.TempDir(), "nothing")})
	if _, err := e.Supports(context.Background(), mt.Pair{Source: "en", Target: "es"}); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("error = %v, want ErrNotInstalled", err)
	}
}
