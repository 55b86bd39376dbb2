package langcode

import (
	"errors"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"639-1 English", "en", "en"},
		{"639-3 English", "eng", "en"},
		{"upper case", "EN", "en"},
		{"surrounding space", " de ", "de"},
		{"639-3 Spanish", "spa", "es"},
		{"639-3 French", "fra", "fr"},
		{"639-3 German", "deu", "de"},
		{"639-2/B French", "fre", "fr"},
		{"639-2/B German", "ger", "de"},
		{"639-2/B Chinese", "chi", "zh"},
		{"Mandarin folds into Chinese", "cmn", "zh"},
		{"Standard Arabic folds into Arabic", "arb", "ar"},
		{"Iranian Persian folds into Persian", "pes", "fa"},
		{"Cantonese has no 639-1 code", "yue", "yue"},
		{"Konkani has no 639-1 code", "kok", "kok"},
		{"Xhosa 639-3", "xho", "xh"},
		{"Ghotuo is a real 639-3 code", "aaa", "aaa"},
		{"deprecated Hebrew", "iw", "he"},
		{"deprecated Indonesian", "in", "id"},
		{"Catalan", "cat", "ca"},
		{"Welsh", "cym", "cy"},
		{"Basque", "eus", "eu"},
		{"Norwegian Bokmal", "nob", "no"},
		{"Norwegian Nynorsk", "nno", "nn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err != nil {
				t.Fatalf("Normalize(%q) error: %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNormalizeRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"unknown two letters", "xx"},
		{"unknown two letters zz", "zz"},
		{"private use start", "qaa"},
		{"private use inside", "qqq"},
		{"private use end", "qtz"},
		{"four letters", "abcd"},
		{"digit", "e1"},
		{"unknown three letters", "zzz"},
		{"undetermined", "und"},
		{"multiple", "mul"},
		{"no linguistic content", "zxx"},
		{"uncoded", "mis"},
		{"full tag is not a code", "en-US"},
		{"one letter", "e"},
		{"non ascii", "é"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err == nil {
				t.Fatalf("Normalize(%q) = %q, want error", tt.in, got)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Code != tt.in {
				t.Fatalf("error %v is not an *InvalidError naming %q", err, tt.in)
			}
			if Valid(tt.in) {
				t.Fatalf("Valid(%q) = true", tt.in)
			}
		})
	}
}

func TestISOMapping(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		iso1  string
		has1  bool
		iso3  string
		label string
	}{
		{"English from 639-1", "en", "en", true, "eng", "English"},
		{"English from 639-3", "eng", "en", true, "eng", "English"},
		{"German", "de", "de", true, "deu", "German"},
		{"Spanish from 639-3", "spa", "es", true, "spa", "Spanish"},
		{"Chinese from Mandarin", "cmn", "zh", true, "zho", "Chinese"},
		{"Cantonese", "yue", "", false, "yue", "Cantonese"},
		{"Xhosa", "xho", "xh", true, "xho", "Xhosa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got1, ok := ISO6391(tt.in)
			if got1 != tt.iso1 || ok != tt.has1 {
				t.Errorf("ISO6391(%q) = %q, %v; want %q, %v", tt.in, got1, ok, tt.iso1, tt.has1)
			}
			got3, err := ISO6393(tt.in)
			if err != nil || got3 != tt.iso3 {
				t.Errorf("ISO6393(%q) = %q, %v; want %q", tt.in, got3, err, tt.iso3)
			}
			if n := Name(tt.in); n != tt.label {
				t.Errorf("Name(%q) = %q, want %q", tt.in, n, tt.label)
			}
		})
	}
	if _, err := ISO6393("qqq"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ISO6393(qqq) error = %v, want ErrInvalid", err)
	}
	if n := Name("xx"); n != "" {
		t.Errorf("Name(xx) = %q, want empty", n)
	}
}
