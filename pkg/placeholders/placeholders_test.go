package placeholders

import (
	"strings"
	"testing"
)

func TestFill(t *testing.T) {
	values := map[string]string{"Name": "Ada", "Link": "https://x.example/?a=1&b=2"}
	lookup := func(k string) (string, bool) { v, ok := values[k]; return v, ok }
	got, err := Fill("Hi {{.Name}}, open {{ .Link }}.{{.Name}}", lookup)
	if err != nil || got != "Hi Ada, open https://x.example/?a=1&b=2.Ada" {
		t.Fatalf("Fill = %q, %v", got, err)
	}
	if got, err := Fill("no placeholders", lookup); err != nil || got != "no placeholders" {
		t.Fatalf("Fill = %q, %v", got, err)
	}
	for _, bad := range []string{"{{.Missing}}", "{{Name}}", "{{.Name", "a {{if .Name}}b{{end}}"} {
		if _, err := Fill(bad, lookup); err == nil || !strings.Contains(err.Error(), "placeholder") {
			t.Errorf("Fill(%q): %v, want a placeholder error", bad, err)
		}
	}
}
