package stack

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestPrefixRegexp(t *testing.T) {
	tests := []struct {
		prefix string
		path   string
		want   bool
	}{
		{"/api/Auth", "/api/Auth/login", true},
		{"/api/Auth", "/API/AUTH/LOGIN", true},
		{"/api/Auth", "/api/auth", true},
		{"/api/Auth", "/api/auth/", true},
		{"/api/Auth", "/api/Authx", false},
		{"/api/Auth", "/v2/api/Auth", false},
		{"/api/Customers", "/api/customers/me", true},
		{"/api/Customers", "/api/CustomersExport", false},
		{"/.well-known/jwks.json", "/.well-known/jwks.json", true},
		{"/.well-known/jwks.json", "/.WELL-KNOWN/JWKS.JSON", true},
		// The dot is literal, not "any character".
		{"/.well-known/jwks.json", "/.well-known/jwksXjson", false},
		{"/api/Topics", "/api/TopicActions", false},
	}
	for _, tc := range tests {
		t.Run(tc.prefix+" "+tc.path, func(t *testing.T) {
			re := regexp.MustCompile(PrefixRegexp(tc.prefix))
			if got := re.MatchString(tc.path); got != tc.want {
				t.Errorf("%s matches %s = %v, want %v", re, tc.path, got, tc.want)
			}
		})
	}
}

func TestServiceForPath(t *testing.T) {
	tests := []struct {
		path string
		want string
	}{
		{"/api/Auth/login", "auth"},
		{"/api/customers/ME", "auth"},
		{"/.well-known/jwks.json", "auth"},
		{"/api/topicactions/7", "topics"},
		{"/api/Topics", "topics"},
		{"/API/TRANSLATIONS/translate", "translation"},
		{"/api/Nothing", ""},
		{"/API/nothing/else", ""},
		// The console is the fallback: every path outside the API's
		// namespaces, never a service's own endpoints.
		{"/", "console"},
		{"/tickets/42", "console"},
		{"/docsx", "console"},
		{"/assets/index-1.js", "console"},
		{"/docs/assets/x.js", "docs"},
		{"/.well-known/other", ""},
		{"/metrics", ""},
		{"/HEALTHZ", ""},
		{"/readyz/", ""},
	}
	for _, tc := range tests {
		svc, ok := ServiceForPath(tc.path)
		if got := svc.Name; got != tc.want || ok != (tc.want != "") {
			t.Errorf("ServiceForPath(%q) = %q, %v; want %q", tc.path, got, ok, tc.want)
		}
	}
}

// The table must be unambiguous: one owner per prefix (compared the way the
// gateway compares them), distinct names, and a rule Traefik can parse.
func TestServiceTableConsistent(t *testing.T) {
	names := map[string]bool{}
	owner := map[string]string{}
	fallbacks := 0
	for _, s := range Services {
		if names[s.Name] {
			t.Errorf("duplicate service %s", s.Name)
		}
		names[s.Name] = true
		for _, p := range s.Prefixes {
			if s.Fallback() {
				continue
			}
			if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
				t.Errorf("%s: prefix %q must start and not end with /", s.Name, p)
			}
			key := strings.ToLower(p)
			if o, ok := owner[key]; ok {
				t.Errorf("prefix %s owned by %s and %s", p, o, s.Name)
			}
			owner[key] = s.Name
		}
		if slices.Contains(s.Prefixes, "/") && !s.Fallback() {
			t.Errorf("%s: the prefix / must be a service's only one (the fallback)", s.Name)
		}
		if s.Fallback() {
			fallbacks++
		}
		if s.Routed() && strings.Count(s.Rule(), "PathRegexp(") != len(s.Prefixes) {
			t.Errorf("%s: rule %s", s.Name, s.Rule())
		}
	}
	if fallbacks > 1 {
		t.Errorf("%d fallback services; the gateway can have one", fallbacks)
	}
	if !Services[0].Bootstrap || Services[0].Name != "auth" {
		t.Errorf("auth must come first: the other services fetch its JWKS")
	}
}

func TestCallbackRule(t *testing.T) {
	svc, ok := LookupService("mailingest")
	if !ok {
		t.Fatal("no mailingest")
	}
	re := regexp.MustCompile(strings.TrimSuffix(strings.TrimPrefix(svc.CallbackRule(), "PathRegexp(`"), "`)"))
	for p, want := range map[string]bool{
		"/api/ProviderWebhook": true, "/api/providerwebhook": true, "/API/PROVIDERWEBHOOK/": true,
		"/api/ProviderWebhook/subscribe/1": false, "/api/ProviderWebhookX": false, "/x/api/ProviderWebhook": false,
	} {
		if re.MatchString(p) != want {
			t.Errorf("%s: callback %v, want %v", p, !want, want)
		}
	}
}

func TestMissing(t *testing.T) {
	built := []string{"auth", "topics"}
	for _, tc := range []struct {
		need []string
		want string
	}{
		{nil, ""},
		{[]string{"auth"}, ""},
		{[]string{"auth", "tickets", "topics", "mailingest"}, "tickets, mailingest"},
	} {
		if got := Missing(tc.need, built); got != tc.want {
			t.Errorf("Missing(%v) = %q, want %q", tc.need, got, tc.want)
		}
	}
}

func TestStaleFiles(t *testing.T) {
	root := t.TempDir()
	for rel, content := range map[string]string{"a/same.yml": "x: 1\n", "a/changed.yml": "x: 1\n"} {
		path := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := StaleFiles(root, map[string][]byte{"a/same.yml": []byte("x: 1\n"), "a/changed.yml": []byte("x: 2\n"), "b/missing.yml": []byte("")})
	if want := []string{"a/changed.yml", "b/missing.yml"}; !slices.Equal(got, want) {
		t.Fatalf("StaleFiles = %v, want %v", got, want)
	}
}
