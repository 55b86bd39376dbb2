package offline

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenising, the same for topics, documents and messages so that they meet
// on the same terms:
//
//  1. The text is lower-cased and split into runs of letters and digits
//     (Unicode aware); apostrophes split too, so French elisions ("l'app",
//     "j'ai") and English contractions leave their word behind.
//  2. Latin diacritics are folded (é -> e, ñ -> n, ß -> ss): "facturación"
//     and "facturacion" are one word, which also forgives a missing accent.
//  3. Stop words of English, Spanish, French and German and one-letter
//     words are dropped.
//  4. A light stemmer strips up to two inflectional suffixes of the four languages
//     (longest first, keeping a stem of at least three letters), then a
//     final doubled consonant ("shipping" -> "shipp" -> "ship"). It is
//     language-blind on purpose: a message's language is not known for sure,
//     and the same rule applied to both sides is what matters for matching.

// tokens returns the terms of text, in order, repeats kept.
func tokens(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		w = fold(w)
		if utf8.RuneCountInString(w) < 2 || stopWords[w] {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// foldTable maps the Latin letters with diacritics of the helpdesk's
// languages to their base letters.
var foldTable = map[rune]string{
	'à': "a", 'á': "a", 'â': "a", 'ã': "a", 'ä': "a", 'å': "a", 'æ': "ae",
	'ç': "c", 'è': "e", 'é': "e", 'ê': "e", 'ë': "e",
	'ì': "i", 'í': "i", 'î': "i", 'ï': "i", 'ñ': "n",
	'ò': "o", 'ó': "o", 'ô': "o", 'õ': "o", 'ö': "o", 'ø': "o", 'œ': "oe",
	'ù': "u", 'ú': "u", 'û': "u", 'ü': "u", 'ý': "y", 'ÿ': "y", 'ß': "ss",
}

// fold removes the diacritics foldTable knows from a lower-case word.
func fold(w string) string {
	ascii := true
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return w
	}
	var b strings.Builder
	for _, r := range w {
		if s, ok := foldTable[r]; ok {
			b.WriteString(s)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// suffixes are the endings stem strips, longest first (English, Spanish,
// French and German inflections and the commonest derivations).
var suffixes = func() []string {
	list := strings.Fields(`
		issements issement amientos imientos aciones iciones amiento imiento
		ations ements ization ingly edly ments ement ation acion icion ungen
		heiten keiten adores adoras ness ment ings ando iendo ados idos adas
		idas euses ions ung heit keit lich ies ied ing ado ido ada ida ees euse
		eux ion ers ed es er ly os as ee ez en em s e o a y`)
	// Longest first, so "ations" is tried before "s"; the list above is
	// roughly ordered, this makes it exact.
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && len(list[j]) > len(list[j-1]); j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
	return list
}()

// suffixesByLast are the suffixes by their last byte, longest first, so
// that a word is tried only against the suffixes it can end with.
var suffixesByLast = func() (by [256][]string) {
	for _, s := range suffixes {
		by[s[len(s)-1]] = append(by[s[len(s)-1]], s)
	}
	return by
}()

// minStem is the fewest letters a stem keeps.
const minStem = 3

// stem strips up to two suffixes and undoubles a final consonant.
func stem(w string) string {
	if len(w) <= minStem || isNumber(w) {
		return w
	}
	for range 2 {
		w0 := w
		for _, s := range suffixesByLast[w[len(w)-1]] {
			// "ss" is no plural ("address", "access").
			if strings.HasSuffix(w, s) && utf8.RuneCountInString(w)-len(s) >= minStem && !(s == "s" && strings.HasSuffix(w, "ss")) {
				w = w[:len(w)-len(s)]
				if s == "ies" || s == "ied" {
					w += "y"
				}
				break
			}
		}
		if w == w0 {
			break
		}
	}
	if n := len(w); n > minStem && w[n-1] == w[n-2] && !strings.ContainsRune("aeiou", rune(w[n-1])) && w[n-1] < utf8.RuneSelf {
		w = w[:n-1]
	}
	return w
}

func isNumber(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// stopWords of English, Spanish, French and German, folded (no
// diacritics), plus the politeness of support messages (hi, thanks,
// regards) that says nothing about a topic.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, list := range []string{
		// English
		`a about above after again against all am an and any are aren as at be because been before being below
		between both but by can cannot could couldn did didn do does doesn doing don down during each few for from
		further had hadn has hasn have haven having he her here hers herself him himself his how if in into is isn
		it its itself ll me more most mustn my myself no nor not of off on once only or other ought our ours
		ourselves out over own re same shan she should shouldn so some such than that the their theirs them
		themselves then there these they this those through to too under until up ve very was wasn we were weren
		what when where which while who whom why with won would wouldn you your yours yourself yourselves also just
		please pls plz thanks thank thx hi hello hey dear regards best kind get got getting still will may might
		like know one us let ok okay yes im ive dont cant wont isnt doesnt didnt its whats thats 
		anyone someone something anything really now since again already even much many every via`,
		// Spanish
		`al algo algun alguna como con de del desde donde el ella ellos en entre era es esa ese eso esta estan este
		esto estoy fue ha han has hay he la las le les lo los me mi mis muy nada ni no nos o os otra otro para pero
		por porque que quien se sea si sin sobre son su sus tambien te tengo tiene ti tu tus un una uno unos y ya yo
		gracias hola saludos buenos buenas dias tardes favor puedo pueden puede hace cuando todo todos mas estoy`,
		// French
		`au aux avec ce ces cet cette dans de des du elle elles en est et etait eux il ils je la le les leur leurs
		lui ma mais me meme mes moi mon ne ni nos notre nous on ou par pas plus pour qu que qui sa se ses si son
		sont sur ta te tes toi ton tu un une vos votre vous ai as avons avez ont suis es etes ete fait faire
		merci bonjour bonsoir salut cordialement svp plait peux peut pouvez depuis toujours encore tres tout tous`,
		// German
		`aber alle allem allen aller alles als also am an andere anderen auch auf aus bei bin bis bitte bist da damit
		dann das dass dein deine dem den der des dich die dies diese dieser dieses dir doch dort du durch ein eine
		einem einen einer eines er es etwas euch euer fur hab habe haben hat hatte hier hin ich ihm ihn ihnen ihr
		ihre im in ist ja jede jedem jeden jeder jetzt kann kein keine mein meine meinen meiner mich mir mit muss nach
		nicht nichts noch nun nur ob oder ohne sehr sein seine sich sie sind so uber um und uns unser unter vom von
		vor war waren warum was weil wenn wer wie wir wird wo zu zum zur danke hallo grusse gruss freundlichen
		leider schon immer mehr gibt`,
	} {
		for _, w := range strings.Fields(list) {
			m[fold(w)] = true
		}
	}
	return m
}()
