package mail

import (
	"strings"
	"testing"
)

// Every template fills all its placeholders; an unknown one is an error.
func TestTemplatesFill(t *testing.T) {
	d := templateData{Name: "Ann", Email: "ann@example.com", Link: "https://x/reset?t=1", When: "2026-01-02 03:04 UTC", Minutes: 30}
	for lang, kinds := range templates {
		for kind, tx := range kinds {
			body, err := d.fill(tx.body)
			if err != nil {
				t.Fatalf("%s/%s: %v", lang, kind, err)
			}
			if strings.Contains(body, "{{") || !strings.Contains(body, "Ann") || !strings.Contains(body, "ann@example.com") {
				t.Errorf("%s/%s: %q", lang, kind, body)
			}
			if kind == KindPasswordReset && (!strings.Contains(body, "https://x/reset?t=1") || !strings.Contains(body, " 30 ")) {
				t.Errorf("%s/%s: no link or minutes: %q", lang, kind, body)
			}
		}
	}
	for _, bad := range []string{"Hi {{.Nmae}}", "Hi {{.Name"} {
		if _, err := d.fill(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
