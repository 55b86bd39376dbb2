package apertium

import (
	"fmt"
	"strings"
)

// Word lists of the generated corpus, per source language. The sentences need not be good
// language: unknown words, odd agreement and punctuation are what a corpus for comparing two
// ways of running the same pipeline should exercise.
var corpusWords = map[string]struct{ adj, noun, verb, extra []string }{
	"en": {
		adj:   []string{"small", "big", "red", "old", "new", "happy", "broken", "late", "wrong", "blue"},
		noun:  []string{"order", "invoice", "house", "customer", "package", "password", "refund", "city", "printer", "account"},
		verb:  []string{"sees", "needs", "opens", "sends", "wants", "finds", "pays", "cancels", "loses", "checks"},
		extra: []string{"today", "tomorrow", "again", "please", "now", "yesterday", "quickly", "soon"},
	},
	"es": {
		adj:   []string{"pequeño", "grande", "rojo", "viejo", "nuevo", "feliz", "roto", "tarde", "azul", "blanca"},
		noun:  []string{"pedido", "factura", "casa", "cliente", "paquete", "contraseña", "reembolso", "ciudad", "impresora", "cuenta"},
		verb:  []string{"ve", "necesita", "abre", "envía", "quiere", "encuentra", "paga", "cancela", "pierde", "revisa"},
		extra: []string{"hoy", "mañana", "otra vez", "por favor", "ahora", "ayer", "rápidamente", "pronto"},
	},
	"ca": {
		adj:   []string{"petit", "gran", "vermell", "vell", "nou", "feliç", "trencat", "tard", "blau", "blanca"},
		noun:  []string{"comanda", "factura", "casa", "client", "paquet", "contrasenya", "reemborsament", "ciutat", "impressora", "compte"},
		verb:  []string{"veu", "necessita", "obre", "envia", "vol", "troba", "paga", "cancel·la", "perd", "revisa"},
		extra: []string{"avui", "demà", "una altra vegada", "si us plau", "ara", "ahir", "ràpidament", "aviat"},
	},
	"pt": {
		adj:   []string{"pequeno", "grande", "vermelho", "velho", "novo", "feliz", "quebrado", "atrasado", "azul", "branca"},
		noun:  []string{"pedido", "fatura", "casa", "cliente", "pacote", "senha", "reembolso", "cidade", "impressora", "conta"},
		verb:  []string{"vê", "precisa", "abre", "envia", "quer", "encontra", "paga", "cancela", "perde", "verifica"},
		extra: []string{"hoje", "amanhã", "outra vez", "por favor", "agora", "ontem", "rapidamente", "logo"},
	},
	"fr": {
		adj:   []string{"petit", "grand", "rouge", "vieux", "nouveau", "heureux", "cassé", "bleu", "blanche", "dernier"},
		noun:  []string{"commande", "facture", "maison", "client", "colis", "mot de passe", "remboursement", "ville", "imprimante", "compte"},
		verb:  []string{"voit", "veut", "ouvre", "envoie", "trouve", "paie", "annule", "perd", "vérifie", "attend"},
		extra: []string{"aujourd'hui", "demain", "encore", "s'il vous plaît", "maintenant", "hier", "vite", "bientôt"},
	},
}

// trickyLines are hand-written inputs around the format: markup-like text, escapes, emoji, blanks
// of every kind, empty lines and texts, long lines.
var trickyLines = []string{
	"",
	" ",
	"\n",
	"\n\n",
	"<b>Hello</b> & goodbye",
	"a < b and b > c",
	"<b>x</b>",
	"if (a < b) { return a; } else { return $b; }",
	"Path C:\\Users\\me\\file.txt or /usr/share/apertium",
	"Mail me at user@example.com, ^caret^ [brackets] and {braces}",
	"[@/etc/passwd] is not a file reference",
	"[\\@ escaped at sign",
	"A line with .[] in it.",
	"Thanks! 😀🎉 The order 👍 arrived.",
	"Emoji only: 🙂🙂🙂",
	"Tilde~separated~words and ~~double",
	"Tabs\tin\tthe\ttext",
	"  Leading and trailing spaces  ",
	"Line one.\n\nLine <two>.",
	"Windows\r\nline\r\n\r\nbreaks",
	"First\n\n\nthird line after two empty ones",
	"Trailing empty lines\n\n\n\n",
	"\n\nLeading empty lines",
	"UPPER CASE SENTENCE WITH USB AND OK",
	"ümlauts, accents: café, naïve, señor",
	"Numbers 1,234.56 and 3/4 and #123",
	"Quotes \"double\" and 'single' and «guillemets»",
	"Ends without period",
	"Question? Exclamation! Ellipsis...",
	"Control\x01char and NUL\x00byte",
	"Spaces" + strings.Repeat(" ", 9000) + "after a long blank",
}

// corpus returns at least n deterministic texts in lang: generated sentences (short, with a
// blank line, and very long ones) followed by the tricky lines.
func corpus(lang string, n int) []string {
	w, ok := corpusWords[lang]
	if !ok {
		panic("no corpus words for " + lang)
	}
	pick := func(list []string, k int) string { return list[k%len(list)] }
	sentence := func(k int) string {
		return fmt.Sprintf("%s %s %s %s %s %s", pick(w.adj, k), pick(w.noun, k/3), pick(w.verb, k/7),
			pick(w.adj, k/11+1), pick(w.noun, k/13+2), pick(w.extra, k/5))
	}
	var out []string
	for k := 0; len(out) < n-len(trickyLines); k++ {
		s := sentence(k)
		switch k % 10 {
		case 0:
			s = strings.ToUpper(s[:1]) + s[1:] + "."
		case 1:
			s += "?"
		case 2:
			s = sentence(k) + ".\n\n" + sentence(k+1) + "!"
		case 3:
			var b strings.Builder
			for j := 0; j < 60; j++ {
				b.WriteString(sentence(k + j))
				b.WriteString(", ")
			}
			s = b.String() + "end."
		case 4:
			s = fmt.Sprintf("%s <b>%s</b> %s", pick(w.noun, k), sentence(k), pick(w.extra, k))
		case 5:
			s = s + " 😀 #" + fmt.Sprint(k)
		case 6:
			s = "  " + s + "\n"
		}
		out = append(out, s)
	}
	return append(out, trickyLines...)
}
