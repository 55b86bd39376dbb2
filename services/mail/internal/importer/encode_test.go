package importer

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"supportplatform.dev/pkg/contracts"
)

func TestTruncateAtARuneBoundary(t *testing.T) {
	cases := []struct {
		name string
		in   string
		n    int
		want string
		cut  bool
	}{
		{"short", "héllo", 10, "héllo", false},
		{"exact", "abc", 3, "abc", false},
		{"inside a rune", "aé", 2, "a", true},         // é is 2 bytes
		{"inside a 4-byte rune", "a😀b", 3, "a", true}, // the emoji is 4 bytes
		{"after a rune", "a😀b", 5, "a😀", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := truncate(tc.in, tc.n)
			if got != tc.want || cut != tc.cut {
				t.Fatalf("truncate(%q, %d) = %q, %v; want %q, %v", tc.in, tc.n, got, cut, tc.want, tc.cut)
			}
		})
	}
}

// Bodies over the contract's caps are cut there; a mail whose JSON would
// still exceed the payload limit is cut further, and stays valid UTF-8.
func TestEncodeMailFitsThePayload(t *testing.T) {
	text := strings.Repeat("ü", contracts.MailBodyTextMax) // twice the cap in bytes
	html := strings.Repeat(`<p class="x">"é"</p>`, contracts.MailBodyHTMLMax/10)
	in := inboundMail(Target{ChannelID: 1}, "id", graphMessage(text, html), nil, contracts.InboundMail{}.ImportedAt)
	if len(in.BodyText) > contracts.MailBodyTextMax || len(in.BodyHTML) > contracts.MailBodyHTMLMax || !in.Truncated {
		t.Fatalf("text %d, html %d bytes, truncated %v", len(in.BodyText), len(in.BodyHTML), in.Truncated)
	}
	const max = 600 << 10
	data, err := encodeMail(in, max)
	if err != nil {
		t.Fatal(err)
	}
	var out contracts.InboundMail
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if len(data) > max || !out.Truncated || !utf8.ValidString(out.BodyText) || !utf8.ValidString(out.BodyHTML) ||
		out.BodyText == "" || strings.Contains(string(data), `\u003c`) {
		t.Fatalf("%d bytes, text %d, html %d", len(data), len(out.BodyText), len(out.BodyHTML))
	}
	// Nothing fits: an error, not a loop.
	if _, err := encodeMail(in, 10); err == nil {
		t.Fatal("a 10-byte payload limit was met")
	}
}

func graphMessage(text, html string) Message {
	return Message{ID: "id", Subject: "s", BodyText: text, BodyHTML: html}
}
