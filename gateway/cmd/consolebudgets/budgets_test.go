package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func msd(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentile(t *testing.T) {
	d := []time.Duration{msd(500), msd(100), msd(300), msd(200), msd(400)}
	for p, want := range map[int]time.Duration{50: msd(300), 100: msd(500), 1: msd(100), 80: msd(400)} {
		if got := Percentile(d, p); got != want {
			t.Errorf("p%d = %s, want %s", p, got, want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("no runs: not 0")
	}
	if d[0] != msd(500) {
		t.Error("Percentile sorted its argument")
	}
}

// good holds every budget; each case below breaks one.
func good() Figures {
	return Figures{
		Runs:       []Run{{Cold: true, FirstPage: msd(400)}, {FirstPage: msd(200)}},
		JSGzip:     16_000,
		JSBrotli:   14_000,
		Lighthouse: []Lighthouse{{Page: "inbox", Performance: 90, Accessibility: 95}, {Page: "ticket", Performance: 99, Accessibility: 100}},
	}
}

func TestFailures(t *testing.T) {
	pages := []string{"inbox", "ticket"}
	if f := good().Failures(pages); len(f) != 0 {
		t.Fatalf("budgets held, failures %v", f)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Figures)
		want   string
	}{
		{"first page at exactly 1 s", func(f *Figures) { f.Runs[1].FirstPage = time.Second }, "inbox run 2 (warm): first page after 1000 ms"},
		{"slow cold run", func(f *Figures) { f.Runs[0].FirstPage = msd(1500) }, "inbox run 1 (cold)"},
		{"unmeasured run", func(f *Figures) { f.Runs[0].FirstPage = 0 }, "inbox run 1 (cold): first page after 0 ms"},
		{"no runs", func(f *Figures) { f.Runs = nil }, "no inbox navigation was measured"},
		{"gzip over", func(f *Figures) { f.JSGzip = 250_001 }, "initial JavaScript 250001 bytes gzip"},
		{"brotli over", func(f *Figures) { f.JSBrotli = 250_001 }, "initial JavaScript 16000 bytes gzip / 250001 brotli"},
		{"JS unmeasured", func(f *Figures) { f.JSGzip = 0 }, "the initial JavaScript was not measured"},
		{"performance 89", func(f *Figures) { f.Lighthouse[0].Performance = 89 }, "Lighthouse performance of the inbox page 89"},
		{"accessibility 94", func(f *Figures) {
			f.Lighthouse[1].Accessibility = 94
			f.Lighthouse[1].Failed = []string{"Buttons do not have an accessible name"}
		}, "Lighthouse accessibility of the ticket page 94, budget 95 (failed: [Buttons do not have an accessible name])"},
		{"ticket page missing", func(f *Figures) { f.Lighthouse = f.Lighthouse[:1] }, "no Lighthouse result for the ticket page"},
	} {
		f := good()
		f.Runs = append([]Run(nil), f.Runs...)
		f.Lighthouse = append([]Lighthouse(nil), f.Lighthouse...)
		tc.mutate(&f)
		got := f.Failures(pages)
		if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
			t.Errorf("%s: failures %q, want one starting %q", tc.name, got, tc.want)
		}
	}
}

// lhr is a Lighthouse result cut down to what ParseLighthouse reads.
func lhr(perf, a11y string) string {
	return fmt.Sprintf(`{"lighthouseVersion":"12.8.2","finalDisplayedUrl":"https://127.0.0.1:8443/",
	"categories":{
	 "performance":{"score":%s,"auditRefs":[{"id":"first-contentful-paint","weight":10,"group":"metrics"},
	  {"id":"largest-contentful-paint","weight":25,"group":"metrics"},{"id":"render-blocking-resources","weight":0}]},
	 "accessibility":{"score":%s,"auditRefs":[{"id":"color-contrast","weight":7},{"id":"label","weight":7},{"id":"image-alt","weight":10}]}},
	"audits":{
	 "first-contentful-paint":{"title":"First Contentful Paint","score":0.99,"scoreDisplayMode":"numeric","displayValue":"1.1 s"},
	 "largest-contentful-paint":{"title":"Largest Contentful Paint","score":0.9,"scoreDisplayMode":"numeric","displayValue":"2.4 s"},
	 "render-blocking-resources":{"title":"Eliminate render-blocking resources","score":0.5,"scoreDisplayMode":"metricSavings"},
	 "color-contrast":{"title":"Background and foreground colors do not have a sufficient contrast ratio.","score":0,"scoreDisplayMode":"binary"},
	 "label":{"title":"Form elements have associated labels","score":1,"scoreDisplayMode":"binary"},
	 "image-alt":{"title":"Image elements have [alt] attributes","score":null,"scoreDisplayMode":"notApplicable"}}}`, perf, a11y)
}

func TestParseLighthouse(t *testing.T) {
	l, err := ParseLighthouse("inbox", []byte(lhr("0.905", "0.94")))
	if err != nil {
		t.Fatal(err)
	}
	if l.Page != "inbox" || l.URL != "https://127.0.0.1:8443/" || l.Performance != 91 || l.Accessibility != 94 {
		t.Errorf("%+v", l)
	}
	if strings.Join(l.Metrics, "; ") != "First Contentful Paint 1.1 s; Largest Contentful Paint 2.4 s" {
		t.Errorf("metrics %q", l.Metrics)
	}
	if len(l.Failed) != 1 || !strings.HasPrefix(l.Failed[0], "Background and foreground") {
		t.Errorf("failed accessibility audits %q", l.Failed)
	}
	// A null score (an audit errored) or a runtime error is an error, never
	// a zero that might be read as measured, nor a pass.
	for _, bad := range []string{
		lhr("null", "1"),
		lhr("1", "null"),
		`{"categories":{"performance":{"score":1}}}`,
		`{"runtimeError":{"code":"ERRORED_DOCUMENT_REQUEST","message":"status 500"},"categories":{"performance":{"score":1},"accessibility":{"score":1}}}`,
		`not json`,
	} {
		if _, err := ParseLighthouse("ticket", []byte(bad)); err == nil {
			t.Errorf("no error for %.60s", bad)
		}
	}
}

// The inbox probe and the Lighthouse script agree with the console on what
// the inbox's rows and the ticket's thread are, and the pinned Lighthouse
// supports the machine's Node (20): Lighthouse 13 needs Node 22.
func TestLighthousePins(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "scripts", "lighthouse")
	pkg, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"lighthouse": "12\.\d+\.\d+"`).Match(pkg) || !regexp.MustCompile(`"puppeteer-core": "\d+\.\d+\.\d+"`).Match(pkg) {
		t.Errorf("scripts/lighthouse/package.json does not pin lighthouse 12.x.y and puppeteer-core exactly:\n%s", pkg)
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lighthouse", "puppeteer-core"} {
		v := regexp.MustCompile(`"` + name + `": "([^"]+)"`).FindSubmatch(pkg)
		if v == nil || !strings.Contains(string(lock), `"node_modules/`+name+`": {
      "version": "`+string(v[1])+`"`) {
			t.Errorf("package-lock.json does not resolve %s to package.json's pin", name)
		}
	}
	script, err := os.ReadFile(filepath.Join(dir, "run.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []string{"tr[data-ticket-id]", ".thread li"} {
		if !strings.Contains(string(script), sel) {
			t.Errorf("run.mjs does not wait for %s", sel)
		}
	}
	if !strings.Contains(firstPageProbe, "tr[data-ticket-id]") {
		t.Error("the probe does not look for the inbox's rows")
	}
}

func TestCombine(t *testing.T) {
	runs := []Lighthouse{
		{Page: "inbox", Performance: 74, Accessibility: 100, Report: "1"},
		{Page: "inbox", Performance: 95, Accessibility: 94, Failed: []string{"contrast"}, Report: "2"},
		{Page: "inbox", Performance: 91, Accessibility: 100, Report: "3"},
	}
	l, err := Combine(runs)
	if err != nil {
		t.Fatal(err)
	}
	if l.Performance != 91 || l.Report != "3" || l.Accessibility != 94 || len(l.Failed) != 1 || fmt.Sprint(l.Runs) != "[74 95 91]" {
		t.Errorf("%+v", l)
	}
	// Of two the lower: a budget must not hold on the better half.
	if l, _ := Combine(runs[:2]); l.Performance != 74 {
		t.Errorf("median of 74 and 95: %d", l.Performance)
	}
	if l, _ := Combine(runs[1:2]); l.Performance != 95 || l.Accessibility != 94 {
		t.Errorf("one run: %+v", l)
	}
	if _, err := Combine(nil); err == nil {
		t.Error("no runs combined without an error")
	}
}
