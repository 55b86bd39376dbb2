package httpserver

import (
	"encoding/json"
	"testing"
)

// Any string encodes as encoding/json encodes it.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<>&\"\\", "\x00\x1f\x7f", "\b\f\n\r\t", "\u2028\u2029", "\xff", "a\xffb\xc3", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q: got %s want x%s", s, got, want)
		}
	})
}
