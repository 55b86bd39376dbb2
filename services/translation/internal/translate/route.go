package translate

import (
	"context"
	"fmt"
	"slices"

	"supportplatform.dev/ai/mt"
)

// pairLister is implemented by engines that can list the pairs they serve (Apertium); it lets
// the service find pivot languages other than English and rank detection candidates among the
// languages it can actually translate.
type pairLister interface {
	Pairs(ctx context.Context) ([]mt.Pair, error)
}

// leg is one translation step and the providers that serve it, in order of preference.
type leg struct {
	pair      mt.Pair
	providers []mt.Translator
}

// route is one way to translate from a source language to the target: one leg when a provider
// serves the pair, two through a pivot language otherwise.
type route struct {
	source string
	pivot  string // "" for a direct route
	legs   []leg
}

func (r route) String() string {
	if r.pivot == "" {
		return r.legs[0].pair.String()
	}
	return fmt.Sprintf("%s->%s->%s", r.source, r.pivot, r.legs[1].pair.Target)
}

// planner answers which providers serve which pairs, asking each provider at most once per pair
// and request; providers that cannot tell are remembered with their error.
type planner struct {
	s       *Service
	known   map[mt.Pair][]mt.Translator
	listed  map[mt.Translator][]mt.Pair
	errs    []error
	errSeen map[mt.Translator]bool
}

func (s *Service) newPlanner() *planner {
	return &planner{s: s, known: map[mt.Pair][]mt.Translator{}, listed: map[mt.Translator][]mt.Pair{},
		errSeen: map[mt.Translator]bool{}}
}

// serving returns the providers that serve pair, in order. A provider that cannot tell (its
// server is down) is skipped and its error kept, so that "nobody serves this pair" can be told
// apart from "nobody could be asked".
func (pl *planner) serving(ctx context.Context, pair mt.Pair) []mt.Translator {
	if got, ok := pl.known[pair]; ok {
		return got
	}
	var out []mt.Translator
	for _, p := range pl.s.providers {
		ok, err := p.Supports(ctx, pair)
		if err != nil {
			if !pl.errSeen[p] {
				pl.errSeen[p] = true
				pl.s.log.WarnContext(ctx, "translation provider cannot tell its pairs", "provider", p.Name(), "err", err)
				pl.errs = append(pl.errs, fmt.Errorf("%s: %w", p.Name(), err))
			}
			continue
		}
		if ok {
			out = append(out, p)
		}
	}
	pl.known[pair] = out
	return out
}

func (pl *planner) serves(ctx context.Context, p mt.Translator, pair mt.Pair) bool {
	return slices.Contains(pl.serving(ctx, pair), p)
}

// pairs lists what a provider serves, or nil when it cannot list its pairs.
func (pl *planner) pairs(ctx context.Context, p mt.Translator) []mt.Pair {
	if got, ok := pl.listed[p]; ok {
		return got
	}
	var out []mt.Pair
	if l, ok := p.(pairLister); ok {
		var err error
		if out, err = l.Pairs(ctx); err != nil {
			pl.s.log.WarnContext(ctx, "translation provider cannot list its pairs", "provider", p.Name(), "err", err)
			out = nil
		}
	}
	pl.listed[p] = out
	return out
}

// languages returns every language the listing providers translate from or into, and whether
// every provider could list its pairs (when not, other languages may be served too).
func (pl *planner) languages(ctx context.Context) ([]string, bool) {
	seen := map[string]bool{}
	var out []string
	complete := true
	for _, p := range pl.s.providers {
		if _, ok := p.(pairLister); !ok {
			complete = false
			continue
		}
		for _, pair := range pl.pairs(ctx, p) {
			for _, l := range []string{pair.Source, pair.Target} {
				if l != "" && !seen[l] {
					seen[l] = true
					out = append(out, l)
				}
			}
		}
	}
	return out, complete
}

// pivots returns the pivot languages to try from src to dst: English first, then, in
// alphabetical order, every language some listing provider translates src into and some
// translates into dst.
func (pl *planner) pivots(ctx context.Context, src, dst string) []string {
	into, from := map[string]bool{}, map[string]bool{}
	for _, p := range pl.s.providers {
		for _, pair := range pl.pairs(ctx, p) {
			if pair.Source == src {
				into[pair.Target] = true
			}
			if pair.Target == dst {
				from[pair.Source] = true
			}
		}
	}
	var rest []string
	for l := range into {
		if from[l] && l != "en" {
			rest = append(rest, l)
		}
	}
	slices.Sort(rest)
	var out []string
	for _, l := range append([]string{"en"}, rest...) {
		if l != src && l != dst {
			out = append(out, l)
		}
	}
	return out
}

// providerRoute is how provider p alone serves src->dst: directly, else through the first pivot
// it serves both ways, as LibreTranslate does internally. The legs list p only; ok is false when
// p cannot serve the pair either way.
func (pl *planner) providerRoute(ctx context.Context, p mt.Translator, src, dst string, uncertain bool) (route, bool) {
	direct := mt.Pair{Source: src, Target: dst, SourceUncertain: uncertain}
	if pl.serves(ctx, p, direct) {
		return route{source: src, legs: []leg{{pair: direct, providers: []mt.Translator{p}}}}, true
	}
	if src == "" {
		return route{}, false
	}
	for _, piv := range pl.pivots(ctx, src, dst) {
		in := mt.Pair{Source: src, Target: piv, SourceUncertain: uncertain}
		out := mt.Pair{Source: piv, Target: dst}
		if pl.serves(ctx, p, in) && pl.serves(ctx, p, out) {
			return route{source: src, pivot: piv, legs: []leg{
				{pair: in, providers: []mt.Translator{p}}, {pair: out, providers: []mt.Translator{p}}}}, true
		}
	}
	return route{}, false
}

// mixedRoute chains two providers through a pivot when no single provider serves src->dst; each
// leg falls back along the providers that serve it.
func (pl *planner) mixedRoute(ctx context.Context, src, dst string, uncertain bool) (route, bool) {
	if src == "" {
		return route{}, false
	}
	for _, piv := range pl.pivots(ctx, src, dst) {
		in := mt.Pair{Source: src, Target: piv, SourceUncertain: uncertain}
		out := mt.Pair{Source: piv, Target: dst}
		a, b := pl.serving(ctx, in), pl.serving(ctx, out)
		if len(a) > 0 && len(b) > 0 {
			return route{source: src, pivot: piv, legs: []leg{{pair: in, providers: a}, {pair: out, providers: b}}}, true
		}
	}
	return route{}, false
}

// routes lists the ways to translate into dst from the given sources (likeliest first), in the
// order they are tried: each provider in order with the first source it can serve (directly or
// through a pivot of its own), then routes whose legs need different providers. A provider is
// preferred over a likelier source: the sources of an uncertain text are guesses, while the
// provider order is the operator's choice.
func (pl *planner) routes(ctx context.Context, sources []string, dst string, uncertain bool) []route {
	var out []route
	for _, p := range pl.s.providers {
		for _, src := range sources {
			if r, ok := pl.providerRoute(ctx, p, src, dst, uncertain); ok {
				out = append(out, r)
				break
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, src := range sources {
		if r, ok := pl.mixedRoute(ctx, src, dst, uncertain); ok {
			return append(out, r)
		}
	}
	return nil
}

// servable reports whether some route leads from src to dst.
func (pl *planner) servable(ctx context.Context, src, dst string) bool {
	for _, p := range pl.s.providers {
		if _, ok := pl.providerRoute(ctx, p, src, dst, true); ok {
			return true
		}
	}
	_, ok := pl.mixedRoute(ctx, src, dst, true)
	return ok
}
