package tickets

import (
	"regexp"
	"strings"
	"testing"
)

const (
	secretA = "0123456789abcdef0123456789abcdef-a"
	secretB = "0123456789abcdef0123456789abcdef-b"
)

func mustRefs(t *testing.T, current string, previous ...string) *Refs {
	t.Helper()
	r, err := NewRefs(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRefFormat(t *testing.T) {
	r := mustRefs(t, secretA)
	ref := r.Ref(4, 1234)
	if !regexp.MustCompile(`^1234-[0-9A-HJKMNP-TV-Z]{10}$`).MatchString(ref) {
		t.Fatalf("ref %q", ref)
	}
	if r.Ref(4, 1234) != ref {
		t.Fatal("not stable")
	}
	// The tag depends on the customer, the ticket and the secret.
	for _, other := range []string{r.Ref(5, 1234), r.Ref(4, 1235), mustRefs(t, secretB).Ref(4, 1234)} {
		if other[strings.IndexByte(other, '-'):] == ref[4:] {
			t.Fatalf("%q has the tag of %q", other, ref)
		}
	}
}

func TestRefFind(t *testing.T) {
	r := mustRefs(t, secretA)
	ref := r.Ref(4, 1234)
	rotated := mustRefs(t, secretB, secretA)
	tests := []struct {
		name    string
		refs    *Refs
		subject string
		want    int64
	}{
		{"signed", r, "Re: Printer [#" + ref + "]", 1234},
		{"lower case tag", r, "AW: Printer [#" + strings.ToLower(ref) + "]", 1234},
		{"bare id is no reference", r, "Re: Printer [#1234]", 0},
		{"wrong tag", r, "Re: Printer [#1234-" + strings.Repeat("A", RefTagLen) + "]", 0},
		{"another ticket's tag", r, "Re: [#1235-" + ref[5:] + "]", 0},
		{"another customer's", r, "Re: [#" + mustRefs(t, secretA).Ref(5, 1234) + "]", 0},
		{"first valid wins", r, "Re: [#1234] [#999-0000000000] [#" + ref + "]", 1234},
		{"previous secret accepted after rotation", rotated, "Re: [#" + ref + "]", 1234},
		{"a removed secret is not", mustRefs(t, secretB), "Re: [#" + ref + "]", 0},
		{"no refs configured", nil, "Re: [#" + ref + "]", 0},
		{"short tag", r, "Re: [#" + ref[:len(ref)-1] + "]", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.refs.Find(4, tc.subject); got != tc.want {
				t.Fatalf("Find(%q) = %d, want %d", tc.subject, got, tc.want)
			}
		})
	}
}

func TestNewRefsNeedsLongSecrets(t *testing.T) {
	if _, err := NewRefs(""); err == nil {
		t.Fatal("empty secret accepted")
	}
	if _, err := NewRefs("short"); err == nil {
		t.Fatal("short secret accepted")
	}
	if _, err := NewRefs(secretA, "short"); err == nil {
		t.Fatal("short previous secret accepted")
	}
	if _, err := NewRefs(secretA, ""); err != nil {
		t.Fatalf("no previous secret: %v", err)
	}
}

// The subject-reference rule: only the ticket's end user and the people
// already on its mail thread may join it by naming it.
func TestMayJoinBySubject(t *testing.T) {
	p := Participants{EndUser: "ada@example.com", Thread: []string{"ada@example.com", "support@shop.example", "Bob@Example.com"}}
	tests := []struct {
		name    string
		sender  string
		mailbox string
		p       Participants
		want    bool
	}{
		{"the end user", "ada@example.com", "support@shop.example", p, true},
		{"the end user, other case", "ADA@example.com", "support@shop.example", p, true},
		{"in Cc of a mail of the thread", "bob@example.com", "support@shop.example", p, true},
		{"a stranger", "mallory@evil.example", "support@shop.example", p, false},
		{"the mailbox itself is in every To", "support@shop.example", "support@shop.example", p, false},
		{"end user without mails yet", "ada@example.com", "", Participants{EndUser: "ada@example.com"}, true},
		{"end user without address, stranger", "mallory@evil.example", "", Participants{}, false},
		{"empty sender", "", "", Participants{Thread: []string{""}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MayJoinBySubject(tc.sender, tc.mailbox, tc.p); got != tc.want {
				t.Fatalf("MayJoinBySubject(%q) = %v, want %v", tc.sender, got, tc.want)
			}
		})
	}
}
