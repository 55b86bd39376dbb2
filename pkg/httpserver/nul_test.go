package httpserver

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"supportplatform.dev/pkg/apperr"
)

func TestDecodeJSONRefusesNUL(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		fields []string // the field errors expected; none: accepted
	}{
		{"no escape", `{"email":"a@example.com","name":"Ann"}`, nil},
		{"escaped backslash before u0000 is text", `{"name":"C:\\u0000dir"}`, nil},
		{"other escapes", `{"name":"tab\t\u0001\u00e9"}`, nil},
		{"value", `{"email":"a\u0000@example.com","password":"x"}`, []string{"email"}},
		{"value as written", `{"EMail":"\u0000"}`, []string{"EMail"}},
		{"nested object", `{"customer":{"name":"x\u0000"}}`, []string{"customer.name"}},
		{"array element field", `{"items":[{"name":"a"},{"name":"b"},{"name":"\u0000"}]}`, []string{"items[2].name"}},
		{"array of strings", `{"tags":["a","b\u0000"]}`, []string{"tags[1]"}},
		{"after nested values", `{"a":[1,[2,3],{"b":null}],"c":{"d":true},"e":"\u0000"}`, []string{"e"}},
		{"key", `{"na\u0000me":"x"}`, []string{`na\u0000me`}},
		{"key and value", `{"a\u0000":"\u0000"}`, []string{`a\u0000`}},
		{"several", `{"email":"\u0000","name":"\u0000x","items":[{"name":"\u0000"}]}`, []string{"email", "name", "items[0].name"}},
		{"top-level string", `"\u0000"`, []string{"body"}},
		{"top-level array", `["ok","\u0000"]`, []string{"[1]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var dst any
			err := DecodeJSON([]byte(tc.body), &dst)
			if len(tc.fields) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ae *apperr.Error
			if !apperr.Is(err, apperr.Invalid) || !errors.As(err, &ae) {
				t.Fatalf("want a 400, got %v", err)
			}
			if len(ae.Fields) != len(tc.fields) {
				t.Fatalf("fields %v, want %v", ae.Fields, tc.fields)
			}
			for _, f := range tc.fields {
				if ae.Fields[f] == "" {
					t.Fatalf("fields %v lack %q", ae.Fields, f)
				}
			}
		})
	}
}

// Through the server: a 400 problem, never the 500 a store would give.
func TestBindJSONRefusesNUL(t *testing.T) {
	h := newTestServer(t).Handler()
	rec, p := do(t, h, "POST", "/api/Items", "application/json", `{"name":"a\u0000"}`)
	if rec.Code != 400 || p.Errors["name"] == "" {
		t.Fatalf("%d %+v", rec.Code, p)
	}
}

// The NUL check must cost nothing measurable on ordinary bodies: compare
// BenchmarkDecodeJSON/plain with the decode alone (BenchmarkDecodeJSON/
// without-check).
func BenchmarkDecodeJSON(b *testing.B) {
	body := []byte(`{"items":[` + strings.Repeat(`{"name":"a topic name","description":"some text \u00e9 here","priority":3},`, 200) + `{}]}`)
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var v any
			if err := DecodeJSON(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check-only", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if bytes.Contains(body, nulEscape) {
				b.Fatal("escape found")
			}
		}
	})
}
