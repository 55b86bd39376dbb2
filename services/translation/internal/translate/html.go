package translate

import (
	"bytes"
	"context"
	"html"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/microcosm-cc/bluemonday"
	xhtml "golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// TranslateToHTML translates the request's text (choosing its source language as Translate does)
// and returns HTML that is safe to insert into a page.
//
// Plain text comes back HTML-escaped, with blank-line-separated paragraphs as <p> and single line
// breaks as <br>. HTML (recognised by parsing: it contains known HTML elements, comments or
// character references) keeps its markup: only text nodes are translated, except inside script,
// style, code, pre, kbd, samp, textarea and elements marked translate="no" or class "notranslate".
// The result is then sanitised: no script, style, iframe, object or form elements, no event
// handler attributes, and only http, https and mailto URLs (or relative ones). data: URLs are
// refused even for images: they can carry SVG with script, and inline images belong in
// attachments, not in message bodies.
func (s *Service) TranslateToHTML(ctx context.Context, req Request) (string, error) {
	source, target, err := validateTranslation(req)
	if err != nil {
		return "", err
	}
	key := CacheKey(req.CustomerID, req.SourceText, source, target, ModeHTML)
	if out, ok := s.cached(ctx, key); ok {
		return out, nil
	}
	if LooksLikeHTML(req.SourceText) {
		return s.translateHTML(ctx, req.CustomerID, key, req.SourceText, source, target)
	}
	return s.translatePlainToHTML(ctx, req.CustomerID, key, req.SourceText, source, target)
}

var charRef = regexp.MustCompile(`&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});`)

// LooksLikeHTML reports whether text parses as HTML markup rather than prose that happens to
// contain "<" or "&": it needs a tag naming a real HTML element ("<b>", "</p>", "<br/>"), a
// comment or doctype, or a character reference that decodes to something ("&amp;", "&#233;").
// "a < b", "x<y" and "<3" stay plain text.
func LooksLikeHTML(text string) bool {
	z := xhtml.NewTokenizer(strings.NewReader(text))
	for {
		switch z.Next() {
		case xhtml.ErrorToken:
			// The whole reference must decode: "&notanentity;" only starts with the legacy "&not".
			for _, m := range charRef.FindAllString(text, -1) {
				if u := html.UnescapeString(m); u != m && !strings.Contains(u, ";") && utf8.RuneCountInString(u) <= 2 {
					return true
				}
			}
			return false
		case xhtml.StartTagToken, xhtml.EndTagToken, xhtml.SelfClosingTagToken:
			name, _ := z.TagName()
			if atom.Lookup(name) != 0 {
				return true
			}
		case xhtml.CommentToken, xhtml.DoctypeToken:
			return true
		}
	}
}

var blankLines = regexp.MustCompile(`\n[ \t\f\v]*\n\s*`)

// translatePlainToHTML translates paragraph by paragraph, so that an engine that reflows text
// cannot merge paragraphs, and builds the HTML from the escaped results.
func (s *Service) translatePlainToHTML(ctx context.Context, customerID int64, cacheKey, text, source, target string) (string, error) {
	norm := strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	var paras []string
	for _, p := range blankLines.Split(strings.TrimSpace(norm), -1) {
		if strings.TrimSpace(p) != "" {
			paras = append(paras, p)
		}
	}
	render := func(paras []string) (string, error) {
		var b strings.Builder
		for i, p := range paras {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("<p>")
			for j, line := range strings.Split(strings.TrimSpace(p), "\n") {
				if j > 0 {
					b.WriteString("<br>\n")
				}
				b.WriteString(html.EscapeString(strings.TrimSpace(line)))
			}
			b.WriteString("</p>")
		}
		return b.String(), nil
	}
	return s.translateSegments(ctx, customerID, source, norm, target, cacheKey, paras, render)
}

// untranslated are elements whose text is code, data or styling rather than prose.
var untranslated = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Code: true, atom.Pre: true, atom.Kbd: true,
	atom.Samp: true, atom.Textarea: true, atom.Noscript: true, atom.Template: true,
}

func (s *Service) translateHTML(ctx context.Context, customerID int64, cacheKey, text, source, target string) (string, error) {
	body := &xhtml.Node{Type: xhtml.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := xhtml.ParseFragment(strings.NewReader(text), body)
	if err != nil {
		return "", invalid(FieldError{"sourceText", "sourceText could not be parsed as HTML"})
	}
	var texts []*xhtml.Node
	for _, n := range nodes {
		collectText(n, &texts)
	}
	segments := make([]string, len(texts))
	var all strings.Builder
	for i, n := range texts {
		segments[i] = n.Data
		all.WriteString(n.Data)
		all.WriteByte(' ')
	}
	render := func(out []string) (string, error) {
		for i, n := range texts {
			n.Data = out[i]
		}
		var b bytes.Buffer
		for _, n := range nodes {
			if err := xhtml.Render(&b, n); err != nil {
				return "", err
			}
		}
		return sanitizer().Sanitize(b.String()), nil
	}
	return s.translateSegments(ctx, customerID, source, all.String(), target, cacheKey, segments, render)
}

func collectText(n *xhtml.Node, out *[]*xhtml.Node) {
	switch n.Type {
	case xhtml.TextNode:
		*out = append(*out, n)
		return
	case xhtml.ElementNode:
		if untranslated[n.DataAtom] || n.Namespace != "" || optedOut(n) {
			return
		}
	case xhtml.CommentNode, xhtml.DoctypeNode:
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		collectText(c, out)
	}
}

// optedOut honours the HTML translate="no" attribute and the "notranslate" class that browser
// translators respect, so product names and the like can be protected.
func optedOut(n *xhtml.Node) bool {
	for _, a := range n.Attr {
		switch strings.ToLower(a.Key) {
		case "translate":
			if strings.EqualFold(strings.TrimSpace(a.Val), "no") {
				return true
			}
		case "class":
			for _, c := range strings.Fields(a.Val) {
				if c == "notranslate" {
					return true
				}
			}
		}
	}
	return false
}

// sanitizer is bluemonday's policy for user-generated content: it allows formatting, links,
// images, lists and tables, and removes scripts, styles, frames, forms, event handlers and
// URLs outside http, https and mailto. It also adds rel="nofollow" to links, which suits text
// written by strangers.
var sanitizer = sync.OnceValue(func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowAttrs("translate").Matching(regexp.MustCompile(`^(?i)(yes|no)$`)).Globally()
	return p
})
