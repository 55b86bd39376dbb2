// Package configtest holds the test check that keeps the README's config
// tables true.
package configtest

import (
	"os"
	"testing"

	"supportplatform.dev/pkg/config"
)

// RequireDocumented fails t when the README at path lacks a table row for
// any variable of cfg.
func RequireDocumented(t testing.TB, path string, cfg any) {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if missing := config.Undocumented(string(doc), cfg); len(missing) > 0 {
		t.Fatalf("the config table in %s lacks %v", path, missing)
	}
}
