// Package langcode validates and normalises ISO 639 language codes.
//
// The API accepts ISO 639-1 (two letters) and ISO 639-3 (three letters) codes. The registry behind
// the check is the IANA language subtag registry as compiled into golang.org/x/text/language, which
// carries every ISO 639-1 code and the ISO 639-3 individual and macrolanguage codes. A normalised code
// is the ISO 639-1 code when the language has one and the ISO 639-3 code otherwise, so that "eng",
// "EN" and "en" compare equal everywhere in the platform.
package langcode

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// ErrInvalid is matched (errors.Is) by every error this package returns for a code it rejects.
var ErrInvalid = errors.New("invalid language code")

// InvalidError says why a code was rejected.
type InvalidError struct {
	Code   string
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("invalid language code %q: %s", e.Code, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// bibliographic maps the ISO 639-2/B codes (the "library" spellings such as fre and ger) to their
// ISO 639-1 code. They are not ISO 639-3 codes, but callers coming from older systems still send them
// and refusing a code that names a language unambiguously helps no one.
var bibliographic = map[string]string{
	"alb": "sq", "arm": "hy", "baq": "eu", "bur": "my", "chi": "zh", "cze": "cs", "dut": "nl",
	"fre": "fr", "geo": "ka", "ger": "de", "gre": "el", "ice": "is", "mac": "mk", "mao": "mi",
	"may": "ms", "per": "fa", "rum": "ro", "slo": "sk", "tib": "bo", "wel": "cy",
}

// Normalize checks code against the ISO 639 tables and returns its canonical form: lower case, the
// ISO 639-1 code when one exists, else the ISO 639-3 code. Deprecated codes become their successors
// (iw -> he, in -> id) and the principal individual language of a macrolanguage becomes the
// macrolanguage (cmn -> zh, arb -> ar, pes -> fa), because that is the code engines and people use.
// Special codes (und, mis, mul, zxx) and the private-use range qaa-qtz are rejected: they name no
// language anyone can translate into.
func Normalize(code string) (string, error) {
	c := strings.ToLower(strings.TrimSpace(code))
	if len(c) < 2 || len(c) > 3 {
		return "", &InvalidError{Code: code, Reason: "must be a two-letter ISO 639-1 or three-letter ISO 639-3 code"}
	}
	for i := 0; i < len(c); i++ {
		if c[i] < 'a' || c[i] > 'z' {
			return "", &InvalidError{Code: code, Reason: "must contain letters only"}
		}
	}
	if len(c) == 3 && c >= "qaa" && c <= "qtz" {
		return "", &InvalidError{Code: code, Reason: "reserved for private use"}
	}
	switch c {
	case "und", "mis", "mul", "zxx":
		return "", &InvalidError{Code: code, Reason: "special code that names no single language"}
	}
	if b, ok := bibliographic[c]; ok {
		c = b
	}
	if _, err := language.ParseBase(c); err != nil {
		return "", &InvalidError{Code: code, Reason: "not in the ISO 639 registry"}
	}
	tag, err := (language.Deprecated | language.Macro).Parse(c)
	if err != nil {
		return "", &InvalidError{Code: code, Reason: "not in the ISO 639 registry"}
	}
	base, _ := tag.Base()
	return base.String(), nil
}

// Valid reports whether Normalize accepts code.
func Valid(code string) bool {
	_, err := Normalize(code)
	return err == nil
}

// ISO6391 returns the two-letter code of the language, if it has one.
func ISO6391(code string) (string, bool) {
	n, err := Normalize(code)
	if err != nil || len(n) != 2 {
		return "", false
	}
	return n, true
}

// ISO6393 returns the three-letter ISO 639-3 (terminological) code of the language.
func ISO6393(code string) (string, error) {
	n, err := Normalize(code)
	if err != nil {
		return "", err
	}
	b, err := language.ParseBase(n)
	if err != nil {
		return "", &InvalidError{Code: code, Reason: "not in the ISO 639 registry"}
	}
	return b.ISO3(), nil
}

// Name returns the English name of the language, or "" when the code is invalid or the tables
// know no name for it.
func Name(code string) string {
	n, err := Normalize(code)
	if err != nil {
		return ""
	}
	b, err := language.ParseBase(n)
	if err != nil {
		return ""
	}
	name := display.English.Languages().Name(b)
	if name == "Unknown language" {
		return ""
	}
	return name
}
