package topics

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"supportplatform.dev/pkg/apperr"
)

var urlSeeds = []string{
	"https://help.example.com/billing", "HTTPS://Help.Example.COM:443/Billing?x=1#top", "http://example.com",
	"http://example.com:80/", "http://example.com:8080", "https://[2001:DB8::1]:443/a", "https://[fe80::1%25eth0]/",
	"http://user:pw@example.com/", "ftp://example.com/", "mailto:a@example.com", "/relative", "https://",
	"https://ex ample.com/", "https://example.com/a b", "https://example.com/%zz", "https://example.com/%41",
	"https://example.com/é?q=ü", "https://xn--bcher-kva.example/", "https://BÜCHER.example/", " https://example.com/ ",
	"https://example.com/\x00", "https://example.com:/", "https://example.com:0099/", "https://example.com/?",
	"https://example.com/#", "https://example.com/a/../b", "https://example.com//a", "http://%41.com/",
	"https://example.com/" + strings.Repeat("a", 2100), "",
}

// FuzzNormalizeURL: a page URL is refused with a field message, or
// normalised into an absolute http(s) URL of bounded length, without
// credentials or fragment, with a lower-case scheme and host, that is its
// own normal form (a stored pattern and a looked-up URL compare as strings).
func FuzzNormalizeURL(f *testing.F) {
	for _, s := range urlSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := NormalizeURL(raw)
		if err != nil {
			if n != "" || err.Error() == "" {
				t.Fatalf("NormalizeURL(%q) = %q, %v", raw, n, err)
			}
			return
		}
		if len(n) > MaxURLLen || !utf8.ValidString(n) {
			t.Fatalf("NormalizeURL(%q) = %q: too long or not UTF-8", raw, n)
		}
		u, perr := url.Parse(n)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Fragment != "" || strings.Contains(n, "#") || u.Path == "" || u.Scheme != strings.ToLower(u.Scheme) ||
			u.Host != strings.ToLower(u.Host) {
			t.Fatalf("NormalizeURL(%q) = %q (%+v, %v)", raw, n, u, perr)
		}
		again, err := NormalizeURL(n)
		if err != nil || again != n {
			t.Fatalf("not idempotent: NormalizeURL(%q) = %q; again %q, %v", raw, n, again, err)
		}
	})
}

// FuzzPageMappingInput: a page mapping request is a 400 naming its fields,
// or a mapping whose pattern is normalised like a looked-up URL and whose
// match type is one of the two.
func FuzzPageMappingInput(f *testing.F) {
	for i, s := range urlSeeds {
		f.Add(int64(i-1), s, []string{"exact", "Prefix", " prefix ", "", "regex"}[i%5])
	}
	f.Fuzz(func(t *testing.T, topicID int64, pattern, matchType string) {
		m, err := PageMappingInput{TopicID: &topicID, URLPattern: pattern, MatchType: matchType}.Normalize()
		if err != nil {
			ae, ok := err.(*apperr.Error)
			if !ok || ae.Code != apperr.Invalid || len(ae.Fields) == 0 {
				t.Fatalf("error %v is not a 400 naming fields", err)
			}
			for k := range ae.Fields {
				if k != "topicID" && k != "urlPattern" && k != "matchType" {
					t.Fatalf("unknown field %q", k)
				}
			}
			return
		}
		if m.TopicID != topicID || topicID <= 0 || (m.MatchType != MatchExact && m.MatchType != MatchPrefix) {
			t.Fatalf("accepted %d %q as %+v", topicID, matchType, m)
		}
		if n, err := NormalizeURL(m.URLPattern); err != nil || n != m.URLPattern {
			t.Fatalf("pattern %q is not normal: %q, %v", m.URLPattern, n, err)
		}
	})
}

// FuzzParseTopicSort: a sort is one of the four orders, each read back from
// its own spelling, or a 400 naming sort.
func FuzzParseTopicSort(f *testing.F) {
	for _, s := range []string{"", "name", "-name", "topicID", "-topicid", "NAME", " -name ", "--name", "-", "id", "name,-topicID"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := ParseTopicSort(raw)
		if err != nil {
			ae, ok := err.(*apperr.Error)
			if !ok || ae.Code != apperr.Invalid || ae.Fields["sort"] == "" || s != (TopicSort{}) {
				t.Fatalf("ParseTopicSort(%q) = %+v, %v", raw, s, err)
			}
			return
		}
		spelled := "topicID"
		if s.ByName {
			spelled = "name"
		}
		if s.Desc {
			spelled = "-" + spelled
		}
		if back, err := ParseTopicSort(spelled); err != nil || back != s {
			t.Fatalf("%q -> %+v; %q -> %+v, %v", raw, s, spelled, back, err)
		}
		if !strings.EqualFold(strings.TrimSpace(raw), spelled) && raw != "" && strings.TrimSpace(raw) != "" {
			t.Fatalf("%q accepted as %q", raw, spelled)
		}
	})
}
