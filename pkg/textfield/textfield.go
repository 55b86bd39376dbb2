// Package textfield validates the text fields of requests the same way in
// every service: what reaches PostgreSQL is valid UTF-8 without NUL, within
// its length in characters, and single-line fields hold no control
// characters at all; e-mail addresses are one bare address.
package textfield

import (
	"fmt"
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"supportplatform.dev/pkg/apperr"
)

// Line checks a single-line field; "" is a problem only when required.
func Line(v *apperr.Validation, field, s string, required bool, max int) {
	check(v, field, s, required, max, unicode.IsControl)
}

// Multiline checks a field that may hold line breaks and tabs.
func Multiline(v *apperr.Validation, field, s string, required bool, max int) {
	check(v, field, s, required, max, func(r rune) bool {
		return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t'
	})
}

func check(v *apperr.Validation, field, s string, required bool, max int, bad func(rune) bool) {
	switch {
	case s == "":
		if required {
			v.Add(field, "is required")
		}
	case !utf8.ValidString(s):
		v.Add(field, "must be valid UTF-8")
	case utf8.RuneCountInString(s) > max:
		v.Add(field, fmt.Sprintf("must be at most %d characters", max))
	case strings.ContainsFunc(s, bad):
		v.Add(field, "must not contain control characters")
	}
}

// MaxEmailLen is the longest address accepted (bytes, RFC 5321's path
// limit is lower; 320 is local part 64 + @ + domain 255).
const MaxEmailLen = 320

// Email returns the bare, lower-case form of an address, or false when s
// is not exactly one address without a display name or comment.
func Email(s string) (string, bool) {
	if s == "" || len(s) > MaxEmailLen || strings.ContainsFunc(s, unicode.IsControl) {
		return "", false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "", false
	}
	return strings.ToLower(a.Address), true
}
