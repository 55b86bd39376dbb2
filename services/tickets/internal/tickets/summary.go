package tickets

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The extractive summary of a ticket (GET /api/Tickets/{id}/summary) until
// the AI assistant supplies an engine: deterministic, offline, in the
// conversation's own words.
//
//  1. Every message is split into sentences (at . ! ? followed by a space,
//     and at line breaks); quoted lines of e-mail replies ("> ...") and
//     lines such as "On Monday, Ada wrote:" are dropped.
//  2. Words are lower-cased letters and digits; stop words (English,
//     German, French, Spanish) and one-letter words are ignored. A word's
//     weight is its frequency across the whole conversation, the subject's
//     words counting twice.
//  3. A sentence scores the sum of the weights of its distinct words,
//     divided by the square root of its word count (long sentences do not
//     win by length alone); the first sentence of the first message, which
//     usually states the problem, gets a bonus of a half.
//     Sentences of the last message (where the conversation stands) get a
//     bonus of 30%.
//  4. The best sentences are kept, within about SummaryBudget characters,
//     and told in conversation order, each run under its writer's label
//     (End user, Agent, AI assistant, System). Ties go to the earlier
//     sentence. Besides the best one, a sentence is left out when it has
//     fewer than two distinct words (greetings, thanks), scores under 35%
//     of the best, or shares more than 60% of its words with one already
//     kept (repetitions, quoted text).
//  5. The summary opens with the subject and the number of messages and
//     ends with the ticket's status.

// SummaryBudget is roughly how many characters of sentences a summary
// keeps.
const SummaryBudget = 600

// maxSentenceChars cuts very long sentences (an e-mail without
// punctuation) so one cannot fill the summary.
const maxSentenceChars = 240

// minScoreShare: a sentence scoring less than this share of the best one
// is left out.
const minScoreShare = 0.35

// distinct returns the set of terms.
func distinct(terms []string) map[string]bool {
	m := make(map[string]bool, len(terms))
	for _, w := range terms {
		m[w] = true
	}
	return m
}

// redundant tells whether most of a sentence's words are in one already
// kept (Jaccard similarity of their word sets above 0.6).
func redundant(s *sentence, kept []*sentence) bool {
	a := distinct(s.terms)
	for _, k := range kept {
		b := distinct(k.terms)
		inter := 0
		for w := range a {
			if b[w] {
				inter++
			}
		}
		if union := len(a) + len(b) - inter; union > 0 && float64(inter)/float64(union) > 0.6 {
			return true
		}
	}
	return false
}

type sentence struct {
	msg    int // index of the message
	pos    int // position in the conversation
	sender SenderType
	text   string
	terms  []string
	score  float64
}

// Summarize summarises a ticket and its messages (oldest first).
func Summarize(t Ticket, msgs []Message) string {
	var b strings.Builder
	b.WriteString("Subject: ")
	b.WriteString(strings.TrimRight(strings.TrimSpace(t.Subject), ".!?"))
	switch len(msgs) {
	case 0:
		b.WriteString(". No messages yet.")
	case 1:
		b.WriteString(" (1 message).")
	default:
		b.WriteString(" (" + strconv.Itoa(len(msgs)) + " messages).")
	}
	var sentences []sentence
	weights := map[string]float64{}
	for _, w := range words(t.Subject) {
		weights[w] += 2
	}
	for i, m := range msgs {
		for _, s := range splitSentences(m.Text) {
			terms := words(s)
			if len(terms) == 0 {
				continue
			}
			for _, w := range terms {
				weights[w]++
			}
			sentences = append(sentences, sentence{msg: i, pos: len(sentences), sender: m.SenderType, text: s, terms: terms})
		}
	}
	best := 0.0
	for i := range sentences {
		s := &sentences[i]
		seen := map[string]bool{}
		for _, w := range s.terms {
			if !seen[w] {
				seen[w] = true
				s.score += weights[w]
			}
		}
		s.score /= math.Sqrt(float64(len(s.terms)))
		if s.pos == 0 {
			s.score *= 1.5
		}
		if s.msg == len(msgs)-1 && len(msgs) > 1 {
			s.score *= 1.3
		}
		best = max(best, s.score)
	}
	ranked := make([]*sentence, len(sentences))
	for i := range sentences {
		ranked[i] = &sentences[i]
	}
	sort.SliceStable(ranked, func(i, j int) bool { return ranked[i].score > ranked[j].score })
	var kept []*sentence
	used := 0
	for _, s := range ranked {
		// Greetings and thanks ("Thanks, Ada.") carry one word or little
		// weight; a sentence much like one kept says nothing new.
		if len(kept) > 0 && (len(distinct(s.terms)) < 2 || s.score < minScoreShare*best || redundant(s, kept)) {
			continue
		}
		n := utf8.RuneCountInString(s.text) + 1
		if used > 0 && used+n > SummaryBudget {
			continue
		}
		kept = append(kept, s)
		used += n
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].pos < kept[j].pos })
	var last SenderType
	for _, s := range kept {
		if s.sender != last {
			b.WriteString(" " + senderLabel(s.sender) + ":")
			last = s.sender
		}
		b.WriteString(" " + s.text)
		if r, _ := utf8.DecodeLastRuneInString(s.text); !strings.ContainsRune(".!?…", r) {
			b.WriteString(".")
		}
	}
	b.WriteString(" Status: " + string(t.Status) + ".")
	return b.String()
}

func senderLabel(s SenderType) string {
	switch s {
	case SenderEndUser:
		return "End user"
	case SenderAgent:
		return "Agent"
	case SenderAI:
		return "AI assistant"
	case SenderSystem:
		return "System"
	}
	return string(s)
}

// splitSentences splits a message into trimmed sentences, without quoted
// reply lines.
func splitSentences(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, ">") || isReplyHeader(line) {
			continue
		}
		for _, sentence := range LineSentences(line) {
			out = appendSentence(out, sentence)
		}
	}
	return out
}

// LineSentences splits one line of text into sentences: at a run of . ! ?
// followed by a space or the line's end. The sentences keep their
// punctuation and may have surrounding spaces.
func LineSentences(line string) []string {
	var out []string
	rs := []rune(line)
	start := 0
	for i := 0; i < len(rs); i++ {
		if !strings.ContainsRune(".!?", rs[i]) {
			continue
		}
		// The end of a run of punctuation followed by a space or the end.
		j := i
		for j+1 < len(rs) && strings.ContainsRune(".!?", rs[j+1]) {
			j++
		}
		if j+1 == len(rs) || unicode.IsSpace(rs[j+1]) {
			out = append(out, string(rs[start:j+1]))
			start = j + 1
		}
		i = j
	}
	if start < len(rs) {
		out = append(out, string(rs[start:]))
	}
	return out
}

func appendSentence(out []string, s string) []string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return out
	}
	if utf8.RuneCountInString(s) > maxSentenceChars {
		rs := []rune(s)
		cut := maxSentenceChars
		for k := cut; k > maxSentenceChars/2; k-- {
			if rs[k] == ' ' {
				cut = k
				break
			}
		}
		s = strings.TrimRight(string(rs[:cut]), " ,;:") + "…"
	}
	return append(out, s)
}

// isReplyHeader tells the line an e-mail client puts above a quoted reply
// ("On Mon, 3 Mar 2025, Ada <ada@example.com> wrote:", "Am ... schrieb ...:").
func isReplyHeader(line string) bool {
	if !strings.HasSuffix(line, ":") {
		return false
	}
	l := strings.ToLower(line)
	return (strings.HasPrefix(l, "on ") && strings.HasSuffix(l, "wrote:")) ||
		(strings.HasPrefix(l, "am ") && strings.Contains(l, "schrieb")) ||
		(strings.HasPrefix(l, "le ") && strings.Contains(l, "a écrit"))
}

// words are a text's lower-case words without stop words.
func words(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}) {
		w = strings.Trim(w, "'")
		if utf8.RuneCountInString(w) < 2 || stopWords[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, list := range []string{
		// English
		`a about above after again against all am an and any are aren't as at be because been before being below
		between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
		few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers
		herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more
		most mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same
		shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them
		themselves then there there's these they they'd they'll they're they've this those through to too under
		until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which
		while who who's whom why why's with won't would wouldn't you you'd you'll you're you've your yours yourself
		yourselves also just please thanks thank hi hello dear regards best kind get got still will may might
		would like know one two us let ok okay yes`,
		// German
		`aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes auch auf aus
		bei bin bis bitte bist da damit dann das dass dein deine dem den der des dich die dies diese dieser dieses
		dir doch dort du durch ein eine einem einen einer eines er es etwas euch euer für hab habe haben hat hatte
		hier hin ich ihm ihn ihnen ihr im in ist ja jede jedem jeden jeder jedes jetzt kann kein keine mein meine
		mich mir mit muss nach nicht nichts noch nun nur ob oder ohne sehr sein seine sich sie sind so über um und
		uns unser unter vom von vor war waren warum was weil wenn wer wie wir wird wo zu zum zur danke hallo grüße`,
		// French
		`au aux avec ce ces dans de des du elle en et eux il ils je la le les leur lui ma mais me même mes moi mon
		ne nos notre nous on ou par pas pour qu que qui sa se ses son sur ta te tes toi ton tu un une vos votre
		vous est sont merci bonjour`,
		// Spanish
		`al algo como con de del el ella ellos en es esta este esto estoy ha hay la las le les lo los me mi mis muy
		no nos o para pero por que se si sin son su sus también te tu un una uno y ya gracias hola`,
	} {
		for _, w := range strings.Fields(list) {
			m[w] = true
		}
	}
	return m
}()
