package langdetect

import (
	"strings"
	"sync"
)

// commonWords lists, for the Latin-script languages a helpdesk meets most, function words and the
// vocabulary of short support messages (greetings, thanks, "order", "help"). A word may appear
// under several languages; it then counts for each, and the words unique to one language decide.
// Single letters are left out: they are too ambiguous to count.
var commonWords = map[string]string{
	"en": "the and is are was were you your my this that with for have has not what how hello hi thanks thank " +
		"please order help can will would from of be we our they there yes good morning big house where when why " +
		"does did dont im its been which about just get still arrived yet received refund account",
	"es": "el la los las que de y es está están por para con una un pero muy gracias hola qué cómo dónde cuándo " +
		"pedido mi mis su sus tengo tiene aún todavía ya no sí buenos días buenas tardes noches ayuda favor del al " +
		"también este esta eso hay he ha han llegado quiero puede usted cuenta recibido",
	"fr": "le les des et est sont une je vous nous il elle pas avec pour dans sur mais très merci bonjour bonsoir " +
		"salut oui non ma mon mes votre commande aide qui que ce cette au aux du été être avoir beaucoup plaît " +
		"toujours reçu compte cest jai nest jusquà quil",
	"de": "der die das und ist sind nicht ich sie wir ihr mit für auf ein eine einen dem den des zu von bitte danke " +
		"hallo guten tag morgen meine mein bestellung noch auch wie was wo warum haben hat habe kein keine schön " +
		"sehr ja nein aber oder ihre ihnen angekommen erhalten konto",
	"it": "il lo la gli le di che è sono non per con una un del della delle dei mi ti ci grazie ciao buongiorno " +
		"buonasera ordine aiuto molto anche ma dove quando perché ho hai ha abbiamo questo questa mille sempre " +
		"ancora arrivato prego ricevuto",
	"pt": "os as que de do da dos das em no na nos nas um uma é não sim com para por obrigado obrigada olá oi bom " +
		"dia boa tarde noite meu minha pedido ajuda ainda você está estão muito mas como onde quando porque pela " +
		"pelo tenho tem chegou recebi conta",
	"nl": "de het een en is zijn niet ik je jij wij we met voor op van dat die dit maar ook heel dank bedankt hallo " +
		"goedemorgen goedendag mijn bestelling nog hulp wat hoe waar waarom heb hebt heeft geen ja nee " +
		"alstublieft graag uw ontvangen aangekomen",
	"ca": "el la els les de que és són amb per però molt gràcies hola bon dia bona tarda nit com estàs està meu meva " +
		"comanda ajuda encara no sí un una del al aquest aquesta perquè quan tinc té també doncs vostè dels pels " +
		"rebut",
	"pl": "na nie jest są się to że do od po jak co ale dla dzień dobry dziękuję dzięki proszę moje mój moja " +
		"zamówienie pomoc jeszcze czy tak mam ma bardzo cześć witam",
	"sv": "och att det som en är inte jag du vi med för på av till den har hej tack god morgon min mitt beställning " +
		"hjälp ännu ja nej men också vad hur var varför mycket",
	"da": "og at det som en er ikke jeg du vi med for på af til den har hej tak god morgen min mit bestilling " +
		"hjælp endnu ja nej men også hvad hvordan hvor hvorfor meget tusind mange",
	"no": "og at det som en er ikke jeg du vi med for på av til den har hei takk god morgen min mitt bestilling " +
		"hjelp ennå ja nei men også hva hvordan hvor hvorfor mye",
	"fi": "ja on ei se että mutta kiitos hei moi hyvää huomenta päivää minun tilaus tilaukseni apua vielä kyllä " +
		"olen ole ovat mitä miten missä miksi paljon tämä tuo",
	"cs": "je jsou se na to že ale pro do od jak co děkuji díky dobrý den prosím moje můj objednávka pomoc ještě " +
		"ano ne velmi mám má",
	"ro": "și este sunt nu de la cu pentru pe în un mulțumesc mersi bună ziua comanda comandă ajutor încă da " +
		"foarte am are ce cum unde când meu mea",
	"hu": "az és hogy nem van vagyok egy is de köszönöm köszi szia jó napot reggelt rendelés rendelésem segítség " +
		"még igen nagyon mi hol miért hogyan",
	"tr": "ve bir bu da de için ile değil ben sen biz merhaba teşekkür teşekkürler ederim günaydın iyi siparişim " +
		"sipariş yardım henüz hala evet hayır çok ne nasıl nerede neden var yok",
	"ru": "и в на что это как не я вы мы у меня нет да был была есть когда где почему мой моя мои заказ еще ещё " +
		"здравствуйте привет спасибо пожалуйста пришел пришёл помощь добрый день ваш очень",
	"uk": "і в на що це як не я ви ми у мене немає так був була є коли де чому мій моя моє мої замовлення ще " +
		"привіт дякую будь ласка прийшло допомога добрий день ваш дуже",
	"bg": "и в на че това как не аз вие ние има няма да беше кога къде защо моята моят поръчка още здравейте " +
		"благодаря моля пристигна помощ добър ден вашата много",
	"id": "dan yang di ini itu dengan untuk tidak saya anda kami terima kasih halo selamat pagi pesanan bantuan " +
		"belum sudah ya sangat apa bagaimana mengapa ada",
}

// commonWordOrder fixes the iteration order so that ties resolve the same way on every run.
var commonWordOrder = []string{"en", "es", "fr", "de", "it", "pt", "nl", "ca", "pl", "sv", "da", "no", "fi", "cs", "ro", "hu", "tr", "id", "ru", "uk", "bg"}

// commonWordIndex maps each word to the languages listing it, built on first use.
var commonWordIndex = sync.OnceValue(func() map[string][]string {
	idx := map[string][]string{}
	for _, lang := range commonWordOrder {
		for _, w := range strings.Fields(commonWords[lang]) {
			idx[w] = append(idx[w], lang)
		}
	}
	return idx
})
