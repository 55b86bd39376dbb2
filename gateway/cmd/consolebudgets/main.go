// Command consolebudgets measures the agent console's budgets (issue 24)
// through a real gateway (make console-budgets, part of make
// console-check): it builds and starts the whole stack, seeds one customer
// with 100,000 tickets by SQL (deploy/seed, as make bench does), and then
//
//   - signs in through the console in headless Chromium (Debian's package)
//     and times, several times with a cleared and with a warm browser cache,
//     how long after navigation start the inbox shows its first page's rows;
//   - counts the initial JavaScript the gateway sends, gzip and brotli;
//   - runs Lighthouse (scripts/lighthouse, pinned, over the same Chromium)
//     signed in on the inbox and a ticket page, saving its reports.
//
// It prints the figures and exits non-zero when a budget is missed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/deploy/loadgen"
	"supportplatform.dev/deploy/seed"
	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/headless"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "console-budgets:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("consolebudgets", flag.ContinueOnError)
	runs := fs.Int("runs", 5, "inbox navigations of each kind (cold cache, warm cache)")
	tickets := fs.Int("tickets", 100_000, "tickets seeded for the customer")
	lighthouseRuns := fs.Int("lighthouse-runs", 3, "Lighthouse audits per page; the budget holds the median performance and the lowest accessibility")
	out := fs.String("out", "", "directory of the Lighthouse reports (default: the repository's bin/)")
	verbose := fs.Bool("v", false, "print the stack's logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *runs < 1 || *lighthouseRuns < 1 || *tickets < 20 {
		return errors.New("no arguments; -runs and -lighthouse-runs at least 1, -tickets at least 20 (one page)")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()

	root, built, err := stack.Prepare(ctx, stdout, os.Stderr)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(root, "bin")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	lighthouseDir := filepath.Join(root, "scripts", "lighthouse")
	if _, err := os.Stat(filepath.Join(lighthouseDir, "node_modules", "lighthouse")); err != nil {
		return errors.New("scripts/lighthouse has no node_modules: run `make console-budgets` (npm ci --ignore-scripts there)")
	}
	if err := headless.Ensure(ctx, os.Stderr); err != nil {
		return fmt.Errorf("installing chromium: %w", err)
	}
	if missing := stack.Missing([]string{"auth", "tickets", "console", "live"}, built); missing != "" {
		return fmt.Errorf("not built: %s", missing)
	}

	var logw io.Writer
	if *verbose {
		logw = os.Stderr
	}
	st, err := stack.StartLoad(ctx, stack.LoadOptions{Name: "budgets", RepoRoot: root, Services: built, Log: logw, LogLevel: "warn"})
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "console-budgets: stop:", err)
		}
	}()

	api := loadgen.NewClient(st.HTTPClient(), st.HTTPSURL)
	if err := api.Login(ctx, st.Demo.Email, st.Demo.Password); err != nil {
		return err
	}
	db, err := pgxpool.New(ctx, st.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	seeded, err := seed.SeedTickets(ctx, api, db, *tickets)
	if err != nil {
		return err
	}
	newest, err := seed.NewestTicketIDs(ctx, db, seeded.CustomerID, 1)
	if err != nil || len(newest) != 1 {
		return fmt.Errorf("the newest ticket: %v", err)
	}
	// The ticket page shows a thread: one end user's message.
	if _, err := api.Do(ctx, http.MethodPost, "/api/TicketMessages", fmt.Sprintf(`{"ticketID":%d,"senderType":"EndUser",`+
		`"message":"My parcel arrived damaged: the box was crushed and the screen is cracked. Can you send a replacement?"}`, newest[0]),
		http.StatusCreated); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "gateway %s, %d CPUs; %d tickets of one customer seeded by SQL in %s\n\n", st.HTTPSURL, runtime.NumCPU(),
		*tickets, time.Since(start).Round(time.Millisecond))

	var f Figures
	if f.JSGzip, f.JSBrotli, err = initialJS(ctx, st.HTTPClient(), st.HTTPSURL); err != nil {
		return fmt.Errorf("initial JavaScript: %w", err)
	}
	if f.Runs, err = inboxRuns(ctx, st.HTTPSURL, st.Demo.Email, st.Demo.Password, *runs, *tickets); err != nil {
		return fmt.Errorf("inbox in Chromium: %w", err)
	}
	ticketPath := fmt.Sprintf("/tickets/%d", newest[0])
	pages := []string{"inbox", "ticket"}
	// No report of an earlier run may be read as this one's.
	old, _ := filepath.Glob(filepath.Join(*out, "lighthouse-*"))
	for _, o := range old {
		if err := os.Remove(o); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, "node", filepath.Join(lighthouseDir, "run.mjs"), st.HTTPSURL, *out, "inbox=/", "ticket="+ticketPath)
	cmd.Env = append(os.Environ(), "CONSOLE_EMAIL="+st.Demo.Email, "CONSOLE_PASSWORD="+st.Demo.Password, "CHROME_PATH="+headless.Chromium,
		"PUPPETEER_SKIP_DOWNLOAD=1", fmt.Sprintf("LIGHTHOUSE_RUNS=%d", *lighthouseRuns))
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("lighthouse: %w", err)
	}
	for _, p := range pages {
		var runs []Lighthouse
		for i := 1; i <= *lighthouseRuns; i++ {
			file := filepath.Join(*out, fmt.Sprintf("lighthouse-%s-%d.json", p, i))
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			l, err := ParseLighthouse(p, data)
			if err != nil {
				return err
			}
			l.Report = strings.TrimSuffix(file, ".json") + ".html"
			runs = append(runs, l)
		}
		l, err := Combine(runs)
		if err != nil {
			return err
		}
		f.Lighthouse = append(f.Lighthouse, l)
	}

	report(stdout, f, *out)
	if fails := f.Failures(pages); len(fails) > 0 {
		fmt.Fprintln(stdout, "\nBUDGETS MISSED:")
		for _, l := range fails {
			fmt.Fprintln(stdout, "  "+l)
		}
		return fmt.Errorf("%d budget(s) missed", len(fails))
	}
	fmt.Fprintln(stdout, "\nall budgets held")
	return nil
}

// report prints the figures.
func report(w io.Writer, f Figures, out string) {
	for _, cold := range []bool{true, false} {
		var first, apis []time.Duration
		for _, r := range f.Runs {
			if r.Cold == cold {
				first = append(first, r.FirstPage)
				apis = append(apis, r.API)
			}
		}
		fmt.Fprintf(w, "inbox first page, %s cache, %d runs: p50 %s, max %s (GET /api/Tickets p50 %s, max %s); budget < %s\n",
			kind(cold), len(first), ms(Percentile(first, 50)), ms(Percentile(first, 100)), ms(Percentile(apis, 50)), ms(Percentile(apis, 100)),
			FirstPageBudget)
	}
	fmt.Fprintf(w, "initial JavaScript: %d bytes gzip, %d bytes brotli; budget %d\n", f.JSGzip, f.JSBrotli, InitialJSBudget)
	for _, l := range f.Lighthouse {
		fmt.Fprintf(w, "Lighthouse %s (%s): performance %d (median of %v; budget %d), accessibility %d (lowest; budget %d)\n  median run: %s; %s\n",
			l.Page, l.URL, l.Performance, l.Runs, PerformanceBudget, l.Accessibility, AccessibilityBudget, strings.Join(l.Metrics, ", "), l.Report)
	}
	fmt.Fprintf(w, "Lighthouse reports: %s\n", filepath.Join(out, "lighthouse-*.html"))
}

var (
	scriptSrc = regexp.MustCompile(`<script[^>]*\ssrc="([^"]+)"`)
	preload   = regexp.MustCompile(`<link[^>]*rel="modulepreload"[^>]*href="([^"]+)"|<link[^>]*href="([^"]+)"[^>]*rel="modulepreload"`)
)

// initialJS fetches the page and the scripts it loads at once (script src
// and module preloads) through the gateway and counts their bytes as sent
// with Content-Encoding gzip and br.
func initialJS(ctx context.Context, hc *http.Client, base string) (gz, br int, err error) {
	page, _, err := fetch(ctx, hc, base+"/", "")
	if err != nil {
		return 0, 0, err
	}
	var srcs []string
	for _, m := range scriptSrc.FindAllStringSubmatch(string(page), -1) {
		srcs = append(srcs, m[1])
	}
	for _, m := range preload.FindAllStringSubmatch(string(page), -1) {
		srcs = append(srcs, m[1]+m[2])
	}
	if len(srcs) == 0 {
		return 0, 0, errors.New("the page loads no script")
	}
	for _, src := range srcs {
		for _, enc := range []string{"gzip", "br"} {
			body, got, err := fetch(ctx, hc, base+src, enc)
			if err != nil {
				return 0, 0, err
			}
			if got != enc {
				return 0, 0, fmt.Errorf("%s sent with Content-Encoding %q for Accept-Encoding %s", src, got, enc)
			}
			if enc == "gzip" {
				gz += len(body)
			} else {
				br += len(body)
			}
		}
	}
	return gz, br, nil
}

// fetch GETs url; with enc set it asks for that encoding and returns the
// body as sent (an explicit Accept-Encoding turns off Go's decompression).
func fetch(ctx context.Context, hc *http.Client, url, enc string) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	if enc != "" {
		req.Header.Set("Accept-Encoding", enc)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, resp.Header.Get("Content-Encoding"), nil
}

// firstPageProbe runs in every document before the app: when the inbox's
// rows appear it waits for the frame that paints them and records the time
// since navigation start (performance.now()), with the duration of the
// page's GET /api/Tickets from resource timing.
const firstPageProbe = `(() => {
  const rows = () => document.querySelectorAll('tr[data-ticket-id]').length;
  const record = () => {
    const at = performance.now();
    const api = performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname === '/api/Tickets');
    window.__firstPage = { at, rows: rows(), api: api.length > 0 ? api[0].duration : -1 };
  };
  new MutationObserver((_, observer) => {
    if (rows() === 0) return;
    observer.disconnect();
    requestAnimationFrame(() => setTimeout(record, 0));
  }).observe(document, { childList: true, subtree: true });
})()`

// inboxRuns signs in through the console and navigates to the inbox runs
// times with a cleared browser cache and runs times with a warm one,
// alternating.
func inboxRuns(ctx context.Context, base, email, password string, runs, tickets int) ([]Run, error) {
	profile, cleanup, err := headless.Profile("sp-consolebudgets-chromium-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	allocCtx, cancelAlloc := headless.Allocator(ctx, profile, 1280, 900)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	poll := func(cond string) chromedp.Action {
		return chromedp.Poll(cond, nil, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(20*time.Millisecond))
	}
	if err := chromedp.Run(bctx,
		network.Enable(),
		chromedp.Navigate(base+"/signin"),
		chromedp.WaitVisible(`#email`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		poll(`document.querySelectorAll('tr[data-ticket-id]').length > 0`),
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(firstPageProbe).Do(ctx)
			return err
		}),
	); err != nil {
		return nil, fmt.Errorf("signing in: %w", err)
	}
	var out []Run
	for i := range 2 * runs {
		cold := i%2 == 0
		var got struct {
			At   float64 `json:"at"`
			Rows int     `json:"rows"`
			API  float64 `json:"api"`
		}
		var summary string
		actions := []chromedp.Action{}
		if cold {
			actions = append(actions, network.ClearBrowserCache())
		}
		actions = append(actions,
			chromedp.Navigate(base+"/"),
			poll(`window.__firstPage !== undefined`),
			chromedp.Evaluate(`window.__firstPage`, &got),
			chromedp.Text(`.summary`, &summary, chromedp.ByQuery),
		)
		if err := chromedp.Run(bctx, actions...); err != nil {
			return nil, fmt.Errorf("run %d: %w", i+1, err)
		}
		// The first page of the whole inbox: 20 rows of the total.
		if got.Rows != 20 || !strings.HasPrefix(summary, fmt.Sprintf("%d tickets", tickets)) {
			return nil, fmt.Errorf("run %d: %d rows, summary %q; want 20 rows of %d tickets", i+1, got.Rows, summary, tickets)
		}
		if got.API < 0 {
			return nil, fmt.Errorf("run %d: the page made no GET /api/Tickets before showing rows", i+1)
		}
		out = append(out, Run{Cold: cold, FirstPage: msDuration(got.At), API: msDuration(got.API)})
	}
	return out, nil
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
