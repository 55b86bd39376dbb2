package translate

import (
	"context"
	"slices"
	"sort"

	"supportplatform.dev/ai/langdetect"
)

// SourceHistory remembers the source languages of a customer's recent texts, so that a short
// text whose language detection cannot tell is read in the language the customer usually gets.
// Implementations must be safe for concurrent use; a failing history never fails a translation.
type SourceHistory interface {
	// Record notes one text of the customer in lang.
	Record(ctx context.Context, customerID int64, lang string) error
	// Shares returns each language's share (0 to 1) of the customer's recent texts; empty when
	// nothing is known.
	Shares(ctx context.Context, customerID int64) (map[string]float64, error)
}

// usualBoost is what a language's whole share of a customer's recent texts adds to the score of a
// detection candidate (scores are between 0 and 1): enough to decide between weak guesses,
// not enough to overrule clear evidence such as "Merci beaucoup" from a customer writing Spanish.
const usualBoost = 0.4

// maxSources bounds the candidate source languages of one uncertain text that are considered.
const maxSources = 4

// sourcePlan is what the service decided about a request's source language.
type sourcePlan struct {
	// sources are the languages to translate from, likeliest first: one when the language was
	// given or reliably detected, "" alone when nothing could be detected.
	sources []string
	// uncertain says sources are guesses (engines that detect by themselves may prefer to).
	uncertain bool
	// same says the text is already in the target language.
	same bool
	// how names the decision for logs: "given", "detected", "candidates" or "unknown".
	how string
}

// planSources decides the source language of text. A given language is taken as is; otherwise
// a reliable detection is; otherwise the detector's candidates are ranked, boosted by the
// customer's usual languages, and restricted to the target itself and the languages some route
// leads from.
func (s *Service) planSources(ctx context.Context, pl *planner, customerID int64, given, text, target string) sourcePlan {
	if given != "" {
		s.record(ctx, customerID, given)
		return sourcePlan{sources: []string{given}, same: given == target, how: "given"}
	}
	det := langdetect.DetectText(text)
	if det.Lang == "" {
		return sourcePlan{sources: []string{""}, uncertain: true, how: "unknown"}
	}
	if det.Reliable {
		s.record(ctx, customerID, det.Lang)
		return sourcePlan{sources: []string{det.Lang}, same: det.Lang == target, how: "detected"}
	}

	shares := s.shares(ctx, customerID)
	ranked := s.rankCandidates(ctx, pl, text, target, shares)
	var sources []string
	for _, lang := range ranked {
		if lang == target || pl.servable(ctx, lang, target) {
			sources = append(sources, lang)
			if len(sources) == maxSources {
				break
			}
		}
	}
	if len(sources) == 0 {
		// Nothing better is known: the guess stands, and the error will name it.
		return sourcePlan{sources: []string{det.Lang}, uncertain: true, same: det.Lang == target, how: "detected"}
	}
	if sources[0] == target {
		return sourcePlan{sources: sources[:1], same: true, how: "candidates"}
	}
	sources = slices.DeleteFunc(sources, func(l string) bool { return l == target })
	return sourcePlan{sources: sources, uncertain: true, how: "candidates"}
}

// rankCandidates orders the languages text may be in, likeliest first. The detector ranks the
// languages the providers are known to translate (plus the target and the customer's usual
// ones); when some provider cannot list its pairs it may serve any language, so the detector's
// unrestricted candidates join in.
func (s *Service) rankCandidates(ctx context.Context, pl *planner, text, target string, shares map[string]float64) []string {
	among, complete := pl.languages(ctx)
	among = append(among, target)
	for l := range shares {
		among = append(among, l)
	}
	score := map[string]float64{}
	var order []string
	add := func(cs []langdetect.Candidate) {
		for _, c := range cs {
			if _, ok := score[c.Lang]; !ok {
				order = append(order, c.Lang)
			}
			score[c.Lang] = max(score[c.Lang], c.Score)
		}
	}
	add(langdetect.DetectCandidates(text, among...))
	if !complete {
		add(langdetect.DetectCandidates(text))
	}
	for l := range score {
		score[l] += usualBoost * shares[l]
	}
	sort.SliceStable(order, func(i, j int) bool { return score[order[i]] > score[order[j]] })
	return order
}

// record notes a language the customer's text was certainly in.
func (s *Service) record(ctx context.Context, customerID int64, lang string) {
	if s.history == nil {
		return
	}
	if err := s.history.Record(ctx, customerID, lang); err != nil {
		s.log.WarnContext(ctx, "translation source history write failed", "err", err)
	}
}

func (s *Service) shares(ctx context.Context, customerID int64) map[string]float64 {
	if s.history == nil {
		return nil
	}
	m, err := s.history.Shares(ctx, customerID)
	if err != nil {
		s.log.WarnContext(ctx, "translation source history read failed", "err", err)
		return nil
	}
	return m
}
