package langdetect

import (
	"testing"
)

func TestDetectCandidates(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		among []string
		first string
		has   []string // languages that must be candidates too
	}{
		{"the best guess comes first", "Line one.\n\nLine <two>.", nil, "it", []string{"en"}},
		{"among ranks only the languages named", "Line one.\n\nLine <two>.", []string{"eng", "fr", "pt", "es"}, "en", []string{"fr", "pt", "es"}},
		{"Catalan is judged on its words", "La meva comanda encara no ha arribat", []string{"en", "es", "ca"}, "ca", []string{"es"}},
		{"the inverted question mark is Spanish", "¿Me pueden ayudar?", []string{"en", "es", "fr", "pt"}, "es", nil},
		{"Catalan words and its l·l", "Vull cancel·lar la comanda", []string{"es", "ca"}, "ca", []string{"es"}},
		{"a script of one language", "Η παραγγελία μου", nil, "el", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DetectCandidates(tt.text, tt.among...)
			if len(got) == 0 || got[0].Lang != tt.first {
				t.Fatalf("DetectCandidates(%q) = %+v, want %s first", tt.text, got, tt.first)
			}
			if d := DetectText(tt.text); len(tt.among) == 0 && d.Lang != got[0].Lang {
				t.Fatalf("first candidate %s differs from DetectText's %s", got[0].Lang, d.Lang)
			}
			seen := map[string]bool{}
			for i, c := range got {
				if c.Score <= 0 || c.Score > 1 || seen[c.Lang] {
					t.Fatalf("candidate %+v: score out of range or repeated", c)
				}
				if i > 1 && c.Score > got[i-1].Score {
					t.Fatalf("candidates not ordered by score: %+v", got)
				}
				seen[c.Lang] = true
				if len(tt.among) > 0 && !map[string]bool{"en": true, "fr": true, "pt": true, "es": true, "ca": true}[c.Lang] {
					t.Fatalf("candidate %s is not among %v", c.Lang, tt.among)
				}
			}
			for _, l := range tt.has {
				if !seen[l] {
					t.Errorf("%s missing from %+v", l, got)
				}
			}
		})
	}
	for _, text := range []string{"", "12345", "😀"} {
		if got := DetectCandidates(text); got != nil {
			t.Errorf("DetectCandidates(%q) = %+v, want none", text, got)
		}
	}
}
