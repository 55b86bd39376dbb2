// Package translate is the translation service's domain: it validates requests, detects the
// source language, picks an engine per language pair from an ordered provider chain, caches
// results, renders HTML output safely, and answers the likely language of a location. It knows
// nothing of HTTP.
package translate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"supportplatform.dev/ai/langcode"
	"supportplatform.dev/ai/llmtranslate"
	"supportplatform.dev/ai/mt"
)

// MaxSourceChars is the longest sourceText accepted, in Unicode characters (code points). Support
// messages are far shorter; the cap keeps one request from occupying an engine (an LLM reply of
// 10,000 characters already takes a minute on CPU) and bounds the cost of a hosted model call.
const MaxSourceChars = 10_000

// DefaultCacheTTL is used when Config.CacheTTL is zero. Translations of a given text by a given
// engine do not change, so the TTL only bounds how much the cache holds.
const DefaultCacheTTL = 7 * 24 * time.Hour

// Config wires a Service.
type Config struct {
	// Providers in order of preference; see OrderProviders.
	Providers []mt.Translator
	// Cache may be nil (no caching).
	Cache    Cache
	CacheTTL time.Duration
	// Refiner may be nil: DetectLanguage then answers from the tables alone.
	Refiner LocationRefiner
	// History may be nil: short texts are then read without the customer's usual languages.
	History SourceHistory
	// Metrics may be nil.
	Metrics *Metrics
	Logger  *slog.Logger
}

// Service is the domain. It is safe for concurrent use.
type Service struct {
	providers []mt.Translator
	cache     Cache
	ttl       time.Duration
	refiner   LocationRefiner
	history   SourceHistory
	metrics   *Metrics
	log       *slog.Logger
}

// New builds a Service.
func New(cfg Config) *Service {
	s := &Service{
		providers: cfg.Providers,
		cache:     cfg.Cache,
		ttl:       cfg.CacheTTL,
		refiner:   cfg.Refiner,
		history:   cfg.History,
		metrics:   cfg.Metrics,
		log:       cfg.Logger,
	}
	if s.ttl <= 0 {
		s.ttl = DefaultCacheTTL
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// OrderProviders selects engines by name in the order given by a comma-separated list such as
// "apertium,libretranslate,openai" (case and spaces ignored). Every name must belong to one of
// engines and appear once, so that a typo fails at start-up instead of silently dropping an
// engine. Engines that are not configured can be listed: they serve no pair.
func OrderProviders(order string, engines ...mt.Translator) ([]mt.Translator, error) {
	byName := map[string]mt.Translator{}
	var known []string
	for _, e := range engines {
		byName[strings.ToLower(e.Name())] = e
		known = append(known, e.Name())
	}
	var out []mt.Translator
	seen := map[string]bool{}
	for _, raw := range strings.Split(order, ",") {
		name := strings.ToLower(strings.TrimSpace(raw))
		if name == "" {
			continue
		}
		e, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("unknown translation provider %q (known: %s)", name, strings.Join(known, ", "))
		}
		if seen[name] {
			return nil, fmt.Errorf("translation provider %q listed twice", name)
		}
		seen[name] = true
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, errors.New("no translation provider listed")
	}
	return out, nil
}

// Request is one translation request.
type Request struct {
	// CustomerID is the tenant; its cache entries and language history are its own.
	CustomerID int64
	SourceText string
	// SourceLang is the ISO 639-1 or 639-3 code of the text's language, or "" to detect it.
	SourceLang string
	TargetLang string
}

// Translate translates plain text into the target language. The text is treated as characters
// only: markup in it is sent to the engine and returned as the engine gives it back. Text
// already in the target language, or holding no words, comes back unchanged.
//
// Without a source language, a text whose language detection cannot tell (a line or two) is
// translated from the likeliest candidate language a provider serves, the customer's usual
// languages weighing in. A pair no provider serves directly goes through a pivot language
// (English first); the answer does not show it.
func (s *Service) Translate(ctx context.Context, req Request) (string, error) {
	source, target, err := validateTranslation(req)
	if err != nil {
		return "", err
	}
	key := CacheKey(req.CustomerID, req.SourceText, source, target, ModePlain)
	if out, ok := s.cached(ctx, key); ok {
		return out, nil
	}
	if !hasLetters(req.SourceText) {
		return req.SourceText, nil
	}
	return s.translateSegments(ctx, req.CustomerID, source, req.SourceText, target, key, []string{req.SourceText},
		func(out []string) (string, error) { return out[0], nil })
}

// validateTranslation checks a request and returns its normalised source ("" to detect) and
// target languages.
func validateTranslation(req Request) (string, string, error) {
	var fields []FieldError
	sourceText := req.SourceText
	switch {
	case sourceText == "":
		fields = append(fields, FieldError{"sourceText", "sourceText is required"})
	case !utf8.ValidString(sourceText):
		fields = append(fields, FieldError{"sourceText", "sourceText must be valid UTF-8 text"})
	case strings.TrimSpace(sourceText) == "":
		fields = append(fields, FieldError{"sourceText", "sourceText must not be blank"})
	default:
		if n := utf8.RuneCountInString(sourceText); n > MaxSourceChars {
			fields = append(fields, FieldError{"sourceText",
				fmt.Sprintf("sourceText must be at most %d characters long (got %d)", MaxSourceChars, n)})
		}
	}
	var source string
	if req.SourceLang != "" {
		if src, err := langcode.Normalize(req.SourceLang); err != nil {
			fields = append(fields, FieldError{"sourceLang",
				fmt.Sprintf("sourceLang must be an ISO 639-1 or ISO 639-3 language code, got %q", req.SourceLang)})
		} else {
			source = src
		}
	}
	var target string
	if strings.TrimSpace(req.TargetLang) == "" {
		fields = append(fields, FieldError{"targetLang", "targetLang is required"})
	} else if t, err := langcode.Normalize(req.TargetLang); err != nil {
		fields = append(fields, FieldError{"targetLang",
			fmt.Sprintf("targetLang must be an ISO 639-1 or ISO 639-3 language code, got %q", req.TargetLang)})
	} else {
		target = t
	}
	if len(fields) > 0 {
		return "", "", invalid(fields...)
	}
	return source, target, nil
}

func hasLetters(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

// maxRoutes bounds the routes one request tries, so that a short text with several candidate
// languages cannot keep the engines busy with one failing attempt after another.
const maxRoutes = 4

// translateSegments translates one request. segments are the pieces an engine translates (one
// for plain text, one per paragraph or text node for HTML); detectText is the text the source
// language is detected on when given is ""; assemble turns the translations into the final
// output, which is what the cache stores under cacheKey (the request's CacheKey).
func (s *Service) translateSegments(ctx context.Context, customerID int64, given, detectText, target, cacheKey string,
	segments []string, assemble func([]string) (string, error)) (string, error) {

	// Only the words go to the engine: surrounding white space is put back afterwards (engines
	// trim it), and segments without letters ("42", "—") are kept as they are.
	var todo []int
	var core []string
	lead := make([]string, len(segments))
	trail := make([]string, len(segments))
	for i, seg := range segments {
		c := strings.TrimSpace(seg)
		if !hasLetters(c) {
			continue
		}
		start := strings.Index(seg, c)
		lead[i], trail[i] = seg[:start], seg[start+len(c):]
		todo = append(todo, i)
		core = append(core, c)
	}
	if len(todo) == 0 {
		return assemble(segments)
	}

	pl := s.newPlanner()
	plan := s.planSources(ctx, pl, customerID, given, detectText, target)
	if plan.same {
		return assemble(segments)
	}
	s.metrics.source(plan.how)
	routes := pl.routes(ctx, plan.sources, target, plan.uncertain)
	if len(routes) == 0 {
		if len(pl.errs) > 0 {
			return "", upstream("translation providers are unavailable", errors.Join(pl.errs...))
		}
		return "", unsupported(mt.Pair{Source: plan.sources[0], Target: target})
	}
	if len(routes) > maxRoutes {
		routes = routes[:maxRoutes]
	}

	var errs []error
	for _, r := range routes {
		got, err := s.runRoute(ctx, r, core)
		if err != nil {
			if ctx.Err() != nil {
				return "", upstream("translation was cancelled", ctx.Err())
			}
			errs = append(errs, err)
			continue
		}
		if r.pivot != "" {
			s.log.InfoContext(ctx, "translated through a pivot language", "source", r.source, "pivot", r.pivot,
				"target", target, "route", r.String())
			s.metrics.pivot(r.source, r.pivot, target)
		}
		if plan.how == "candidates" {
			s.log.DebugContext(ctx, "source language chosen among candidates", "source", r.source,
				"candidates", strings.Join(plan.sources, ","), "target", target)
		}
		merged := append([]string(nil), segments...)
		for k, i := range todo {
			merged[i] = lead[i] + strings.TrimSpace(got[k]) + trail[i]
		}
		out, err := assemble(merged)
		if err != nil {
			return "", upstream("translation output could not be assembled", err)
		}
		s.store(ctx, cacheKey, out)
		return out, nil
	}
	if notTranslations(errs) {
		return "", notTranslated(errors.Join(errs...))
	}
	return "", upstream("every translation provider for "+routes[0].String()+" failed", errors.Join(errs...))
}

// notTranslations reports whether every provider answered, but with
// something that is not a translation of the text (a model that obeyed
// instructions in it, or replied to it): the text is what failed, not a
// provider.
func notTranslations(errs []error) bool {
	for _, err := range errs {
		if !errors.Is(err, llmtranslate.ErrNotTranslation) {
			return false
		}
	}
	return len(errs) > 0
}

// runRoute translates texts along r, each leg through its providers in order until one answers.
func (s *Service) runRoute(ctx context.Context, r route, texts []string) ([]string, error) {
	for _, l := range r.legs {
		var errs []error
		var done bool
		for _, p := range l.providers {
			got, err := p.Translate(ctx, l.pair, texts)
			if err == nil && len(got) != len(texts) {
				err = fmt.Errorf("%s returned %d translations for %d texts", p.Name(), len(got), len(texts))
			}
			if err == nil {
				for _, g := range got {
					if strings.TrimSpace(g) == "" {
						err = fmt.Errorf("%s returned an empty translation", p.Name())
						break
					}
				}
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				s.log.WarnContext(ctx, "translation provider failed", "provider", p.Name(), "pair", l.pair.String(), "err", err)
				errs = append(errs, fmt.Errorf("%s: %w", p.Name(), err))
				continue
			}
			texts, done = got, true
			break
		}
		if !done {
			return nil, errors.Join(errs...)
		}
	}
	return texts, nil
}

// cached returns a stored answer. A failing cache is a miss, never an error.
func (s *Service) cached(ctx context.Context, key string) (string, bool) {
	if s.cache == nil {
		return "", false
	}
	val, ok, err := s.cache.Get(ctx, key)
	if err != nil {
		s.log.WarnContext(ctx, "translation cache read failed", "err", err)
		return "", false
	}
	return val, ok
}

func (s *Service) store(ctx context.Context, key, val string) {
	if s.cache == nil {
		return
	}
	if err := s.cache.Set(ctx, key, val, s.ttl); err != nil {
		s.log.WarnContext(ctx, "translation cache write failed", "err", err)
	}
}
