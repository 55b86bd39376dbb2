// Package langdetect tells which language a text is written in, and which language people most
// likely speak at a given location. Both work offline from tables compiled into the binary.
//
// Text detection combines whatlanggo's trigram profiles (84 languages, a few hundred kilobytes of
// heap) with a short list of very common words per language. Trigrams are good at long texts and
// poor at the two- or three-word messages a helpdesk gets ("Hello", "Thanks!", "Mi pedido no ha
// llegado"), where the common words decide.
package langdetect

import (
	"strings"
	"unicode"

	"github.com/abadojack/whatlanggo"

	"supportplatform.dev/ai/langcode"
)

// minTrigramLetters is the length below which the trigram guess is never called reliable.
const minTrigramLetters = 15

// TextResult is the outcome of DetectText.
type TextResult struct {
	// Lang is the normalised ISO 639 code, "" when the text holds no letters or is in a script
	// no profile covers.
	Lang string
	// Confidence is between 0 and 1.
	Confidence float64
	// Reliable says the evidence is strong enough to act on without a second opinion.
	Reliable bool
}

// DetectText returns the most likely language of text.
func DetectText(text string) TextResult {
	var letters, kana int
	for _, r := range text {
		if unicode.IsLetter(r) {
			letters++
			if unicode.In(r, unicode.Hiragana, unicode.Katakana) {
				kana++
			}
		}
	}
	if letters == 0 {
		return TextResult{}
	}
	// Japanese mixes kanji with kana; whatlanggo picks the majority script and so calls
	// kanji-heavy Japanese Chinese. Kana appear in no other language.
	if kana > 0 {
		return TextResult{Lang: "ja", Confidence: 1, Reliable: true}
	}

	info := whatlanggo.Detect(text)
	// Trigram statistics over a dozen letters are noise whatever confidence they claim.
	// Scripts written by one language only (Han, Hangul, Greek, Thai...) decide by themselves.
	guess := TextResult{Confidence: info.Confidence, Reliable: info.IsReliable() && (letters >= minTrigramLetters || !sharedScript(info.Script))}
	if info.Lang >= 0 {
		guess.Lang = normalise(info.Lang)
	}
	if guess.Lang == "fa" || guess.Lang == "ur" || guess.Lang == "ar" {
		guess.Lang = arabicScriptLanguage(text, guess.Lang)
	}
	if info.Script != unicode.Latin && info.Script != unicode.Cyrillic {
		return guess
	}
	return combineWithCommonWords(text, guess)
}

// sharedScript reports whether whatlanggo has profiles for several languages in script.
func sharedScript(script *unicode.RangeTable) bool {
	switch script {
	case unicode.Latin, unicode.Cyrillic, unicode.Arabic, unicode.Devanagari, unicode.Hebrew, unicode.Ethiopic:
		return true
	}
	return false
}

func normalise(l whatlanggo.Lang) string {
	if code := l.Iso6391(); code != "" {
		if n, err := langcode.Normalize(code); err == nil {
			return n
		}
	}
	if n, err := langcode.Normalize(l.Iso6393()); err == nil {
		return n
	}
	return ""
}

// arabicScriptLanguage corrects whatlanggo's frequent calls of short Arabic as Persian: Persian
// and Urdu write letters Arabic does not have (پ چ ژ گ ک ی and Urdu's ٹ ڈ ڑ ں ے), so a text
// without any of them is not Persian or Urdu, and one with them is not Arabic.
func arabicScriptLanguage(text, guess string) string {
	var persian, urdu bool
	for _, r := range text {
		switch r {
		case 'پ', 'چ', 'ژ', 'گ', 'ک', 'ی':
			persian = true
		case 'ٹ', 'ڈ', 'ڑ', 'ں', 'ے', 'ھ':
			urdu = true
		}
	}
	switch {
	case urdu:
		return "ur"
	case !persian:
		return "ar"
	case guess == "ar":
		return "fa"
	}
	return guess
}

// combineWithCommonWords weighs the trigram guess against counts of each language's common words.
func combineWithCommonWords(text string, guess TextResult) TextResult {
	hits := commonWordHits(text)
	top, second := "", ""
	for _, lang := range commonWordOrder {
		switch {
		case top == "" || hits[lang] > hits[top]:
			top, second = lang, top
		case second == "" || hits[lang] > hits[second]:
			second = lang
		}
	}
	h1, h2, hg := hits[top], hits[second], hits[guess.Lang]
	switch {
	case h1 == 0:
		return guess
	case top == guess.Lang || hg == h1:
		// The two methods agree (or the words cannot separate the guess from the leader).
		guess.Reliable = guess.Reliable || h1 >= 2 && h1 > h2
		if guess.Reliable {
			guess.Confidence = max(guess.Confidence, 0.8)
		} else {
			guess.Confidence = min(guess.Confidence, 0.6)
		}
		return guess
	case guess.Reliable && h1 < 2*hg+2:
		// A confident trigram guess only yields to a clear majority of common words.
		return guess
	case h1 == h2:
		return TextResult{Lang: top, Confidence: 0.3}
	}
	// One matching word is a hint, three are evidence.
	conf := float64(h1-h2) / float64(h1) * min(1, float64(h1)/3)
	return TextResult{Lang: top, Confidence: conf, Reliable: h1 >= 2 && h1 >= 2*h2}
}

func commonWordHits(text string) map[string]int {
	idx := commonWordIndex()
	hits := map[string]int{}
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\'' && r != '’'
	})
	for _, w := range words {
		// Elisions count as one word: "don't" -> "dont", "c'est" -> "cest".
		w = strings.NewReplacer("'", "", "’", "").Replace(w)
		for _, lang := range idx[w] {
			hits[lang]++
		}
	}
	return hits
}
