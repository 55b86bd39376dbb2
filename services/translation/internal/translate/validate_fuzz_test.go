package translate

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"supportplatform.dev/ai/langcode"
	"supportplatform.dev/pkg/apperr"
)

// FuzzValidateTranslation: a translation request is a 400 naming its bad
// fields, or valid text with a normalised target and a normalised (or
// empty, to detect) source language.
func FuzzValidateTranslation(f *testing.F) {
	f.Add("Hello world", "en", "es")
	f.Add("Bonjour", "", "ENG")
	f.Add("Hallo", "ger", "fre")
	f.Add("  ", "en", "es")
	f.Add("", "", "")
	f.Add("x\xff", "e", "xx")
	f.Add("text", " pt ", "und")
	f.Add("text", "en-US", "qaa")
	f.Fuzz(func(t *testing.T, text, source, target string) {
		src, tgt, err := validateTranslation(Request{CustomerID: 1, SourceText: text, SourceLang: source, TargetLang: target})
		if err != nil {
			var ae *apperr.Error
			if !errors.As(err, &ae) || ae.Code != apperr.Invalid || len(ae.Fields) == 0 {
				t.Fatalf("(%q, %q, %q): %v is not a 400 naming fields", text, source, target, err)
			}
			for k := range ae.Fields {
				if k != "sourceText" && k != "sourceLang" && k != "targetLang" {
					t.Fatalf("unknown field %q", k)
				}
			}
			return
		}
		if !utf8.ValidString(text) || strings.TrimSpace(text) == "" || utf8.RuneCountInString(text) > MaxSourceChars {
			t.Fatalf("text %q accepted", text)
		}
		if n, err := langcode.Normalize(tgt); err != nil || n != tgt {
			t.Fatalf("target %q -> %q", target, tgt)
		}
		if (source == "") != (src == "") {
			t.Fatalf("source %q -> %q", source, src)
		}
		if src != "" {
			if n, err := langcode.Normalize(src); err != nil || n != src {
				t.Fatalf("source %q -> %q", source, src)
			}
		}
	})
}
