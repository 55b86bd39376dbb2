package main

import (
	"context"
	"io"
	"os"
	"testing"

	"supportplatform.dev/pkg/config"
)

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	doc, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if missing := config.Undocumented(string(doc), Config{}); len(missing) > 0 {
		t.Fatalf("README config table lacks %v", missing)
	}
}

func TestRunRejectsUnknownProvider(t *testing.T) {
	env := map[string]string{"TRANSLATION_PROVIDERS": "apertium,babelfish"}
	if err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard); err == nil {
		t.Fatal("unknown provider accepted")
	}
}
