package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// The budgets of issue 24.
const (
	// FirstPageBudget: the inbox shows its first page of a customer with
	// 100,000 tickets within 1 s of navigation (every run, cold or warm).
	FirstPageBudget = time.Second
	// InitialJSBudget: the scripts the page loads, compressed.
	InitialJSBudget = 250_000
	// Lighthouse scores (0-100) on the inbox and a ticket page.
	PerformanceBudget   = 90
	AccessibilityBudget = 95
)

// Run is one measured navigation to the inbox.
type Run struct {
	Cold bool
	// FirstPage is from navigation start until the first page's rows were
	// rendered.
	FirstPage time.Duration
	// API is how long the page's GET /api/Tickets took (resource timing).
	API time.Duration
}

// Lighthouse is what the budgets read of one Lighthouse result.
type Lighthouse struct {
	Page          string
	URL           string
	Performance   int // 0-100
	Accessibility int // 0-100
	// Metrics are the performance metrics' display values (FCP, LCP, TBT,
	// CLS, Speed Index) in the report's order.
	Metrics []string
	// Failed are the titles of the accessibility audits that failed.
	Failed []string
	// Report is the file the result was read from.
	Report string
	// Runs are the performance scores of every run Combine combined.
	Runs []int
}

// Combine makes one page's figure of several Lighthouse runs of it: the
// median performance (Lighthouse's own advice: one run varies with the
// machine's load; of an even number the lower middle one) with that run's
// metrics and report, and the lowest accessibility, with its failed audits.
func Combine(runs []Lighthouse) (Lighthouse, error) {
	if len(runs) == 0 {
		return Lighthouse{}, errors.New("no Lighthouse runs")
	}
	byPerf := slices.Clone(runs)
	slices.SortStableFunc(byPerf, func(a, b Lighthouse) int { return a.Performance - b.Performance })
	out := byPerf[(len(byPerf)-1)/2]
	for _, r := range runs {
		out.Runs = append(out.Runs, r.Performance)
		if r.Accessibility < out.Accessibility {
			out.Accessibility, out.Failed = r.Accessibility, r.Failed
		}
	}
	return out, nil
}

// Figures are everything a budget run measured.
type Figures struct {
	Runs []Run
	// JSGzip and JSBrotli are the initial scripts' bytes as the gateway
	// sends them (Content-Encoding gzip and br).
	JSGzip, JSBrotli int
	Lighthouse       []Lighthouse
}

// Percentile is the nearest-rank p-th percentile (0 of none).
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(float64(p)/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Failures are the budgets f misses, one line each (none: all held). A
// run without measurements fails: a budget that was not measured did not
// hold.
func (f Figures) Failures(wantPages []string) []string {
	var out []string
	if len(f.Runs) == 0 {
		out = append(out, "no inbox navigation was measured")
	}
	for i, r := range f.Runs {
		if r.FirstPage <= 0 || r.FirstPage >= FirstPageBudget {
			out = append(out, fmt.Sprintf("inbox run %d (%s): first page after %s, budget < %s", i+1, kind(r.Cold), ms(r.FirstPage), FirstPageBudget))
		}
	}
	switch {
	case f.JSGzip <= 0 || f.JSBrotli <= 0:
		out = append(out, "the initial JavaScript was not measured")
	case f.JSGzip > InitialJSBudget || f.JSBrotli > InitialJSBudget:
		out = append(out, fmt.Sprintf("initial JavaScript %d bytes gzip / %d brotli, budget %d", f.JSGzip, f.JSBrotli, InitialJSBudget))
	}
	for _, page := range wantPages {
		i := slices.IndexFunc(f.Lighthouse, func(l Lighthouse) bool { return l.Page == page })
		if i < 0 {
			out = append(out, "no Lighthouse result for the "+page+" page")
			continue
		}
		l := f.Lighthouse[i]
		if l.Performance < PerformanceBudget {
			out = append(out, fmt.Sprintf("Lighthouse performance of the %s page %d, budget %d", page, l.Performance, PerformanceBudget))
		}
		if l.Accessibility < AccessibilityBudget {
			out = append(out, fmt.Sprintf("Lighthouse accessibility of the %s page %d, budget %d (failed: %v)", page, l.Accessibility,
				AccessibilityBudget, l.Failed))
		}
	}
	return out
}

func kind(cold bool) string {
	if cold {
		return "cold"
	}
	return "warm"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// ParseLighthouse reads a Lighthouse result (its JSON, "lhr"). A missing
// category or score (Lighthouse reports null when an audit errored) is an
// error, never a zero or a pass.
func ParseLighthouse(page string, data []byte) (Lighthouse, error) {
	var lhr struct {
		LighthouseVersion string `json:"lighthouseVersion"`
		FinalDisplayedURL string `json:"finalDisplayedUrl"`
		RuntimeError      *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"runtimeError"`
		Categories map[string]struct {
			Score     *float64 `json:"score"`
			AuditRefs []struct {
				ID    string `json:"id"`
				Group string `json:"group"`
			} `json:"auditRefs"`
		} `json:"categories"`
		Audits map[string]struct {
			Title        string   `json:"title"`
			Score        *float64 `json:"score"`
			ScoreMode    string   `json:"scoreDisplayMode"`
			DisplayValue string   `json:"displayValue"`
		} `json:"audits"`
	}
	l := Lighthouse{Page: page}
	if err := json.Unmarshal(data, &lhr); err != nil {
		return l, fmt.Errorf("%s: Lighthouse result: %w", page, err)
	}
	if lhr.RuntimeError != nil && lhr.RuntimeError.Code != "" {
		return l, fmt.Errorf("%s: Lighthouse runtime error %s: %s", page, lhr.RuntimeError.Code, lhr.RuntimeError.Message)
	}
	l.URL = lhr.FinalDisplayedURL
	score := func(name string) (int, error) {
		c, ok := lhr.Categories[name]
		if !ok || c.Score == nil {
			return 0, fmt.Errorf("%s: Lighthouse result has no %s score", page, name)
		}
		return int(math.Round(*c.Score * 100)), nil
	}
	var err error
	if l.Performance, err = score("performance"); err != nil {
		return l, err
	}
	if l.Accessibility, err = score("accessibility"); err != nil {
		return l, err
	}
	for _, ref := range lhr.Categories["performance"].AuditRefs {
		if a, ok := lhr.Audits[ref.ID]; ok && ref.Group == "metrics" {
			l.Metrics = append(l.Metrics, a.Title+" "+a.DisplayValue)
		}
	}
	for _, ref := range lhr.Categories["accessibility"].AuditRefs {
		if a, ok := lhr.Audits[ref.ID]; ok && a.ScoreMode == "binary" && a.Score != nil && *a.Score < 1 {
			l.Failed = append(l.Failed, a.Title)
		}
	}
	return l, nil
}
