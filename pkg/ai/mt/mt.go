// Package mt defines the contract between the translation service and its machine-translation
// engines (Apertium, LibreTranslate, an LLM), so that the service can order them into a fallback
// chain without knowing how each one works.
package mt

import (
	"context"
	"errors"
)

// Pair is a translation direction. Codes are normalised by package langcode (ISO 639-1 when the
// language has one, else ISO 639-3).
type Pair struct {
	// Source is "" when the source language could not be detected; engines that cannot detect it
	// themselves do not serve such a pair.
	Source string
	Target string
	// SourceUncertain says Source is a guess from a short or ambiguous text. An engine that can
	// detect the language itself may prefer to; one that cannot uses Source anyway.
	SourceUncertain bool
}

// String names the pair as "en->es", or "auto->es" when the source is unknown.
func (p Pair) String() string {
	src := p.Source
	if src == "" {
		src = "auto"
	}
	return src + "->" + p.Target
}

// Translator is one engine.
type Translator interface {
	// Name identifies the engine in configuration ("apertium", "libretranslate", "openai"),
	// in logs and in cache keys.
	Name() string
	// Supports reports whether the engine can translate the pair. An error means the engine could
	// not tell (for example its server is down), not that the answer is no.
	Supports(ctx context.Context, p Pair) (bool, error)
	// Translate translates each text independently and returns the results in the same order.
	// Taking a batch lets engines that pay a high cost per call (process start, HTTP round trip)
	// translate the text nodes of one document together.
	Translate(ctx context.Context, p Pair, texts []string) ([]string, error)
}

// ErrUnsupportedPair is returned by Translate for a pair the engine does not serve.
var ErrUnsupportedPair = errors.New("translation pair not supported")
