package textfield

import (
	"strings"
	"testing"

	"supportplatform.dev/pkg/apperr"
)

func TestLineAndMultiline(t *testing.T) {
	tests := []struct {
		name      string
		s         string
		required  bool
		multiline bool
		want      string
	}{
		{"empty optional", "", false, false, ""},
		{"empty required", "", true, false, "is required"},
		{"plain", "Help desk", true, false, ""},
		{"at the limit", strings.Repeat("é", 10), true, false, ""},
		{"over the limit", strings.Repeat("é", 11), true, false, "must be at most 10 characters"},
		{"invalid UTF-8", "a\xffb", true, false, "must be valid UTF-8"},
		{"NUL", "a\x00b", true, true, "must not contain control characters"},
		{"newline in a line", "a\nb", true, false, "must not contain control characters"},
		{"newline in text", "a\r\n\tb", true, true, ""},
		{"bell in text", "a\ab", true, true, "must not contain control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v apperr.Validation
			if tt.multiline {
				Multiline(&v, "f", tt.s, tt.required, 10)
			} else {
				Line(&v, "f", tt.s, tt.required, 10)
			}
			var got string
			if err := v.Err(); err != nil {
				got = err.(*apperr.Error).Fields["f"]
			}
			if got != tt.want {
				t.Fatalf("%q: %q, want %q", tt.s, got, tt.want)
			}
		})
	}
}

func TestEmail(t *testing.T) {
	for in, want := range map[string]string{
		"Desk@Contoso.TEST":                  "desk@contoso.test",
		"a.b+tag@example.com":                "a.b+tag@example.com",
		"Desk <d@contoso.test>":              "",
		"a@b.test, c@d.test":                 "",
		" d@contoso.test":                    "",
		"desk":                               "",
		"":                                   "",
		"d@x.test\n":                         "",
		strings.Repeat("a", 320) + "@x.test": "",
	} {
		got, ok := Email(in)
		if got != want || ok != (want != "") {
			t.Errorf("Email(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
