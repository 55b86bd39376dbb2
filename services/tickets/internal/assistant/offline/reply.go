package offline

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"supportplatform.dev/services/tickets/internal/tickets"

	"supportplatform.dev/ai/langcode"
	"supportplatform.dev/ai/langdetect"
	"supportplatform.dev/services/tickets/internal/assistant"
)

// A prepared reply is extractive:
//
//  1. The prompt documents' texts are split into sentences (at . ! ? and
//     line breaks); each sentence is a passage, indexed with its document's
//     title at half weight so that it is found under its subject.
//  2. The message (with the subject, and with its English translation when
//     it is in another language) is matched against the passages with BM25,
//     mapped to [0, 1] as s / (s + passageScale).
//  3. When the best passage scores under ReplyFloor, or shares fewer than
//     two distinct terms with the message (all of them when the message
//     has only one), no reply is prepared: the documents do not answer the
//     message, and the engine invents nothing. One shared word is what
//     documents of an unrelated topic usually have in common with a
//     message ("account", "order"), which BM25 over a handful of passages
//     can score high. Otherwise the best passages are kept, at most
//     replyMaxPassages and about replyMaxChars characters, each scoring at
//     least half the best, and told in document order.
//  4. The reply greets the end user by name in their language, leads in,
//     gives the passages and closes with an offer to help further. The
//     passages are translated into the end user's language when the
//     documents are in another one; when that fails the whole reply is in
//     the documents' language and Reply.Language says so.

// ReplyFloor is the similarity the best passage needs for a reply to be
// prepared: s / (s + passageScale) for its BM25 score s, 0.45 meaning a
// score of about 3.3, more than one distinctive word of the message. It
// was set on the evaluation set (package eval): with it, about four in five
// messages get a reply from their own topic's documents.
const ReplyFloor = 0.45

const (
	// replyMinTerms is how many distinct terms the best passage must share
	// with the message.
	replyMinTerms    = 2
	replyMaxPassages = 3
	replyMaxChars    = 600
	// replyMinShare: a passage scoring under this share of the best one is
	// left out.
	replyMinShare = 0.5
	// passageBackground is the number of imaginary passages without the
	// message's words added to the passages' IDF, so that a passage's score
	// does not depend on how few passages the documents have.
	passageBackground = 20
	// weightPassageTitle is the weight of a document's title in each of its
	// passages.
	weightPassageTitle = 0.5
)

// phrases are the fixed parts of a reply by language: greeting with a name,
// greeting without one, lead-in, closing.
type phrases struct{ hiName, hi, lead, closing string }

var replyPhrases = map[string]phrases{
	"en": {"Hi %s,", "Hi,", "Thank you for your message. Here is what our help centre says about this:",
		"If this does not answer your question, just reply to this message and we will help you further."},
	"es": {"Hola %s,", "Hola,", "Gracias por su mensaje. Esto es lo que indica nuestro centro de ayuda al respecto:",
		"Si esto no responde a su pregunta, responda a este mensaje y le seguiremos ayudando."},
	"fr": {"Bonjour %s,", "Bonjour,", "Merci pour votre message. Voici ce qu'indique notre centre d'aide à ce sujet :",
		"Si cela ne répond pas à votre question, répondez simplement à ce message et nous vous aiderons."},
	"de": {"Hallo %s,", "Hallo,", "Vielen Dank für Ihre Nachricht. Dazu steht in unserem Hilfe-Center:",
		"Falls das Ihre Frage nicht beantwortet, antworten Sie einfach auf diese Nachricht, und wir helfen Ihnen weiter."},
	"pt": {"Olá %s,", "Olá,", "Obrigado pela sua mensagem. Eis o que a nossa central de ajuda diz sobre isto:",
		"Se isto não responder à sua pergunta, basta responder a esta mensagem e continuaremos a ajudar."},
	"it": {"Ciao %s,", "Ciao,", "Grazie per il suo messaggio. Ecco cosa dice il nostro centro assistenza:",
		"Se questo non risponde alla sua domanda, risponda a questo messaggio e la aiuteremo."},
	"ca": {"Hola %s,", "Hola,", "Gràcies pel vostre missatge. Això és el que diu el nostre centre d'ajuda:",
		"Si això no respon la vostra pregunta, responeu a aquest missatge i us ajudarem."},
	"nl": {"Hallo %s,", "Hallo,", "Bedankt voor uw bericht. Dit zegt ons helpcentrum erover:",
		"Als dit uw vraag niet beantwoordt, beantwoord dan gewoon dit bericht en we helpen u verder."},
}

type passage struct {
	doc     int // index in the request's documents
	pos     int // position among all passages
	text    string
	score   float64
	matched int // distinct message terms it contains
	need    int // distinct terms it must contain to ground a reply
}

// PrepareReply implements assistant.Engine.
func (e *Engine) PrepareReply(ctx context.Context, r assistant.ReplyRequest) (assistant.Reply, assistant.Provenance, error) {
	picked := e.pickPassages(ctx, r)
	if len(picked) == 0 {
		return assistant.Reply{}, Provenance, ctx.Err()
	}
	var ids []int64
	texts := make([]string, len(picked))
	for i, p := range picked {
		texts[i] = p.text
		if id := r.Documents[p.doc].DocumentID; !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	lang := normaliseLang(r.Language)
	docLang := langdetect.DetectText(strings.Join(texts, " ")).Lang
	if docLang == "" {
		docLang = "en"
	}
	text, lang := e.compose(ctx, r.EndUserName, lang, docLang, texts)
	return assistant.Reply{Text: text, Language: lang, DocumentIDs: ids}, Provenance, ctx.Err()
}

// pickPassages returns the passages a reply is made of, in document order,
// or none when the best one is under ReplyFloor.
func (e *Engine) pickPassages(ctx context.Context, r assistant.ReplyRequest) []passage {
	var ps []passage
	var fields [][]field
	for i, d := range r.Documents {
		for _, s := range splitSentences(d.Content) {
			ps = append(ps, passage{doc: i, pos: len(ps), text: s})
			fields = append(fields, []field{{s, 1}, {d.Title, weightPassageTitle}})
		}
	}
	if len(ps) == 0 {
		return nil
	}
	ix := newIndex(fields)
	ix.background = passageBackground
	for _, q := range e.queries(ctx, r.Subject+"\n"+r.Message) {
		need := min(replyMinTerms, len(distinct(q)))
		for i, s := range ix.scores(q) {
			if sim := s / (s + passageScale); sim > ps[i].score {
				ps[i].score, ps[i].matched, ps[i].need = sim, ix.matched(i, q), need
			}
		}
	}
	ranked := slices.Clone(ps)
	slices.SortStableFunc(ranked, func(a, b passage) int { return cmp.Compare(b.score, a.score) })
	best := ranked[0].score
	if best < ReplyFloor || ranked[0].matched < ranked[0].need || ranked[0].need == 0 {
		return nil
	}
	var kept []passage
	used := 0
	for _, p := range ranked {
		if len(kept) == replyMaxPassages || p.score < replyMinShare*best {
			break
		}
		n := utf8.RuneCountInString(p.text) + 1
		if len(kept) > 0 && used+n > replyMaxChars {
			continue
		}
		kept = append(kept, p)
		used += n
	}
	slices.SortFunc(kept, func(a, b passage) int { return cmp.Compare(a.pos, b.pos) })
	return kept
}

// compose writes the reply in lang from passages in docLang; it returns the
// text and the language it is actually in.
func (e *Engine) compose(ctx context.Context, name, lang, docLang string, passages []string) (string, string) {
	name = strings.TrimSpace(name)
	body := passages
	if docLang != lang {
		tr, err := e.translate(ctx, docLang, lang, passages)
		if err != nil {
			// The passages stay as written; so does the rest of the reply,
			// so that it reads in one language.
			lang = docLang
		} else {
			body = tr
		}
	}
	ph, ok := replyPhrases[lang]
	if !ok {
		en := replyPhrases["en"]
		greeting := en.hi
		if name != "" {
			greeting = fmt.Sprintf(en.hiName, name)
		}
		if tr, err := e.translate(ctx, "en", lang, []string{greeting, en.lead, en.closing}); err == nil {
			ph = phrases{hiName: "%s", hi: tr[0], lead: tr[1], closing: tr[2]}
			name = ""
		} else {
			// Neither the documents nor the phrases can be put in the end
			// user's language: answer in the documents' language.
			if docLang != lang {
				body = passages
			}
			lang = docLang
			if ph, ok = replyPhrases[lang]; !ok {
				ph, lang = en, "en"
			}
		}
	}
	greeting := ph.hi
	if name != "" {
		greeting = fmt.Sprintf(ph.hiName, name)
	}
	var b strings.Builder
	b.WriteString(greeting + "\n\n" + ph.lead + "\n\n")
	b.WriteString(strings.Join(body, " "))
	b.WriteString("\n\n" + ph.closing)
	return b.String(), lang
}

// normaliseLang maps the request's language to an ISO 639-1 code, English
// when it is missing or unknown.
func normaliseLang(l string) string {
	if n, err := langcode.Normalize(l); err == nil && n != "" {
		return n
	}
	return "en"
}

// splitSentences splits a text into trimmed sentences at . ! ? followed by
// a space and at line breaks.
func splitSentences(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, sentence := range tickets.LineSentences(line) {
			out = appendSentence(out, sentence)
		}
	}
	return out
}

func distinct(terms []string) map[string]bool {
	m := make(map[string]bool, len(terms))
	for _, t := range terms {
		m[t] = true
	}
	return m
}

func appendSentence(out []string, s string) []string {
	if s = strings.Join(strings.Fields(s), " "); s != "" {
		out = append(out, s)
	}
	return out
}
