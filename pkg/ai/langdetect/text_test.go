package langdetect

import (
	"runtime"
	"testing"
)

func TestDetectText(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		want     string
		reliable bool
	}{
		{"English sentence", "My order has not arrived yet, can you help me?", "en", true},
		{"English short", "The house is big", "en", true},
		{"English greeting", "Hello, how are you?", "en", true},
		{"Spanish sentence", "Mi pedido aún no ha llegado, ¿me pueden ayudar?", "es", true},
		{"Spanish short", "Gracias por su ayuda", "es", true},
		{"French sentence", "Ma commande n'est pas encore arrivée, pouvez-vous m'aider ?", "fr", true},
		{"French short", "Merci beaucoup pour votre aide", "fr", true},
		{"German sentence", "Meine Bestellung ist noch nicht angekommen, können Sie mir helfen?", "de", true},
		{"German short", "Danke schön", "de", true},
		{"Italian sentence", "Il mio ordine non è ancora arrivato, potete aiutarmi?", "it", true},
		{"Portuguese sentence", "Meu pedido ainda não chegou, vocês podem me ajudar?", "pt", true},
		{"Dutch sentence", "Mijn bestelling is nog niet aangekomen, kunt u mij helpen?", "nl", true},
		{"Catalan, which the trigram profiles lack", "Moltes gràcies per la vostra ajuda", "ca", true},
		{"Polish sentence", "Moje zamówienie jeszcze nie dotarło, czy możecie mi pomóc?", "pl", true},
		{"Swedish sentence", "Min beställning har inte kommit än, kan ni hjälpa mig?", "sv", true},
		{"Russian sentence", "Здравствуйте, мой заказ еще не пришел, помогите пожалуйста", "ru", true},
		{"Ukrainian sentence", "Добрий день, моє замовлення ще не прийшло", "uk", true},
		{"Arabic, not Persian", "مرحبا، طلبي لم يصل بعد، هل يمكنكم مساعدتي؟", "ar", false},
		{"Persian", "سلام، سفارش من هنوز نرسیده است", "fa", true},
		{"Japanese with kanji and kana", "注文した商品がまだ届いていません", "ja", true},
		{"Japanese kanji-heavy", "日本語の文章です。東京都新宿区", "ja", true},
		{"Chinese", "我的订单还没到，你们能帮我吗？", "zh", true},
		{"Korean", "주문한 상품이 아직 도착하지 않았습니다", "ko", true},
		{"Greek", "Η παραγγελία μου δεν έχει φτάσει ακόμα", "el", true},
		{"Hindi", "नमस्ते, मेरा ऑर्डर अभी तक नहीं आया", "hi", true},
		{"single English word is a guess", "Hello", "en", false},
		{"single Spanish word is a guess", "Hola", "es", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DetectText(tt.text)
			if got.Lang != tt.want {
				t.Fatalf("DetectText(%q) = %+v, want %s", tt.text, got, tt.want)
			}
			if tt.reliable && !got.Reliable {
				t.Fatalf("DetectText(%q) = %+v, want a reliable answer", tt.text, got)
			}
			if got.Confidence < 0 || got.Confidence > 1 {
				t.Fatalf("confidence %v out of range", got.Confidence)
			}
		})
	}
}

func TestDetectTextWithoutLanguage(t *testing.T) {
	for _, text := range []string{"", "   ", "12345", "!!! ???", "😀😀", "€ 42,00"} {
		if got := DetectText(text); got.Lang != "" || got.Reliable {
			t.Errorf("DetectText(%q) = %+v, want no language", text, got)
		}
	}
	// Armenian has no profile: a script we cannot place gives no answer rather than a wrong one.
	if got := DetectText("Բարեւ, իմ պատվերը դեռ չի հասել"); got.Lang != "" {
		t.Errorf("Armenian detected as %+v, want no language", got)
	}
}

// TestMemory bounds the detector's footprint, since the translation service has to idle under
// 150 MB: it measures the whole heap of the test process after both detectors have built their
// tables and run.
func TestMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 3 {
		_ = DetectText("Mi pedido aún no ha llegado, ¿me pueden ayudar?")
		_ = DetectText("Здравствуйте, мой заказ еще не пришел")
		if _, err := ForLocation(Location{Country: "Switzerland", State: "Ticino", City: "Lugano"}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap after init: %.1f MiB before warm-up, %.1f MiB after (growth %.2f MiB)",
		float64(before.HeapAlloc)/(1<<20), float64(after.HeapAlloc)/(1<<20), float64(growth)/(1<<20))
	if after.HeapAlloc > 16<<20 {
		t.Fatalf("heap is %d bytes after warm-up, want under 16 MiB", after.HeapAlloc)
	}
}
