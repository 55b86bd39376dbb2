package langcode

import (
	"errors"
	"strings"
	"testing"
)

// FuzzNormalize: a language code is refused with ErrInvalid, or normalised
// to a lower-case ISO 639-1 code (or ISO 639-3 when the language has no
// 639-1 code) that is its own normal form and has a 639-3 code.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"en", "EN", "eng", " fr ", "fre", "ger", "iw", "in", "cmn", "arb", "pes", "nb", "no", "sh",
		"und", "mis", "mul", "zxx", "qaa", "qtz", "xx", "e", "engl", "e1", "en-US", "zh-Hant", "ǆ", "İn", "ſv", "K", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		n, err := Normalize(code)
		if err != nil {
			var ie *InvalidError
			if n != "" || !errors.Is(err, ErrInvalid) || !errors.As(err, &ie) || ie.Reason == "" || Valid(code) {
				t.Fatalf("Normalize(%q) = %q, %v", code, n, err)
			}
			return
		}
		if len(n) < 2 || len(n) > 3 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("Normalize(%q) = %q: not a lower-case ISO 639 code", code, n)
		}
		if again, err := Normalize(n); err != nil || again != n {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", code, n, again, err)
		}
		if strings.EqualFold(strings.TrimSpace(code), n) == false {
			// Only an alias may change the letters: it must name the same language.
			if iso3, err := ISO6393(code); err != nil || len(iso3) != 3 {
				t.Fatalf("%q -> %q has no ISO 639-3 code: %q, %v", code, n, iso3, err)
			}
		}
		iso3, err := ISO6393(n)
		if err != nil || len(iso3) != 3 {
			t.Fatalf("%q -> %q: ISO6393 %q, %v", code, n, iso3, err)
		}
		if two, ok := ISO6391(code); ok != (len(n) == 2) || (ok && two != n) {
			t.Fatalf("%q -> %q: ISO6391 %q, %v", code, n, two, ok)
		}
	})
}
