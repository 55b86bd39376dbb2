package mailtext

import (
	"html"
	"io"
	"strings"

	xhtml "golang.org/x/net/html"
)

// dropRemoteImages replaces every image of sanitised HTML that the agent's
// browser would fetch from elsewhere (https, or an emptied source) by its
// alt text: a remote image tells the sender when, where and by whom the
// mail was read (a web bug). Inline images (cid:, the mail's own
// attachments) and data images stay. It works on bluemonday's output, so
// everything else is copied byte for byte.
func dropRemoteImages(s string) string {
	if !strings.Contains(strings.ToLower(s), "<img") {
		return s
	}
	var b strings.Builder
	z := xhtml.NewTokenizer(strings.NewReader(s))
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			if z.Err() != io.EOF {
				// Not reached for bluemonday's output; keep nothing unread.
				b.WriteString(html.EscapeString(string(z.Raw())))
			}
			return b.String()
		}
		raw := z.Raw()
		if tt != xhtml.StartTagToken && tt != xhtml.SelfClosingTagToken {
			b.Write(raw)
			continue
		}
		name, hasAttr := z.TagName()
		if string(name) != "img" {
			b.Write(raw)
			continue
		}
		var src, alt string
		for hasAttr {
			var k, v []byte
			k, v, hasAttr = z.TagAttr()
			switch string(k) {
			case "src":
				src = string(v)
			case "alt":
				alt = string(v)
			}
		}
		if inlineImage(src) {
			b.Write(raw)
			continue
		}
		b.WriteString(html.EscapeString(alt))
	}
}

// inlineImage: the image comes with the mail (cid:) or in the HTML itself
// (data:, only the raster formats the policy lets through).
func inlineImage(src string) bool {
	s := strings.ToLower(strings.TrimSpace(src))
	return strings.HasPrefix(s, "cid:") || strings.HasPrefix(s, "data:image/")
}
