package mailtext

import (
	"strings"
	"testing"
)

func TestNewText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain new mail",
			"Hello,\n\nmy order 4711 has not arrived.\n\nRegards\nAda",
			"Hello,\n\nmy order 4711 has not arrived.\n\nRegards\nAda"},
		{"gmail reply",
			"Thanks, that worked!\r\n\r\nOn Mon, Jan 8, 2024 at 9:15 AM Support <support@shop.example> wrote:\r\n\r\n> Please restart the router.\r\n>\r\n> Kind regards\r\n",
			"Thanks, that worked!"},
		{"gmail reply with a wrapped attribution",
			"Still broken.\n\nOn Mon, Jan 8, 2024 at 9:15 AM Customer Support Team of the Shop <\nsupport@shop.example> wrote:\n\n> Please restart the router.\n",
			"Still broken."},
		{"outlook desktop",
			"Hi,\n\nthe invoice is attached.\n\nBest\nBob\n\n-----Original Message-----\nFrom: Support <support@shop.example>\nSent: Monday, January 8, 2024 9:15 AM\nTo: Bob <bob@corp.example>\nSubject: RE: Invoice\n\nCould you send the invoice?\n",
			"Hi,\n\nthe invoice is attached.\n\nBest\nBob"},
		{"outlook web",
			"Yes, please cancel it.\n\n________________________________\nFrom: Support <support@shop.example>\nSent: Tuesday, 9 January 2024 10:02\nTo: Bob <bob@corp.example>\nSubject: Your subscription\n\nShall we cancel?\n",
			"Yes, please cancel it."},
		{"outlook header block without a separator, bold from HTML",
			"Got it, thanks.\n\n*From:* Support <support@shop.example>\n*Sent:* Tuesday, 9 January 2024 10:02\n*To:* Bob\n*Subject:* Re: Ticket\n\nOld text\n",
			"Got it, thanks."},
		{"apple mail",
			"Works now.\n\nSent from my iPhone\n\n> On 3 Mar 2024, at 10:00, Support <support@shop.example> wrote:\n>\n> Try again.\n",
			"Works now."},
		{"apple mail attribution unquoted",
			"Perfect.\n\nOn 3 Mar 2024, at 10:00, Support <support@shop.example> wrote:\n\nTry again.\n",
			"Perfect."},
		{"thunderbird",
			"I attached the log.\n\nOn 01.02.24 10:00, Support Team wrote:\n> Could you send us the log?\n>\n> -- \n> Support\n",
			"I attached the log."},
		{"german outlook",
			"Hallo,\n\ndas Paket ist angekommen.\n\nViele Grüße\nMax\n\n-----Ursprüngliche Nachricht-----\nVon: Support <support@shop.example>\nGesendet: Montag, 8. Januar 2024 09:15\nAn: Max <max@firma.example>\nBetreff: Ihre Bestellung\n\nIhr Paket ist unterwegs.\n",
			"Hallo,\n\ndas Paket ist angekommen.\n\nViele Grüße\nMax"},
		{"german gmail",
			"Danke!\n\nAm Mo., 8. Jan. 2024 um 09:15 Uhr schrieb Support <support@shop.example>:\n\n> Bitte starten Sie neu.\n",
			"Danke!"},
		{"french",
			"Merci beaucoup.\n\nLe lun. 8 janv. 2024 à 09:15, Support <support@shop.example> a écrit :\n> Veuillez redémarrer.\n",
			"Merci beaucoup."},
		{"french outlook",
			"C'est réglé.\n\nDe : Support <support@shop.example>\nEnvoyé : lundi 8 janvier 2024 09:15\nÀ : Marie <marie@corp.example>\nObjet : Votre commande\n\nBonjour Marie\n",
			"C'est réglé."},
		{"spanish",
			"Gracias, ya funciona.\n\nEl lun, 8 ene 2024 a las 9:15, Soporte (<soporte@tienda.example>) escribió:\n> Reinicie el equipo.\n",
			"Gracias, ya funciona."},
		{"spanish outlook",
			"Adjunto la factura.\n\n-----Mensaje original-----\nDe: Soporte <soporte@tienda.example>\nEnviado el: lunes, 8 de enero de 2024 9:15\nPara: Ana\nAsunto: Factura\n",
			"Adjunto la factura."},
		{"dutch",
			"Bedankt!\n\nOp ma 8 jan. 2024 om 09:15 schreef Support <support@shop.example>:\n> Start opnieuw op.\n",
			"Bedankt!"},
		{"portuguese and italian",
			"Obrigado.\n\nEm seg., 8 de jan. de 2024 às 09:15, Suporte <suporte@loja.example> escreveu:\n> Reinicie.\n",
			"Obrigado."},
		{"italian",
			"Grazie mille.\n\nIl giorno lun 8 gen 2024 alle ore 09:15 Supporto <supporto@negozio.example> ha scritto:\n> Riavvia.\n",
			"Grazie mille."},
		{"signature",
			"Please call me back.\n\n-- \nBob Builder\nACME Corp\n+49 30 1234567\n",
			"Please call me back."},
		{"inline answers keep the answers",
			"On Mon, Jan 8, 2024 at 9:15 AM Support <support@shop.example> wrote:\n> What is your order number?\n4711\n> And your postcode?\n10115\n",
			"4711\n10115"},
		{"only a quote keeps everything",
			"> quoted only\n> nothing new\n",
			"> quoted only\n> nothing new"},
		{"only history keeps everything",
			"-----Original Message-----\nFrom: A\nSent: today\nTo: B\nSubject: x\n\nold",
			"-----Original Message-----\nFrom: A\nSent: today\nTo: B\nSubject: x\n\nold"},
		{"a thanks line above the attribution stays",
			"Thanks,\nOn Mon, Jan 8, 2024 at 9:15 AM Support <support@shop.example> wrote:\n> x\n",
			"Thanks,"},
		{"a sentence ending in a colon is not an attribution",
			"Here is what I did:\n1. restarted\n2. reinstalled",
			"Here is what I did:\n1. restarted\n2. reinstalled"},
		{"a From: line in the text is not a header block",
			"From: my point of view the app is slow.\nCan you check?",
			"From: my point of view the app is slow.\nCan you check?"},
		{"forwarded mail is kept",
			"See below.\n\n---------- Forwarded message ---------\nFrom: Carol <carol@corp.example>\nDate: Mon, Jan 8, 2024\nSubject: Broken link\nTo: Bob\n\nThe link is broken.",
			"See below.\n\n---------- Forwarded message ---------\nFrom: Carol <carol@corp.example>\nDate: Mon, Jan 8, 2024\nSubject: Broken link\nTo: Bob\n\nThe link is broken."},
		{"empty", "", ""},

		// Cases written from what github/email_reply_parser's fixtures (real
		// mails from many clients) show.
		{"outlook's dashed rule above a bold header block",
			"Done on my side.\n\n\n ------------------------------\n\n*From:* Billing Team [mailto:billing@shop.example]\n*Sent:* Friday, March 01, 2024 2:10 PM\n*To:* kim@corp.example\n*Subject:* Your invoice is ready\n\n\n\nDear customer,\n\nyour invoice is attached.\n",
			"Done on my side."},
		{"a dashed rule with a plain header block",
			"Received, thank you.\n-----------------------\nFrom: Support [support@shop.example]\nSent: 2 March 2024 09:00\nTo: Kim\nSubject: Delivery\n\nYour parcel left the warehouse.",
			"Received, thank you."},
		{"a dashed rule in the text stays when no history follows",
			"Step one\n----------\nStep two",
			"Step one\n----------\nStep two"},
		{"a sentence starting like a mobile signature stays",
			"Here is the photo of the broken lid.\n\nSent from my desk, which is much easier than from my phone.",
			"Here is the photo of the broken lid.\n\nSent from my desk, which is much easier than from my phone."},
		{"a device name of several words is a signature",
			"Please cancel order 88.\n\nSent from my Verizon Wireless BlackBerry",
			"Please cancel order 88."},
		{"samsung's signature ends with a period",
			"The code does not work.\n\nSent from my Samsung Galaxy smartphone.",
			"The code does not work."},
		{"outlook mobile's signature",
			"Call me at noon.\n\nGet Outlook for Android",
			"Call me at noon."},
		{"a mobile signature mid-text stays",
			"Sent from my iPad the first time, then from my laptop.\nBoth failed.",
			"Sent from my iPad the first time, then from my laptop.\nBoth failed."},
		{"an attribution wrapped over three lines",
			"Renders fine for me too.\n\nOn Mar 4, 2024, at 11:20 AM, Jordan Lee\n<reply+abc@notifications.example>\nwrote:\n\n> Is this fixed already?\n",
			"Renders fine for me too."},
		{"an attribution wrapped before wrote",
			":+1:\n\nOn Mon, Mar 4, 2024 at 8:59 AM, Release Bot\n<bot@ci.example>wrote:\n\n> Steps 1-3 are live.\n",
			":+1:"},
		{"a dash signature after the text",
			"Thanks, that helps a lot.\n\n-Priya Raman",
			"Thanks, that helps a lot."},
		{"a list item is not a dash signature",
			"Two things:\n\n- reset the router\n- call us back",
			"Two things:\n\n- reset the router\n- call us back"},
		{"a mailing-list footer under underscores",
			"How do I export all invoices at once?\n\n-Sam\n\n\n_______________________________________________\nusers mailing list\nusers@lists.example\nhttps://lists.example/listinfo/users",
			"How do I export all invoices at once?"},
		{"inline answers with blank lines between the quotes",
			"On Tue, Apr 2, 2024 at 4:22 PM, Support <support@shop.example> wrote:\n\n> Which model do you have?\n>\n\nThe X200.\n\n>\n> And the serial number?\n>\n\nSN-4471.\n\n>\n> -- Support\n\n\n--\nAlex",
			"The X200.\n\nSN-4471."},
		{"a double dash inside a line is not a signature",
			"The update -- the one from Monday -- broke the export.\n\nRegards",
			"The update -- the one from Monday -- broke the export.\n\nRegards"},
		{"a line starting with On and a colon is not an attribution",
			"On the server you can run:\n\n    status --all\n\nOn 9 Apr 2024, at 2:47, Kai Berg wrote:\n\n> The service stopped.\n",
			"On the server you can run:\n\n    status --all"},
		{"one is not on",
			"Thanks, this is helpful.\n\nOne question I still have:\n\nwhere is the log?\n\nOn Oct 1, 2024, at 11:55 PM, Support wrote:\n\n> We found the cause.\n",
			"Thanks, this is helpful.\n\nOne question I still have:\n\nwhere is the log?"},
		{"a reply directly above the underscores",
			"Works now, thanks\n________________________________________\nFrom: Support [support@shop.example]\nSent: Friday, 5 April 2024 5:08 p.m.\nTo: Kim\nSubject: [#42] Login\n\nPlease try again.",
			"Works now, thanks"},
		{"a bottom-posted answer under the quote",
			"Hi,\nOn Tue, 2024-04-02 at 18:02 +0530, Kim wrote:\n> How do I delete all keys?\n\nList the keys and delete each.\n\n> \n> -Kim\n",
			"Hi,\n\nList the keys and delete each."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewText(tt.in)
			if got != tt.want {
				t.Fatalf("NewText:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestSanitizeHTML(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		contains []string
		absent   []string
	}{
		{"text and formatting stay", `<p>Hello <b>Ada</b><br>line</p>`, []string{"<p>Hello <b>Ada</b><br>line</p>"}, nil},
		{"script goes", `<p>x</p><script>alert(1)</script>`, []string{"<p>x</p>"}, []string{"script", "alert"}},
		{"style element and attribute go", `<style>body{display:none}</style><p style="color:red">x</p>`, []string{"<p>x</p>"},
			[]string{"style", "display"}},
		{"iframe, object and forms go", `<iframe src="https://evil.example"></iframe><object data="x"></object><form action="https://evil.example"><input name="p"><button>Go</button></form>`,
			nil, []string{"iframe", "object", "form", "input", "button", "evil"}},
		{"event handlers go", `<a href="https://ok.example" onclick="steal()">l</a><img src="cid:i.png" onerror="steal()">`,
			[]string{`href="https://ok.example"`, `src="cid:i.png"`}, []string{"onclick", "onerror", "steal"}},
		{"javascript URLs go", `<a href="javascript:alert(1)">x</a><a href="JaVaScRiPt:alert(1)">y</a>`, nil, []string{"javascript", "alert"}},
		{"links get nofollow and a new tab", `<a href="https://shop.example/o/1">order</a>`,
			[]string{`rel="nofollow noopener"`, `target="_blank"`}, nil},
		{"cid images stay", `<img src="cid:image001.png@01DA">`, []string{`src="cid:image001.png@01DA"`}, nil},
		{"data images stay, svg does not", `<img src="data:image/png;base64,iVBORw0KGgo="><img src="data:image/svg+xml;base64,PHN2Zz4=">`,
			[]string{`src="data:image/png;base64,iVBORw0KGgo="`}, []string{"svg"}},
		{"http images are emptied", `<img src="http://tracker.example/p.gif">`, nil, []string{"tracker"}},
		// Remote images tell the sender when and where the mail was read.
		{"remote images go, their alt text stays", `<p>Hi<img src="https://tracker.example/p.gif?u=ada" alt="Our logo (new)" width="1"></p>`,
			[]string{"<p>HiOur logo (new)</p>"}, []string{"<img", "tracker", "p.gif"}},
		{"remote image without alt goes", `<p>a<IMG SRC="https://tracker.example/p.gif"/>b</p>`, []string{"<p>ab</p>"}, []string{"img", "tracker"}},
		{"protocol-relative and http images go", `<img src="//tracker.example/a.gif" alt="A"><img src="http://tracker.example/b.gif" alt="B">`,
			[]string{"AB"}, []string{"img", "tracker"}},
		{"inline images stay beside a dropped one", `<img src="cid:logo@x" alt="logo"><img src="https://t.example/x.gif" alt="pixel">`,
			[]string{`<img src="cid:logo@x" alt="logo">`, "pixel"}, []string{"t.example"}},
		{"data image in a link stays, remote image in a link goes", `<a href="https://shop.example"><img src="https://cdn.example/b.png" alt="Shop"></a>`,
			[]string{`href="https://shop.example"`, ">Shop</a>"}, []string{"cdn.example", "<img"}},
		{"data links to html go", `<a href="data:text/html;base64,PHNjcmlwdD4=">x</a>`, nil, []string{"data:text"}},
		{"meta refresh and base go", `<meta http-equiv="refresh" content="0;url=https://evil.example"><base href="https://evil.example">`, nil,
			[]string{"meta", "base", "evil"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SanitizeHTML(tt.in)
			for _, c := range tt.contains {
				if !strings.Contains(got, c) {
					t.Fatalf("%q does not contain %q", got, c)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(strings.ToLower(got), strings.ToLower(a)) {
					t.Fatalf("%q contains %q", got, a)
				}
			}
		})
	}
	if SanitizeHTML("  \n") != "" {
		t.Fatal("blank HTML is not empty")
	}
}

// The alt text that replaces a remote image is text: markup in it (which
// bluemonday's alt pattern refuses anyway) stays escaped.
func TestDropRemoteImagesEscapesAlt(t *testing.T) {
	got := dropRemoteImages(`<p><img src="https://t.example/x.gif" alt="&lt;script&gt;x()&lt;/script&gt;"></p>`)
	if got != "<p>&lt;script&gt;x()&lt;/script&gt;</p>" {
		t.Fatalf("%q", got)
	}
}

func TestHTMLText(t *testing.T) {
	got := HTMLText(`<html><head><title>T</title><style>p{}</style></head><body><p>Hello&nbsp;Ada &amp; Bob</p><div>Line 2<br>Line 3</div><script>x()</script></body></html>`)
	want := "Hello Ada & Bob\nLine 2\nLine 3"
	if got != want {
		t.Fatalf("HTMLText = %q, want %q", got, want)
	}
}
