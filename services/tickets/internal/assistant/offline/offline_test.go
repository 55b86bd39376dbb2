package offline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"supportplatform.dev/ai/mt"
	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/services/tickets/internal/assistant"
)

func TestTokens(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       []string
	}{
		{"stop words and one letter words go", "I am at the a of und der le la el", nil},
		{"case and punctuation", "REFUND, refund! Refund?", []string{"refund", "refund", "refund"}},
		{"plural and past tense", "refunds refunded", []string{"refund", "refund"}},
		{"ing and doubled consonant", "shipping shipped ship", []string{"ship", "ship", "ship"}},
		{"ss is no plural", "address addresses", []string{"addres", "addres"}},
		{"digits stay", "error 500", []string{"error", "500"}},
		{"french elision", "l'application", []string{"applic"}},
		{"diacritics fold", "Contraseña contrasena", []string{"contras", "contras"}},
		{"german sharp s", "Straße strasse", []string{"stras", "stras"}},
		{"other scripts are words", "заказ", []string{"заказ"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tokens(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tokens(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestStemJoinsWordFamilies(t *testing.T) {
	for _, family := range [][]string{
		{"charge", "charges", "charged", "charging"},
		{"payment", "payments", "paying", "pay"},
		{"invoice", "invoices", "invoiced"},
		{"cancel", "cancelled", "canceled", "cancellation"},
		{"delete", "deleted", "deletion", "deleting"},
		{"factura", "facturas", "facture", "factures"},
		{"upgrade", "upgraded", "upgrading"},
	} {
		want := stem(family[0])
		for _, w := range family[1:] {
			if got := stem(w); got != want {
				t.Errorf("stem(%q) = %q, stem(%q) = %q: want one stem", w, got, family[0], want)
			}
		}
	}
}

func testTopics() []assistant.Topic {
	return []assistant.Topic{
		{TopicID: 1, Name: "Billing", Description: "Charges, payment methods, declined cards.", Documents: []assistant.Document{
			{DocumentID: 11, TopicID: 1, Title: "Declined payments", Relevance: 2, Content: "A payment is declined when the card expired or the bank blocks it. Add another card under Settings > Billing."},
		}},
		{TopicID: 2, Name: "Shipping", Description: "Delivery of parcels, tracking numbers, late deliveries.", Documents: []assistant.Document{
			{DocumentID: 21, TopicID: 2, Title: "Tracking your parcel", Relevance: 2, Content: "The shipping email has a tracking number. A parcel takes 2 to 4 days to arrive."},
		}},
		{TopicID: 3, Name: "Password", Description: "Signing in, forgotten passwords, reset links.", Documents: []assistant.Document{
			{DocumentID: 31, TopicID: 3, Title: "Resetting your password", Relevance: 2, Content: "Click Forgot password on the sign-in page. The reset link arrives by email and is valid for 60 minutes. Check your spam folder if the reset email does not arrive."},
		}},
	}
}

func TestDetectTopicsOrdersClearCases(t *testing.T) {
	e := New(Options{})
	for _, tt := range []struct {
		text string
		want int64
	}{
		{"My card was declined when I tried to pay", 1},
		{"Where is my parcel? The tracking number shows nothing", 2},
		{"I forgot my password and the reset email never arrives", 3},
	} {
		scores, prov, err := e.DetectTopics(context.Background(), tt.text, testTopics())
		if err != nil {
			t.Fatal(err)
		}
		if prov != Provenance || prov.Engine != "offline" || prov.Model != "bm25-v1" {
			t.Errorf("provenance %+v", prov)
		}
		if len(scores) != 3 {
			t.Fatalf("%q: %d scores, want one per topic", tt.text, len(scores))
		}
		if scores[0].TopicID != tt.want {
			t.Errorf("%q: best topic %d, want %d (%+v)", tt.text, scores[0].TopicID, tt.want, scores)
		}
		if scores[0].Score < assistant.TopicThreshold || scores[0].Score > 1 {
			t.Errorf("%q: best score %.3f, want in [threshold %.2f, 1]", tt.text, scores[0].Score, assistant.TopicThreshold)
		}
		for _, s := range scores[1:] {
			if s.Score >= assistant.TopicThreshold || s.Score < 0 {
				t.Errorf("%q: topic %d scores %.3f, want in [0, threshold)", tt.text, s.TopicID, s.Score)
			}
		}
	}
}

func TestDetectTopicsWithoutOverlapScoresZero(t *testing.T) {
	scores, _, err := New(Options{}).DetectTopics(context.Background(), "xyzzy plugh quux", testTopics())
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != 3 {
		t.Fatalf("%d scores, want 3", len(scores))
	}
	for _, s := range scores {
		if s.Score != 0 {
			t.Errorf("topic %d scores %v, want 0", s.TopicID, s.Score)
		}
	}
	// Ties keep the topics' order.
	if ids := []int64{scores[0].TopicID, scores[1].TopicID, scores[2].TopicID}; !slices.Equal(ids, []int64{1, 2, 3}) {
		t.Errorf("order %v, want the input order", ids)
	}
}

func TestRankDocuments(t *testing.T) {
	docs := []assistant.Document{
		{DocumentID: 1, Title: "Shipping costs", Content: "Standard shipping costs 4.90 euros; express 9.90.", Relevance: 1},
		{DocumentID: 2, Title: "Returns", Content: "Return an item within 30 days with the prepaid label.", Relevance: 5},
		{DocumentID: 3, Title: "Refund times", Content: "A refund reaches your card within 5 to 10 business days.", Relevance: 1},
		// 4 and 5 say the same; the link's relevance orders them.
		{DocumentID: 4, Title: "Customs", Content: "Customs duties are paid on delivery.", Relevance: 1},
		{DocumentID: 5, Title: "Customs", Content: "Customs duties are paid on delivery.", Relevance: 3},
	}
	ranked, prov, err := New(Options{}).RankDocuments(context.Background(), "When will my refund be on my card?", docs)
	if err != nil {
		t.Fatal(err)
	}
	if prov != Provenance {
		t.Errorf("provenance %+v", prov)
	}
	if len(ranked) != len(docs) || ranked[0].DocumentID != 3 {
		t.Fatalf("ranking %+v, want document 3 first", ranked)
	}
	for i, r := range ranked {
		if r.Score < 0 || r.Score > 1 || (i > 0 && r.Score > ranked[i-1].Score) {
			t.Errorf("scores not in [0, 1] descending: %+v", ranked)
		}
	}
	ranked, _, err = New(Options{}).RankDocuments(context.Background(), "customs duties", docs)
	if err != nil {
		t.Fatal(err)
	}
	if ranked[0].DocumentID != 5 || ranked[1].DocumentID != 4 {
		t.Errorf("equal texts: got %d, %d first, want 5 (relevance 3) then 4", ranked[0].DocumentID, ranked[1].DocumentID)
	}
}

func rankedDocs(topics []assistant.Topic) []assistant.RankedDocument {
	var out []assistant.RankedDocument
	for _, tp := range topics {
		for _, d := range tp.Documents {
			out = append(out, assistant.RankedDocument{Document: d, Score: 0.5})
		}
	}
	return out
}

func TestPrepareReplyGrounded(t *testing.T) {
	r, prov, err := New(Options{}).PrepareReply(context.Background(), assistant.ReplyRequest{
		Message: "I forgot my password and the reset email never arrives", EndUserName: "Ada", Language: "en",
		Documents: rankedDocs(testTopics()[2:]),
	})
	if err != nil {
		t.Fatal(err)
	}
	if prov != Provenance {
		t.Errorf("provenance %+v", prov)
	}
	if r.Language != "en" || !slices.Equal(r.DocumentIDs, []int64{31}) {
		t.Errorf("reply language %q documents %v, want en [31]", r.Language, r.DocumentIDs)
	}
	for _, want := range []string{"Hi Ada,", "help centre", "reset link arrives by email", "Check your spam folder", "reply to this message"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("reply lacks %q:\n%s", want, r.Text)
		}
	}
}

func TestPrepareReplyNotGrounded(t *testing.T) {
	for _, msg := range []string{
		"My parcel never arrived",               // no word in common with the password document
		"What are your opening hours on Sunday", // nothing at all
		"email",                                 // one word: below the floor
	} {
		r, prov, err := New(Options{}).PrepareReply(context.Background(), assistant.ReplyRequest{
			Message: msg, EndUserName: "Ada", Language: "en", Documents: rankedDocs(testTopics()[2:]),
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r, assistant.Reply{}) {
			t.Errorf("%q: reply %+v, want none", msg, r)
		}
		if prov != Provenance {
			t.Errorf("provenance %+v", prov)
		}
	}
	r, _, err := New(Options{}).PrepareReply(context.Background(), assistant.ReplyRequest{Message: "reset my password", EndUserName: "Ada"})
	if err != nil || !reflect.DeepEqual(r, assistant.Reply{}) {
		t.Errorf("without documents: %+v, %v; want no reply", r, err)
	}
}

// fakeTranslator serves the pairs it is given by tagging texts with the
// target ("[es] ..."), or answers from a table; it records the calls.
type fakeTranslator struct {
	mu    sync.Mutex
	pairs map[string]bool
	table map[string]string
	fail  error
	calls []string
}

func (f *fakeTranslator) Name() string { return "fake" }

func (f *fakeTranslator) Supports(_ context.Context, p mt.Pair) (bool, error) {
	return f.pairs[p.String()], nil
}

func (f *fakeTranslator) Translate(_ context.Context, p mt.Pair, texts []string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, p.String())
	if f.fail != nil {
		return nil, f.fail
	}
	if !f.pairs[p.String()] {
		return nil, mt.ErrUnsupportedPair
	}
	out := make([]string, len(texts))
	for i, s := range texts {
		if v, ok := f.table[s]; ok {
			out[i] = v
		} else {
			out[i] = "[" + p.Target + "] " + s
		}
	}
	return out, nil
}

func TestPrepareReplyGreetsInTheEndUsersLanguage(t *testing.T) {
	tr := &fakeTranslator{pairs: map[string]bool{"en->es": true, "en->fr": true, "en->de": true}}
	for _, tt := range []struct{ lang, greeting, lead string }{
		{"es", "Hola Ada,", "Gracias por su mensaje"},
		{"fr", "Bonjour Ada,", "Merci pour votre message"},
		{"de", "Hallo Ada,", "Vielen Dank für Ihre Nachricht"},
	} {
		r, _, err := New(Options{Translator: tr}).PrepareReply(context.Background(), assistant.ReplyRequest{
			Message: "I forgot my password and the reset email never arrives", EndUserName: "Ada", Language: tt.lang,
			Documents: rankedDocs(testTopics()),
		})
		if err != nil {
			t.Fatal(err)
		}
		if r.Language != tt.lang || !strings.HasPrefix(r.Text, tt.greeting+"\n\n"+tt.lead) {
			t.Errorf("%s: language %q, reply:\n%s", tt.lang, r.Language, r.Text)
		}
		// The passages are translated, the English original is not left.
		if !strings.Contains(r.Text, "["+tt.lang+"] ") || strings.Contains(r.Text, "Check your spam folder") && !strings.Contains(r.Text, "["+tt.lang+"] Check your spam folder") {
			t.Errorf("%s: passages not translated:\n%s", tt.lang, r.Text)
		}
		if !slices.Equal(r.DocumentIDs, []int64{31}) {
			t.Errorf("%s: documents %v, want [31]", tt.lang, r.DocumentIDs)
		}
	}
}

func TestPrepareReplyFallsBackToEnglish(t *testing.T) {
	req := assistant.ReplyRequest{
		Message: "I forgot my password and the reset email never arrives", EndUserName: "Ada", Language: "es",
		Documents: rankedDocs(testTopics()),
	}
	for name, tr := range map[string]mt.Translator{
		"no translator":      nil,
		"translator fails":   &fakeTranslator{pairs: map[string]bool{"en->es": true}, fail: errors.New("down")},
		"pair not available": &fakeTranslator{pairs: map[string]bool{"en->fr": true}},
	} {
		r, _, err := New(Options{Translator: tr}).PrepareReply(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if r.Language != "en" || !strings.HasPrefix(r.Text, "Hi Ada,") || !strings.Contains(r.Text, "Check your spam folder") {
			t.Errorf("%s: language %q, reply:\n%s", name, r.Language, r.Text)
		}
	}
}

func TestDetectTopicsTranslatesThroughAPivot(t *testing.T) {
	fr := "Je ne reçois pas le courriel pour changer mon mot de passe oublié"
	tr := &fakeTranslator{
		pairs: map[string]bool{"fr->es": true, "es->en": true},
		table: map[string]string{
			fr: "No recibo el correo para cambiar mi contraseña olvidada",
			"No recibo el correo para cambiar mi contraseña olvidada": "I do not receive the email to change my forgotten password",
		},
	}
	scores, _, err := New(Options{Translator: tr}).DetectTopics(context.Background(), fr, testTopics())
	if err != nil {
		t.Fatal(err)
	}
	if scores[0].TopicID != 3 || scores[0].Score < assistant.TopicThreshold {
		t.Errorf("scores %+v, want topic 3 above the threshold", scores)
	}
	if !slices.Equal(tr.calls, []string{"fr->es", "es->en"}) {
		t.Errorf("translations %v, want fr->es then es->en", tr.calls)
	}
	// Without the translator the French text shares nothing with the
	// English topics.
	scores, _, err = New(Options{}).DetectTopics(context.Background(), fr, testTopics())
	if err != nil {
		t.Fatal(err)
	}
	if scores[0].Score >= assistant.TopicThreshold {
		t.Errorf("without translator: %+v, want no topic above the threshold", scores)
	}
	// A failing translator leaves the original text's scores.
	failing := &fakeTranslator{pairs: map[string]bool{"fr->es": true, "es->en": true}, fail: errors.New("down")}
	got, _, err := New(Options{Translator: failing}).DetectTopics(context.Background(), fr, testTopics())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, scores) {
		t.Errorf("failing translator: %+v, want the untranslated scores %+v", got, scores)
	}
}

func TestEnglishIsNotTranslated(t *testing.T) {
	tr := &fakeTranslator{pairs: map[string]bool{"es->en": true}}
	if _, _, err := New(Options{Translator: tr}).DetectTopics(context.Background(), "I forgot my password and the reset email never arrives", testTopics()); err != nil {
		t.Fatal(err)
	}
	if len(tr.calls) != 0 {
		t.Errorf("translations %v for an English text", tr.calls)
	}
}

func TestDeterministic(t *testing.T) {
	run := func() string {
		e := New(Options{})
		ctx := context.Background()
		var b strings.Builder
		for _, msg := range []string{"My card was declined", "tracking number", "forgot password reset email", "nothing"} {
			s, _, _ := e.DetectTopics(ctx, msg, testTopics())
			d, _, _ := e.RankDocuments(ctx, msg, testTopics()[0].Documents)
			r, _, _ := e.PrepareReply(ctx, assistant.ReplyRequest{Message: msg, EndUserName: "Ada", Documents: rankedDocs(testTopics())})
			fmt.Fprintf(&b, "%v|%v|%+v\n", s, d, r)
		}
		return b.String()
	}
	first := run()
	for range 5 {
		if got := run(); got != first {
			t.Fatalf("second run differs:\n%s\nfirst:\n%s", got, first)
		}
	}
}

func TestSummarizeUsesTheTicketsSummary(t *testing.T) {
	s, prov, err := New(Options{}).Summarize(context.Background(), "Card declined", "Open", []assistant.Turn{
		{SenderType: "EndUser", Text: "My card was declined twice when paying for the annual plan."},
		{SenderType: "Agent", Text: "Your bank blocked the payment; please try again."},
	})
	if err != nil {
		t.Fatal(err)
	}
	if prov != Provenance {
		t.Errorf("provenance %+v", prov)
	}
	for _, want := range []string{"Subject: Card declined (2 messages).", "End user: My card was declined", "Status: Open."} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q: %s", want, s)
		}
	}
}

func TestIndexCacheExpires(t *testing.T) {
	clock := clocktest.New(time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC))
	e := New(Options{Now: clock.Now})
	a := e.topicIndex(testTopics())
	if b := e.topicIndex(testTopics()); a != b {
		t.Error("the same topics were indexed twice")
	}
	changed := testTopics()
	changed[0].Description += " Refunds too."
	if b := e.topicIndex(changed); a == b {
		t.Error("changed topics reused the old index")
	}
	clock.Advance(cacheTTL)
	if b := e.topicIndex(testTopics()); a == b {
		t.Error("an expired index was reused")
	}
}

func TestCacheEvictsTheOldest(t *testing.T) {
	clock := clocktest.New(time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC))
	c := newCache[int](clock.Now, time.Hour, 2, 1000)
	c.put(1, 1, 10)
	clock.Advance(time.Minute)
	c.put(2, 2, 10)
	clock.Advance(time.Minute)
	c.put(3, 3, 10)
	if _, ok := c.get(1); ok {
		t.Error("the oldest entry survived")
	}
	for _, k := range []uint64{2, 3} {
		if v, ok := c.get(k); !ok || v != int(k) {
			t.Errorf("entry %d: %v, %v", k, v, ok)
		}
	}
}

// The cost budget bounds the cache whatever the number of entries: ever
// larger values (a customer's growing topic set, a new key each time) push
// the oldest out, a value over the whole budget is not kept, and replacing
// a key does not count it twice.
func TestCacheKeepsToItsCostBudget(t *testing.T) {
	clock := clocktest.New(time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC))
	c := newCache[int](clock.Now, time.Hour, 100, 100)
	for k := uint64(1); k <= 20; k++ {
		clock.Advance(time.Second)
		c.put(k, int(k), int64(k*5))
		if c.cost > c.maxCost {
			t.Fatalf("after key %d the cost is %d, over the budget %d", k, c.cost, c.maxCost)
		}
		if _, ok := c.get(k); !ok {
			t.Fatalf("key %d was not kept", k)
		}
	}
	if _, ok := c.get(1); ok {
		t.Error("the oldest entry survived the budget")
	}
	var sum int64
	for _, e := range c.entries {
		sum += e.cost
	}
	if sum != c.cost {
		t.Errorf("cost %d, entries sum to %d", c.cost, sum)
	}
	c.put(99, 99, 101)
	if _, ok := c.get(99); ok {
		t.Error("a value over the whole budget was kept")
	}
	before := c.cost
	c.put(20, 20, 100)
	c.put(20, 20, 100)
	if c.cost != 100 || len(c.entries) != 1 {
		t.Errorf("replacing a key: cost %d (was %d), %d entries; want 100, 1", c.cost, before, len(c.entries))
	}
}

func TestCleanMT(t *testing.T) {
	for in, want := range map[string]string{
		"Saludo, yo no llega a me *connecter": "Saludo, yo no llega a me connecter",
		"#hola @mundo":                        "hola mundo",
		"write to privacy@example.com":        "write to privacy@example.com",
	} {
		if got := cleanMT(in); got != want {
			t.Errorf("cleanMT(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkDetectTopics is a message against 50 topics of 10 documents.
func BenchmarkDetectTopics(b *testing.B) {
	var topics []assistant.Topic
	words := strings.Fields("account billing card charge delivery parcel password login refund invoice tax webhook api key plan upgrade return exchange size crash error page privacy data export delete")
	for i := range 50 {
		tp := assistant.Topic{TopicID: int64(i), Name: words[i%len(words)] + " " + words[(i*7)%len(words)], Description: strings.Join(words[i%10:i%10+8], " ")}
		for j := range 10 {
			var c []string
			for k := range 120 {
				c = append(c, words[(i*31+j*17+k*13)%len(words)])
			}
			tp.Documents = append(tp.Documents, assistant.Document{DocumentID: int64(i*10 + j), Title: words[(i+j)%len(words)], Content: strings.Join(c, " ")})
		}
		topics = append(topics, tp)
	}
	e := New(Options{})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := e.DetectTopics(ctx, "My card was charged twice for the upgrade of my plan, please refund", topics); err != nil {
			b.Fatal(err)
		}
	}
}
