package offline

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"supportplatform.dev/ai/langdetect"
	"supportplatform.dev/ai/mt"
)

// errNoTranslator is returned by translate when the engine has none.
var errNoTranslator = errors.New("offline: no translator")

// pivots are the languages a translation may go through when the
// Translator has no direct pair (Apertium here has fr->es and es->en but no
// fr->en).
var pivots = []string{"es", "en"}

// toEnglish translates text to English when it is detected in another
// language; false when it is English, undetected, or cannot be translated.
func (e *Engine) toEnglish(ctx context.Context, text string) (string, bool) {
	if e.tr == nil {
		return "", false
	}
	lang := langdetect.DetectText(text).Lang
	if lang == "" || lang == "en" {
		return "", false
	}
	out, err := e.translate(ctx, lang, "en", []string{text})
	if err != nil {
		return "", false
	}
	return out[0], true
}

// translate translates texts from src to dst directly, or through one pivot
// language, caching the result.
func (e *Engine) translate(ctx context.Context, src, dst string, texts []string) ([]string, error) {
	if e.tr == nil {
		return nil, errNoTranslator
	}
	if src == dst {
		return texts, nil
	}
	h := newHasher(e.seed, "translation")
	h.add(src, dst)
	for _, t := range texts {
		h.add(t)
	}
	key := h.sum()
	if out, ok := e.translations.get(key); ok {
		return out, nil
	}
	route, err := e.route(ctx, src, dst)
	if err != nil {
		return nil, err
	}
	out := texts
	for i := 0; i+1 < len(route); i++ {
		if out, err = e.tr.Translate(ctx, mt.Pair{Source: route[i], Target: route[i+1]}, out); err != nil {
			return nil, err
		}
		if len(out) != len(texts) {
			return nil, fmt.Errorf("offline: translator %s returned %d texts for %d", e.tr.Name(), len(out), len(texts))
		}
	}
	for i := range out {
		out[i] = cleanMT(out[i])
	}
	var size int64
	for i := range out {
		size += int64(len(texts[i]) + len(out[i]))
	}
	e.translations.put(key, out, size)
	return out, nil
}

// route is the chain of languages from src to dst the Translator serves.
func (e *Engine) route(ctx context.Context, src, dst string) ([]string, error) {
	if ok, err := e.tr.Supports(ctx, mt.Pair{Source: src, Target: dst}); err != nil {
		return nil, err
	} else if ok {
		return []string{src, dst}, nil
	}
	for _, p := range pivots {
		if p == src || p == dst {
			continue
		}
		a, err := e.tr.Supports(ctx, mt.Pair{Source: src, Target: p})
		if err != nil {
			return nil, err
		}
		b, err := e.tr.Supports(ctx, mt.Pair{Source: p, Target: dst})
		if err != nil {
			return nil, err
		}
		if a && b {
			return []string{src, p, dst}, nil
		}
	}
	return nil, fmt.Errorf("offline: %s->%s: %w", src, dst, mt.ErrUnsupportedPair)
}

// apertiumMarks are the marks Apertium puts before a word it could not
// translate (*), generate (#) or transfer (@); an address such as
// ada@example.com keeps its @.
var apertiumMarks = regexp.MustCompile(`(^|[\s(¿¡"'])[*#@]+`)

func cleanMT(s string) string { return apertiumMarks.ReplaceAllString(s, "$1") }
