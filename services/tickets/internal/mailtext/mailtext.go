// Package mailtext turns the bodies of an imported mail into what a ticket
// message keeps: the new text of a plain-text body without the quoted
// history of earlier mails, and an HTML body made safe to show in the
// agents' web interface.
package mailtext

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/microcosm-cc/bluemonday"
)

// Patterns of a quoted history's first line. Each is matched against a
// trimmed line (and against a line joined with the next one, for clients
// that wrap a long attribution such as Gmail's).
var (
	// forwarded: a forwarded mail is the content the writer sends, not a
	// history; nothing after this line is cut.
	forwarded = regexp.MustCompile(`(?i)^-{2,}\s*(forwarded message|weitergeleitete nachricht|message transféré|mensaje reenviado|doorgestuurd bericht|messaggio inoltrato|mensagem encaminhada)\s*-{2,}$`)
	// originalMessage: Outlook's and others' "-----Original Message-----".
	originalMessage = regexp.MustCompile(`(?i)^-{2,}\s*(original message|original nachricht|ursprüngliche nachricht|message d'origine|mensaje original|oorspronkelijk bericht|messaggio originale|mensagem original)\s*-{2,}$`)
	// separator: the line Outlook on the web puts above the header block.
	separator = regexp.MustCompile(`^_{10,}$`)
	// headerFrom and headerOther: Outlook's "From: ... Sent: ... To: ...
	// Subject: ..." block (bold in a text made from HTML: "*From:*").
	headerFrom  = regexp.MustCompile(`(?i)^\*?(from|von|de|van|da|fra|från)\s?:\*?(\s|$)`)
	headerOther = regexp.MustCompile(`(?i)^\*?(sent|date|to|cc|subject|gesendet|datum|an|betreff|envoyé|date|à|objet|enviado|fecha|para|asunto|verzonden|aan|onderwerp|inviato|data|a|oggetto|assunto)\s?:\*?(\s|$)`)
	// mobileSignature: a last line such as "Sent from my iPhone", "Sent
	// from my Samsung Galaxy smartphone." or "Get Outlook for iOS": the
	// client's phrase, then a device or app name of a few words and
	// nothing else. "Sent from my desk, is much easier..." is a sentence.
	mobileSignature = regexp.MustCompile(`(?i)^(sent from my( [\p{L}\p{N}][\p{L}\p{N}'’-]*){1,4}\.?` +
		`|sent from (outlook|mail|yahoo mail|aol)( (for|on) [\p{L}\p{N}]+( [\p{L}\p{N}]+)?)?` +
		`|get outlook for (ios|android)` +
		`|von meinem( [\p{L}\p{N}-]+){1,3} gesendet` +
		`|envoyé de mon( [\p{L}\p{N}-]+){1,3}` +
		`|enviado desde mi( [\p{L}\p{N}-]+){1,3}` +
		`|verzonden (met|vanaf mijn)( [\p{L}\p{N}-]+){1,3}` +
		`|inviato da( il mio)?( [\p{L}\p{N}-]+){1,3})$`)
	// dashSignature: a last paragraph of one line "-Name" or "-- Name" (a
	// dash right before a name; a list item has a space after its dash).
	dashSignature = regexp.MustCompile(`^(-\p{L}|--\s?\p{L})[\p{L}\p{M} .'’-]{0,40}$`)
	// rule: a line of dashes or underscores, drawn above a quoted history
	// (Outlook's " ------------------------------" in a text made from HTML).
	rule = regexp.MustCompile(`^[-_]{5,}$`)
)

// attributions are the attributions, "On <date>, <name> wrote:" and its
// translations; lead, those anchored at their first word. They are
// compiled on first use, not at start: their bounded repetitions
// (.{4,300}) compile to 1.2 MB of heap that a process which never reads a
// mail (assistant, most of tickets' life) would keep for nothing.
var attributions = sync.OnceValues(func() (all, lead []*regexp.Regexp) {
	all = []*regexp.Regexp{
		regexp.MustCompile(`(?i)^on\b.{4,300}\bwrote\s*:$`),                                // en
		regexp.MustCompile(`(?i)^am\b.{4,300}\bschrieb\b.{0,300}:$`),                       // de
		regexp.MustCompile(`(?i)^le\b.{4,300}\ba écrit\s*:$`),                              // fr
		regexp.MustCompile(`(?i)^el\b.{4,300}\bescribió\s*:$`),                             // es
		regexp.MustCompile(`(?i)^op\b.{4,300}\bschreef\b.{0,300}:$`),                       // nl
		regexp.MustCompile(`(?i)^(em|no dia)\b.{4,300}\bescreveu\s*:$`),                    // pt
		regexp.MustCompile(`(?i)^il (giorno )?.{4,300}\bha scritto\s*:$`),                  // it
		regexp.MustCompile(`(?i)^.{1,200}[<@].{0,200}\b(wrote|schrieb|a écrit)\s*:$`),      // "Jane Doe <jane@x> wrote:"
		regexp.MustCompile(`(?i)^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}.{0,200}<[^>]+@[^>]+>\s*:$`), // "2024-03-01 10:00 GMT+01:00 Jane <jane@x>:"
	}
	return all, all[:7]
})

// NewText returns the text a reply adds to the conversation: the text
// before the first line that starts the quoted history (an "On <date>,
// <name> wrote:" attribution or its German, French, Spanish, Dutch,
// Portuguese or Italian form, Outlook's "-----Original Message-----", a
// "From: / Sent: / To: / Subject:" header block, a "_____" separator),
// without quoted ("> ") lines, without a trailing "-- " signature or
// "Sent from my ..." line. An attribution followed by an inline answer
// (quoted lines, then the writer's own) loses only its quoted lines. When
// stripping leaves nothing, the whole text (trimmed) is kept. Line endings
// become "\n".
func NewText(text string) string {
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(text, "\n")
	if cut := historyStart(lines); cut >= 0 {
		lines = lines[:cut]
	}
	kept := lines[:0:0]
	afterQuote := false
	for _, l := range lines {
		blank := strings.TrimSpace(l) == ""
		switch {
		case quoted(l):
			afterQuote = true
			continue
		case blank && afterQuote && len(kept) > 0 && strings.TrimSpace(kept[len(kept)-1]) == "":
			// The blank lines around a removed quote collapse into one.
			continue
		case !blank:
			afterQuote = false
		}
		kept = append(kept, l)
	}
	kept = cutSignature(kept)
	if out := strings.TrimSpace(strings.Join(kept, "\n")); out != "" {
		return trimLines(out)
	}
	return trimLines(strings.TrimSpace(text))
}

// trimLines removes trailing spaces of each line (a signature's "-- "
// aside, nothing is lost).
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}

func quoted(line string) bool { return strings.HasPrefix(strings.TrimLeft(line, " \t"), ">") }

// historyStart is the index of the first line of the quoted history, or -1.
func historyStart(lines []string) int {
	for i := range lines {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if forwarded.MatchString(l) {
			return -1
		}
		if originalMessage.MatchString(l) || separator.MatchString(l) || headerBlock(lines, i) {
			return ruleAbove(lines, i)
		}
		if n := attributionLines(lines, i); n > 0 {
			if inlineAnswer(lines, i+n) {
				// Drop the attribution only; the quoted lines go later.
				for j := i; j < i+n; j++ {
					lines[j] = ">"
				}
				continue
			}
			return ruleAbove(lines, i)
		}
	}
	return -1
}

// attributionLines is the number of lines (1 to 3) of an attribution
// starting at line i, 0 when there is none. Clients wrap a long one
// ("On Dec 16, 2011, at 12:47 PM, Jane Doe" / "<jane@x>" / "wrote:"). When
// the next line is an attribution on its own, only one starting here
// counts ("Thanks," above "On ... wrote:" is kept).
func attributionLines(lines []string, i int) int {
	attribution, lead := attributions()
	l := strings.TrimSpace(lines[i])
	if matchesAny(attribution, l) {
		return 1
	}
	if i+1 >= len(lines) {
		return 0
	}
	next := strings.TrimSpace(lines[i+1])
	if next == "" {
		return 0
	}
	joined := l + " " + next
	if matchesAny(attribution, joined) && (!matchesAny(attribution, next) || matchesAny(lead, joined)) {
		return 2
	}
	if i+2 >= len(lines) {
		return 0
	}
	if third := strings.TrimSpace(lines[i+2]); third != "" && matchesAny(lead, joined+" "+third) {
		return 3
	}
	return 0
}

// ruleAbove moves a history's start at line i up over the blank lines and
// the line of dashes or underscores drawn above it, when there is one.
func ruleAbove(lines []string, i int) int {
	j := i - 1
	for j >= 0 && strings.TrimSpace(lines[j]) == "" {
		j--
	}
	if j >= 0 && rule.MatchString(strings.TrimSpace(lines[j])) {
		return j
	}
	return i
}

func matchesAny(res []*regexp.Regexp, l string) bool {
	for _, re := range res {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// headerBlock: line i is "From:" and at least two more header lines
// (Sent, To, Subject...) follow within the next six lines.
func headerBlock(lines []string, i int) bool {
	if !headerFrom.MatchString(strings.TrimSpace(lines[i])) {
		return false
	}
	n := 0
	for j := i + 1; j < len(lines) && j <= i+6; j++ {
		if headerOther.MatchString(strings.TrimSpace(lines[j])) {
			n++
		}
	}
	return n >= 2
}

// inlineAnswer: after the attribution, quoted lines are followed by lines
// of the writer's own (an answer between the quotes).
func inlineAnswer(lines []string, from int) bool {
	seenQuote := false
	for _, l := range lines[from:] {
		switch {
		case quoted(l):
			seenQuote = true
		case strings.TrimSpace(l) == "":
		case seenQuote:
			return true
		default:
			// Unquoted text right after the attribution: a quoted history
			// whose ">" marks a text conversion dropped.
			return false
		}
	}
	return false
}

// cutSignature drops everything from the last "-- " line, then a last
// "Sent from my ..." line, or a last paragraph "-Name".
func cutSignature(lines []string) []string {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimRight(lines[i], " \t") == "--" {
			lines = lines[:i]
			break
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if mobileSignature.MatchString(l) && len(l) < 80 {
			lines = lines[:i]
		} else if dashSignature.MatchString(l) && i > 0 && strings.TrimSpace(lines[i-1]) == "" {
			lines = lines[:i]
		}
		break
	}
	return lines
}

// dataImage is a data: URL of an image format browsers render without
// running anything (no SVG).
var dataImage = regexp.MustCompile(`^image/(gif|jpeg|png|webp);base64,[A-Za-z0-9+/=\s]*$`)

// policy is bluemonday's UGC policy (no script, style, iframe, object,
// form, event handler or style attribute) with links and images narrowed:
// URLs are http, https, mailto, cid (inline attachments) or data images;
// an image's source only https, cid or a data image (an http image, a web
// bug on a plain connection, is emptied). Links get rel="nofollow
// noopener" and open in a new tab. A bluemonday.Policy is safe for
// concurrent use once built. Built on first use, as attributions are (its
// regular expressions are 0.2 MB of heap).
var policy = sync.OnceValue(func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowURLSchemes("cid")
	p.AllowURLSchemeWithCustomPolicy("data", func(u *url.URL) bool {
		return u.RawQuery == "" && u.Fragment == "" && dataImage.MatchString(u.Opaque)
	})
	p.RewriteSrc(func(u *url.URL) {
		if !strings.EqualFold(u.Scheme, "https") && !strings.EqualFold(u.Scheme, "cid") && !strings.EqualFold(u.Scheme, "data") {
			*u = url.URL{}
		}
	})
	p.RequireNoFollowOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
})

// SanitizeHTML returns the HTML body safe to embed in the agents' pages:
// the policy's output without remote images (each replaced by its alt
// text; dropRemoteImages).
func SanitizeHTML(body string) string {
	if strings.TrimSpace(body) == "" {
		return ""
	}
	return strings.TrimSpace(dropRemoteImages(policy().Sanitize(body)))
}

var (
	strict     = bluemonday.StrictPolicy()
	blockBreak = regexp.MustCompile(`(?i)<br\s*/?>|</(p|div|li|tr|h[1-6]|blockquote)\s*>`)
	dropped    = regexp.MustCompile(`(?is)<(style|script|head|title)\b.*?</(style|script|head|title)\s*>`)
	blankLines = regexp.MustCompile(`\n{3,}`)
)

// HTMLText is the text of an HTML body, for a mail whose provider gave no
// text body: tags removed, block ends as line breaks, entities decoded.
func HTMLText(body string) string {
	s := dropped.ReplaceAllString(body, "")
	s = blockBreak.ReplaceAllString(s, "\n")
	s = html.UnescapeString(strict.Sanitize(s))
	s = strings.ReplaceAll(s, "\u00a0", " ")
	return strings.TrimSpace(blankLines.ReplaceAllString(trimLines(s), "\n\n"))
}
