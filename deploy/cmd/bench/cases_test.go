package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/deploy/loadgen"
)

func TestUncachedSentencesAreDistinct(t *testing.T) {
	seen := map[string]uint64{}
	for n := range uint64(20_000) {
		s := uncachedSentence(n)
		if prev, ok := seen[s]; ok {
			t.Fatalf("sentence %d = sentence %d: %q", n, prev, s)
		}
		seen[s] = n
	}
	if a, b := uncachedSentence(500_000), uncachedSentence(0); a == b || !strings.HasSuffix(a, " 1") {
		t.Errorf("past the word combinations: %q vs %q", a, b)
	}
}

func TestSentences20(t *testing.T) {
	seen := map[string]uint64{}
	for n := range uint64(5_000) {
		s := sentence20(n)
		if w := len(strings.Fields(s)); w != 20 {
			t.Fatalf("sentence %d has %d words: %q", n, w, s)
		}
		if prev, ok := seen[s]; ok {
			t.Fatalf("sentence %d = sentence %d: %q", n, prev, s)
		}
		seen[s] = n
	}
}

func TestSelectCases(t *testing.T) {
	all := benchCases()
	names := func(cs []*benchCase) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct{ list, want string }{
		{"", "static,idle-rss,customers-me,topics-list,detect-language,translate-cached,mail-notify,mail-to-ticket,live-fanout,message-to-reply,assistant-eval,tickets-list,tickets-search," +
			"message-create,raw-insert,apertium-oneshot,apertium-warm,translate-uncached"},
		// message-create is compared with the raw INSERT baseline.
		{"message-create", "static,message-create,raw-insert"},
		// warm Apertium is measured against the one-shot path in the same run.
		{"apertium-warm", "static,apertium-oneshot,apertium-warm"},
		{"translate-cached", "static,translate-cached"},
		// topics-list is compared with customers-me, which comes along.
		{" topics-list ,", "static,customers-me,topics-list"},
		{"static", "static"},
		// tickets-scale runs only when named.
		{"tickets-scale", "static,tickets-scale"},
	} {
		got, err := selectCases(all, tc.list)
		if err != nil || names(got) != tc.want {
			t.Errorf("selectCases(%q) = %s, %v; want %s", tc.list, names(got), err, tc.want)
		}
	}
	if _, err := selectCases(all, "topics"); err == nil || !strings.Contains(err.Error(), "topics-list") {
		t.Errorf("unknown case: %v", err)
	}
}

func TestChecks(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "https://x/api/Translations/detect-language-ai?country=CA&state=Quebec&city=Montreal", nil)
	if err := checkDetectedLanguage(req, nil, []byte(`"fr"`)); err != nil {
		t.Error(err)
	}
	if err := checkDetectedLanguage(req, nil, []byte(`"en"`)); err == nil {
		t.Error("wrong language accepted")
	}
	src := []byte(translateBody("The red dog sees the old house today."))
	for body, ok := range map[string]bool{
		`"El perro rojo ve la casa vieja hoy."`:     true,
		`"The red dog sees the old house today."`:   false, // untranslated
		`"El perro rojo sees the old house today."`: false, // half English
		`""`: false,
		`{"type":"about:blank","title":"Internal"}`: false,
	} {
		if err := checkTranslation(nil, src, []byte(body)); (err == nil) != ok {
			t.Errorf("checkTranslation(%s) = %v", body, err)
		}
	}
	page := `{"items":[` + strings.Repeat(`{"topicID":1,"name":"x"},`, topicsPageSize-1) + `{"topicID":2}],"totalCount":1000,"totalPages":50}`
	if err := checkTopicsPage(nil, nil, []byte(page)); err != nil {
		t.Error(err)
	}
	if err := checkTopicsPage(nil, nil, []byte(`{"items":[],"totalCount":1000,"totalPages":50}`)); err == nil {
		t.Error("empty page accepted")
	}
}

// A 200 with a wrong answer is an error of the request, as a bad status is.
func TestCheckingTransportFailsWrongAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`"The house is big."`)) // echoes, as a same-language answer would
	}))
	defer srv.Close()
	c := &benchCase{Name: "t", Method: http.MethodPost, Path: "/", Body: translateBody("The house is big."), Check: checkTranslation}
	e := &benchEnv{API: loadgen.NewClient(srv.Client(), srv.URL)}
	_, err := c.preflight(context.Background(), e, c.client(srv.Client(), 4))
	if err == nil || !strings.Contains(err.Error(), "untranslated") {
		t.Fatalf("preflight error %v, want the untranslated answer reported", err)
	}
}

// The bench's notification is Graph's shape and names its subscription.
func TestNotificationBody(t *testing.T) {
	var body struct {
		Value []struct {
			SubscriptionID, ClientState, ChangeType, Resource string
			ResourceData                                      struct{ ID string }
		}
	}
	if err := json.Unmarshal([]byte(notificationBody(mailTarget{subscriptionID: "sub-1", clientState: "state-1"}, 7)), &body); err != nil {
		t.Fatal(err)
	}
	v := body.Value
	if len(v) != 1 || v[0].SubscriptionID != "sub-1" || v[0].ClientState != "state-1" || v[0].ChangeType != "created" ||
		!strings.HasSuffix(v[0].Resource, "/Messages/"+v[0].ResourceData.ID) {
		t.Fatalf("%+v", body)
	}
}

func TestPercentiles(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, ms(i))
	}
	for _, tc := range []struct {
		p    int
		want time.Duration
	}{{50, ms(100)}, {99, ms(198)}, {100, ms(200)}, {1, ms(2)}} {
		if got := pct(d, tc.p); got != tc.want {
			t.Errorf("p%d = %s, want %s", tc.p, got, tc.want)
		}
	}
	if pct(nil, 50) != 0 || pct([]time.Duration{ms(7)}, 99) != ms(7) {
		t.Error("edge cases")
	}
}

// TestCountingCasesHaveCustomersOfTheirOwn: the cases whose checks count
// what their setup made (1,000 topics, 100,000 tickets) run as customers no
// other case adds topics or tickets to, so `make bench` passes in any order
// (the mail cases add tickets and the assistant case topics to theirs).
func TestCountingCasesHaveCustomersOfTheirOwn(t *testing.T) {
	byName := map[string]*benchCase{}
	for _, c := range benchCases() {
		byName[c.Name] = c
	}
	customer := func(name string) string {
		c, ok := byName[name]
		if !ok {
			t.Fatalf("no case %s", name)
		}
		return c.Customer
	}
	for _, name := range []string{"tickets-search", "message-create"} {
		if customer(name) != customer("tickets-list") {
			t.Errorf("%s runs as %q, tickets-list as %q: they share the seeded tickets", name, customer(name), customer("tickets-list"))
		}
	}
	counting := map[string]bool{customer("tickets-list"): true, customer("topics-list"): true}
	if len(counting) != 2 || counting[""] {
		t.Fatalf("tickets-list (%q) and topics-list (%q) need customers of their own", customer("tickets-list"), customer("topics-list"))
	}
	for _, c := range byName {
		switch c.Name {
		case "tickets-list", "tickets-search", "message-create", "topics-list":
			continue
		}
		if counting[c.Customer] {
			t.Errorf("%s runs as %q, a customer whose totals another case checks", c.Name, c.Customer)
		}
	}
}

// TestReadIdleMem reads this process's memory in one reading: every figure
// is there, and the anonymous and file-mapped parts are each within the
// resident set (their sum may be a little under it: the kernel counts
// pages per thread and folds them in late, and shared memory is a third
// part).
func TestReadIdleMem(t *testing.T) {
	m := readIdleMem(os.Getpid())
	if m.rss <= 0 || m.anon <= 0 || m.file <= 0 {
		t.Fatalf("memory %+v: want every figure read", m)
	}
	if m.anon+m.file > m.rss+m.rss/10 {
		t.Fatalf("memory %+v: anonymous and file-mapped parts exceed the resident set", m)
	}
}

func TestParseScaleSizes(t *testing.T) {
	if got, err := parseScaleSizes("10000, 100000,1000000"); err != nil || !slices.Equal(got, []int{10000, 100000, 1000000}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "100", "10000,10000", "100000,10000", "x", "10000,"} {
		if _, err := parseScaleSizes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
