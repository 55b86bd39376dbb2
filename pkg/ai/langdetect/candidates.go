package langdetect

import (
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/abadojack/whatlanggo"

	"supportplatform.dev/ai/langcode"
)

// Candidate is one language a text may be written in.
type Candidate struct {
	// Lang is a normalised ISO 639 code.
	Lang string
	// Score is between 0 and 1; higher is likelier. Scores order the candidates of one text and
	// mean nothing across texts.
	Score float64
}

// marks are signs that, among the languages with common words, only one writes: Spanish
// opens questions and exclamations upside down, Catalan writes the "l·l" of "cel·la", Portuguese
// nasal vowels carry a tilde.
var marks = map[string][]string{
	"es": {"¿", "¡", "ñ"},
	"ca": {"l·l"},
	"pt": {"ã", "õ"},
}

// maxTrigramCandidates bounds how many languages the trigram ranking contributes when the caller
// names none: every further rank costs one more pass over the script's profiles.
const maxTrigramCandidates = 6

// DetectCandidates returns the languages text may be written in, likeliest first. It is meant for
// texts DetectText cannot call reliably (a line or two), where the best guess is often wrong but
// the right language is usually among the next few.
//
// When among is not empty, only those languages are ranked (they are normalised; invalid codes
// are ignored), which both speeds ranking up and ranks languages the trigram ranking would place
// far down. Otherwise the likeliest few are returned. The first candidate is DetectText's answer
// whenever that answer is a candidate at all, so that both functions agree on the best guess.
//
// A score mixes four kinds of evidence: the rank of the language in the trigram ranking (worth
// up to 0.4), its share of the text's common support words (up to 0.4, or 0.8 for a language
// the trigram profiles lack), signs only it writes (0.3: "¿", "l·l", "ã") and being
// DetectText's answer (0.2 times its confidence plus 0.1). Scores are capped at 1.
func DetectCandidates(text string, among ...string) []Candidate {
	best := DetectText(text)
	if best.Lang == "" {
		return nil
	}
	want := map[string]bool{}
	for _, a := range among {
		if n := normaliseCode(a); n != "" {
			want[n] = true
		}
	}
	allowed := func(lang string) bool { return len(want) == 0 || want[lang] }

	script := whatlanggo.DetectScript(text)
	if script != unicode.Latin && script != unicode.Cyrillic {
		// Scripts other than Latin and Cyrillic are decided by DetectText's own rules.
		if !allowed(best.Lang) {
			return nil
		}
		return []Candidate{{Lang: best.Lang, Score: best.Confidence}}
	}

	score := map[string]float64{}
	ranked := trigramRanking(text, want)
	for i, lang := range ranked {
		score[lang] += 0.4 * float64(len(ranked)-i) / float64(len(ranked))
	}
	hits := commonWordHits(text)
	top := 0
	for _, n := range hits {
		top = max(top, n)
	}
	for lang, n := range hits {
		if allowed(lang) && top > 0 {
			w := 0.4
			if _, ok := profileLang(lang); !ok {
				// A language the trigram profiles lack (Catalan) is judged on its words alone.
				w = 0.8
			}
			score[lang] += w * float64(n) / float64(top)
		}
	}
	lower := strings.ToLower(text)
	for lang, signs := range marks {
		if allowed(lang) && slices.ContainsFunc(signs, func(m string) bool { return strings.Contains(lower, m) }) {
			score[lang] += 0.3
		}
	}
	if allowed(best.Lang) {
		score[best.Lang] += 0.1 + 0.2*best.Confidence
	}

	out := make([]Candidate, 0, len(score))
	for lang, s := range score {
		out = append(out, Candidate{Lang: lang, Score: min(s, 1)})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Lang == best.Lang) != (b.Lang == best.Lang) {
			return a.Lang == best.Lang
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.Lang < b.Lang
	})
	if len(want) == 0 && len(out) > maxTrigramCandidates+2 {
		out = out[:maxTrigramCandidates+2]
	}
	return out
}

// trigramRanking orders languages by whatlanggo's trigram distance, best first: the languages of
// want that have a profile, or the best few of all. whatlanggo answers only its best language, so
// each rank is one more call with the languages already ranked excluded.
func trigramRanking(text string, want map[string]bool) []string {
	opts := whatlanggo.Options{Blacklist: map[whatlanggo.Lang]bool{}}
	limit := maxTrigramCandidates
	if len(want) > 0 {
		opts.Whitelist = map[whatlanggo.Lang]bool{}
		for code := range want {
			if l, ok := profileLang(code); ok {
				opts.Whitelist[l] = true
			}
		}
		if len(opts.Whitelist) == 0 {
			return nil
		}
		limit = len(opts.Whitelist)
	}
	var out []string
	for len(out) < limit {
		info := whatlanggo.DetectWithOptions(text, opts)
		if info.Lang < 0 {
			break
		}
		if lang := normalise(info.Lang); lang != "" {
			out = append(out, lang)
		}
		// A whitelist overrides the blacklist in whatlanggo, so ranked languages leave it instead.
		if opts.Whitelist != nil {
			delete(opts.Whitelist, info.Lang)
			if len(opts.Whitelist) == 0 {
				break
			}
		} else {
			opts.Blacklist[info.Lang] = true
		}
	}
	return out
}

// profileLang is whatlanggo's language for a normalised code, which it knows by ISO 639-3.
func profileLang(code string) (whatlanggo.Lang, bool) {
	iso3, err := langcode.ISO6393(code)
	if err != nil {
		return 0, false
	}
	l := whatlanggo.CodeToLang(iso3)
	// The round trip drops profiles filed under another member of a macrolanguage.
	if l < 0 || normalise(l) != code {
		return 0, false
	}
	return l, true
}

func normaliseCode(code string) string {
	n, err := langcode.Normalize(code)
	if err != nil {
		return ""
	}
	return n
}
