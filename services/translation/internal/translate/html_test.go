package translate

import (
	"context"
	"strings"
	"testing"

	"supportplatform.dev/ai/mt"
)

// wordEngine translates a few English words to Spanish and upper-cases everything else, so a test
// can tell translated text from text that was left alone.
func wordEngine() *fakeEngine {
	words := strings.NewReplacer("Hello", "Hola", "friend", "amigo", "world", "mundo", "The house is big", "La casa es grande",
		"Thanks", "Gracias", "for your help", "por su ayuda", "Your order", "Su pedido", "has shipped", "ha sido enviado")
	return &fakeEngine{name: "x", pairs: serves("*"), reply: func(s string) string { return "«" + words.Replace(s) + "»" }}
}

func TestLooksLikeHTML(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"<p>Hello</p>", true},
		{"Hello<br>world", true},
		{"Hello<br/>world", true},
		{"Use <b>bold</b> here", true},
		{"<!-- note --> Hello", true},
		{"Tom &amp; Jerry", true},
		{"caf&#233;", true},
		{"Hello world", false},
		{"a < b and c > d", false},
		{"x<y", false},
		{"I <3 you", false},
		{"<hello there>", false},
		{"AT&T and R&D; fine", false},
		{"&notanentity;", false},
		{"Price: 5 < 6 & 7 > 3", false},
	}
	for _, tt := range tests {
		if got := LooksLikeHTML(tt.text); got != tt.want {
			t.Errorf("LooksLikeHTML(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestPlainTextToHTML(t *testing.T) {
	e := wordEngine()
	svc := New(Config{Providers: []mt.Translator{e}})
	in := "Hello friend,\r\nThanks for your help.\r\n\r\n\r\n  Your order has shipped & a < b  \n\n"
	got, err := svc.TranslateToHTML(context.Background(), Request{CustomerID: customer, SourceText: in, TargetLang: "es"})
	if err != nil {
		t.Fatal(err)
	}
	want := "<p>«Hola amigo,<br>\nGracias por su ayuda.»</p>\n<p>«Su pedido ha sido enviado &amp; a &lt; b»</p>"
	if got != want {
		t.Fatalf("TranslateToHTML =\n%q\nwant\n%q", got, want)
	}
	if len(e.calls) != 1 || len(e.calls[0].texts) != 2 {
		t.Fatalf("engine calls = %+v, want one batch of two paragraphs", e.calls)
	}
}

func TestPlainTextToHTMLSameLanguageIsOnlyFormatted(t *testing.T) {
	e := wordEngine()
	svc := New(Config{Providers: []mt.Translator{e}})
	got, err := svc.TranslateToHTML(context.Background(), Request{CustomerID: customer, SourceText: "My order has not arrived yet.\nCan you help me <please>?", TargetLang: "en"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<p>My order has not arrived yet.<br>\nCan you help me &lt;please&gt;?</p>"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if e.callCount() != 0 {
		t.Fatal("engine called for same-language text")
	}
}

func TestHTMLTranslatesOnlyTextNodes(t *testing.T) {
	e := wordEngine()
	svc := New(Config{Providers: []mt.Translator{e}})
	in := `<p class="greeting">Hello <b>friend</b>!</p>` +
		`<ul><li>The house is big</li></ul>` +
		`<pre>Hello world</pre><p>Run <code>Hello</code> now</p>` +
		`<p translate="no">Hello brand</p><span class="x notranslate">Hello</span>` +
		`<a href="https://example.com/help?q=1&amp;r=2" title="Hello">Thanks</a>`
	got, err := svc.TranslateToHTML(context.Background(), Request{CustomerID: customer, SourceText: in, TargetLang: "es"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<p>«Hola» <b>«amigo»</b>!</p>",
		"<li>«La casa es grande»</li>",
		"<pre>Hello world</pre>",
		"<code>Hello</code>",
		`<p translate="no">Hello brand</p>`,
		"<span>Hello</span>",
		`href="https://example.com/help?q=1&amp;r=2"`,
		`title="Hello"`,
		">«Gracias»</a>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, c := range e.calls {
		for _, text := range c.texts {
			if strings.Contains(text, "<") || text == "!" {
				t.Errorf("engine was sent %q", text)
			}
		}
	}
}

func TestHTMLIsSanitized(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		absent []string
		keep   []string
	}{
		{"script element", `<p>Hello</p><script>alert(1)</script>`, []string{"<script", "alert"}, []string{"«Hola»"}},
		{"upper-case script", `<p>Hello</p><SCRIPT SRC="//evil.example/x.js"></SCRIPT>`, []string{"script", "SCRIPT", "evil"}, nil},
		{"split script tag", `<p>Hello</p><scr<script>ipt>alert(1)</script>`, []string{"<script", "alert(1)</script>"}, nil},
		{"style element", `<style>body{display:none}</style><p>Hello</p>`, []string{"<style", "display"}, []string{"«Hola»"}},
		{"style attribute", `<p style="background:url(javascript:alert(1))">Hello</p>`, []string{"style=", "javascript"}, []string{"«Hola»"}},
		{"event handler", `<p onclick="alert(1)" onmouseover="x()">Hello</p>`, []string{"onclick", "onmouseover", "alert"}, []string{"<p>«Hola»</p>"}},
		{"img onerror", `<img src="x.png" onerror="alert(1)">Hello`, []string{"onerror", "alert"}, []string{`src="x.png"`}},
		{"javascript URL", `<a href="javascript:alert(1)">Hello</a>`, []string{"javascript", "href"}, []string{"«Hola»"}},
		{"mixed-case javascript URL", `<a href="JaVaScRiPt:alert(1)">Hello</a>`, []string{"avaScRiPt", "href"}, nil},
		{"entity-obfuscated javascript URL", `<a href="jav&#x09;ascript:alert(1)">Hello</a>`, []string{"ascript:", "href"}, nil},
		{"vbscript URL", `<a href="vbscript:msgbox(1)">Hello</a>`, []string{"vbscript", "href"}, nil},
		{"data URL image", `<img src="data:image/svg+xml;base64,PHN2Zz48c2NyaXB0PmFsZXJ0KDEpPC9zY3JpcHQ+PC9zdmc+">Hello`, []string{"data:", "src="}, nil},
		{"data URL link", `<a href="data:text/html,<script>alert(1)</script>">Hello</a>`, []string{"data:", "alert"}, nil},
		{"iframe", `<iframe src="https://evil.example"></iframe><p>Hello</p>`, []string{"iframe", "evil"}, []string{"«Hola»"}},
		{"object and embed", `<object data="x.swf"></object><embed src="x.swf"><p>Hello</p>`, []string{"object", "embed", "swf"}, nil},
		{"form", `<form action="https://evil.example"><input name="pw"><button>Hello</button></form>`, []string{"<form", "<input", "evil"}, nil},
		{"svg with script", `<svg onload="alert(1)"><script>alert(2)</script></svg><p>Hello</p>`, []string{"svg", "alert", "onload"}, []string{"«Hola»"}},
		{"meta refresh", `<meta http-equiv="refresh" content="0;url=https://evil.example"><p>Hello</p>`, []string{"meta", "evil"}, nil},
		{"base tag", `<base href="https://evil.example/"><a href="/x">Hello</a>`, []string{"<base", "evil"}, []string{`href="/x"`}},
		{"comment hiding script", `<!--<script>alert(1)</script>--><p>Hello</p>`, []string{"<!--", "alert"}, []string{"«Hola»"}},
		{"safe link kept", `<a href="https://example.com/page">Hello</a>`, nil, []string{`href="https://example.com/page"`, "nofollow", "«Hola»"}},
		{"mailto kept", `<a href="mailto:help@example.com">Hello</a>`, nil, []string{`href="mailto:help@example.com"`}},
		{"table kept", `<table><tr><td>Hello</td></tr></table>`, nil, []string{"<table>", "<td>«Hola»</td>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := New(Config{Providers: []mt.Translator{wordEngine()}})
			got, err := svc.TranslateToHTML(context.Background(), Request{CustomerID: customer, SourceText: tt.in, TargetLang: "es"})
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range tt.absent {
				if strings.Contains(got, bad) {
					t.Errorf("output contains %q:\n%s", bad, got)
				}
			}
			for _, good := range tt.keep {
				if !strings.Contains(got, good) {
					t.Errorf("output lacks %q:\n%s", good, got)
				}
			}
		})
	}
}

func TestHTMLEscapesWhatTheEngineReturns(t *testing.T) {
	evil := &fakeEngine{name: "x", pairs: serves("*"), reply: func(string) string {
		return `<img src=x onerror=alert(1)> & "quoted"`
	}}
	svc := New(Config{Providers: []mt.Translator{evil}})
	got, err := svc.TranslateToHTML(context.Background(), Request{CustomerID: customer, SourceText: "<p>Hello friend, how are you?</p>", TargetLang: "es"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "<img") || !strings.Contains(got, "&lt;img src=x onerror=alert(1)&gt; &amp;") {
		t.Fatalf("engine output was not treated as text: %s", got)
	}
	plain, err := svc.TranslateToHTML(context.Background(), Request{CustomerID: customer, SourceText: "Hello friend, how are you?", TargetLang: "es"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "<img") {
		t.Fatalf("engine output was not escaped in plain-text mode: %s", plain)
	}
}

func TestHTMLSameLanguageIsStillSanitized(t *testing.T) {
	e := wordEngine()
	svc := New(Config{Providers: []mt.Translator{e}})
	got, err := svc.TranslateToHTML(context.Background(), Request{CustomerID: customer, SourceText: `<p onclick="steal()">My order has not arrived yet, can you help me?</p><script>alert(1)</script>`, TargetLang: "en"})
	if err != nil {
		t.Fatal(err)
	}
	if got != "<p>My order has not arrived yet, can you help me?</p>" {
		t.Fatalf("got %q", got)
	}
	if e.callCount() != 0 {
		t.Fatal("engine called for same-language HTML")
	}
}

func TestHTMLEntitiesSurviveTranslation(t *testing.T) {
	e := &fakeEngine{name: "x", pairs: serves("*"), reply: func(s string) string { return s }}
	svc := New(Config{Providers: []mt.Translator{e}})
	got, err := svc.TranslateToHTML(context.Background(), Request{CustomerID: customer, SourceText: "<p>Tom &amp; Jerry &lt;3 caf&eacute; at 5&nbsp;pm</p>", TargetLang: "de"})
	if err != nil {
		t.Fatal(err)
	}
	if sent := e.calls[0].texts[0]; sent != "Tom & Jerry <3 café at 5\u00a0pm" {
		t.Fatalf("engine got %q, want decoded text", sent)
	}
	if !strings.Contains(got, "Tom &amp; Jerry &lt;3 café at 5") {
		t.Fatalf("output %q does not re-encode the text", got)
	}
}
