package e2edocs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/headless"
)

func get(t *testing.T, path string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, stk.HTTPSURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := stk.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// The gateway routes /docs to the docs service without a token, with the
// page's headers intact; the document it serves is gateway/openapi.yaml.
func TestPageThroughTheGateway(t *testing.T) {
	for _, p := range []string{"/docs", "/docs/", "/DOCS"} {
		resp, body := get(t, p, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("GET %s: %s %q: %s", p, resp.Status, resp.Header.Get("Content-Type"), body)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe") ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: security headers %v", p, resp.Header)
		}
	}

	want, err := os.ReadFile(filepath.Join(repoRoot, "gateway", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, "/docs/openapi.yaml", nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
		t.Fatalf("GET /docs/openapi.yaml: %s, %d bytes; want gateway/openapi.yaml (%d bytes): run make docs-assets", resp.Status, len(body), len(want))
	}

	// The bundle goes through compressed and cacheable.
	_, page := get(t, "/docs", nil)
	bundle := regexp.MustCompile(`/docs/assets/swagger-ui-bundle\.[0-9a-f]+\.js`).Find(page)
	if bundle == nil {
		t.Fatalf("no bundle in the page:\n%s", page)
	}
	resp, body = get(t, string(bundle), map[string]string{"Accept-Encoding": "gzip"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "immutable") || len(body) > 1<<20 {
		t.Errorf("GET %s: %s, %q, %q, %d bytes", bundle, resp.Status, resp.Header.Get("Content-Encoding"), resp.Header.Get("Cache-Control"), len(body))
	}

	cases := []struct {
		path string
		// byDocs: the docs service answers (the path is under its prefix);
		// otherwise the gateway's own 404, as for every unrouted path.
		byDocs bool
	}{
		{"/docs/nope", true},
		{"/docs/assets/nope.js", true},
		{"/docsx", false},
		{"/documentation", false},
	}
	for _, tc := range cases {
		resp, body := get(t, tc.path, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s", tc.path, resp.Status)
			continue
		}
		if err := api.ValidateProblem(resp.StatusCode, resp.Header, body); err != nil {
			t.Errorf("GET %s: %v", tc.path, err)
		}
		var p struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(body, &p)
		// The gateway's own 404 (the staticproblem plugin) says this.
		if gotDocs := p.Detail != "No resource of this API has this path."; gotDocs != tc.byDocs {
			t.Errorf("GET %s answered by docs: %v, want %v: %s", tc.path, gotDocs, tc.byDocs, body)
		}
	}
}

// renderedOperation is what Swagger UI shows of one operation.
type renderedOperation struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	OperationID string `json:"operationId"`
}

const listOperations = `Array.from(document.querySelectorAll('.opblock')).map(function (b) {
	var m = b.querySelector('.opblock-summary-method');
	var p = b.querySelector('.opblock-summary-path');
	var id = b.querySelector('.opblock-summary-operation-id');
	return {
		method: m ? m.textContent.trim() : '',
		path: p ? p.getAttribute('data-path') : '',
		operationId: id ? id.textContent.trim() : ''
	};
})`

// browserLog collects what the page did: every request and every error.
type browserLog struct {
	mu       sync.Mutex
	requests []string
	urls     map[network.RequestID]string
	problems []string
}

func (l *browserLog) listen(ev any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		l.requests = append(l.requests, ev.Request.URL)
		l.urls[ev.RequestID] = ev.Request.URL
	case *network.EventResponseReceived:
		if ev.Response.Status >= 400 {
			l.problems = append(l.problems, fmt.Sprintf("%s: HTTP %d", ev.Response.URL, int(ev.Response.Status)))
		}
	case *network.EventLoadingFailed:
		l.problems = append(l.problems, fmt.Sprintf("%s: failed: %s %s", l.urls[ev.RequestID], ev.ErrorText, ev.BlockedReason))
	case *runtime.EventExceptionThrown:
		l.problems = append(l.problems, "exception: "+ev.ExceptionDetails.Error())
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			l.problems = append(l.problems, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *cdplog.EventEntryAdded:
		// Content-Security-Policy violations and failed loads land here.
		if ev.Entry.Level == cdplog.LevelError || ev.Entry.Level == cdplog.LevelWarning {
			l.problems = append(l.problems, fmt.Sprintf("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	}
}

func (l *browserLog) snapshot() (requests, problems []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests), slices.Clone(l.problems)
}

// Headless Chromium opens the reference page through the real gateway:
// Swagger UI renders, every operation of every routed service of the table
// is listed (method and path, as gateway/openapi.yaml has them), nothing
// else is, the page asked nothing of any host but the gateway and logged no
// error (a Content-Security-Policy violation would be one). With
// DOCS_SCREENSHOT set (make docs-check) it saves a screenshot there.
func TestReferencePage(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := headless.Ensure(ctx, &out); err != nil {
		t.Fatalf("installing chromium: %v\n%s", err, out.String())
	}
	profile, cleanup, err := headless.Profile("sp-e2edocs-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	allocCtx, cancelAlloc := headless.Allocator(ctx, profile, 1280, 1600)
	defer cancelAlloc()
	bctx, _ := chromedp.NewContext(allocCtx)
	// Closes the browser gracefully and waits for it.
	defer func() { _ = chromedp.Cancel(bctx) }()

	bl := &browserLog{urls: map[network.RequestID]string{}}
	chromedp.ListenTarget(bctx, bl.listen)

	documented := api.Operations()
	pageURL := stk.HTTPSURL + "/docs"
	var rendered []renderedOperation
	var count int
	err = chromedp.Run(bctx,
		network.Enable(),
		cdplog.Enable(),
		runtime.Enable(),
		chromedp.Navigate(pageURL),
		// Swagger UI fetches the document and renders every operation
		// (collapsed) under its tag.
		chromedp.Poll(fmt.Sprintf(`document.querySelectorAll('.opblock').length >= %d`, len(documented)), nil,
			chromedp.WithPollingTimeout(2*time.Minute), chromedp.WithPollingInterval(250*time.Millisecond)),
		chromedp.Sleep(time.Second), // anything the page still loads after rendering
		chromedp.Evaluate(listOperations, &rendered),
		chromedp.Evaluate(`document.querySelectorAll('.opblock-tag-section').length`, &count),
	)
	if err != nil {
		var n int
		_ = chromedp.Run(bctx, chromedp.Evaluate(`document.querySelectorAll('.opblock').length`, &n))
		_, problems := bl.snapshot()
		t.Fatalf("the page did not render %d operations (%d rendered): %v\nbrowser problems: %v", len(documented), n, err, problems)
	}
	if path := os.Getenv("DOCS_SCREENSHOT"); path != "" {
		var png []byte
		if err := chromedp.Run(bctx, chromedp.CaptureScreenshot(&png)); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", path, len(png))
	}

	shown := map[string]bool{}
	for _, op := range rendered {
		key := strings.ToUpper(op.Method) + " " + op.Path
		if shown[key] {
			t.Errorf("%s is listed twice", key)
		}
		shown[key] = true
		if op.OperationID == "" {
			t.Errorf("%s is listed without its operationId", key)
		}
	}
	t.Logf("%d operations listed in %d tags", len(rendered), count)

	// Every operation of every routed service, by the table's prefixes.
	for _, svc := range stack.Services {
		// Standalone services (this page, the console) serve no API.
		if !svc.Routed() || svc.Standalone {
			continue
		}
		ops := api.Operations(svc.Prefixes...)
		if len(ops) == 0 {
			t.Errorf("service %s has no operation in gateway/openapi.yaml", svc.Name)
		}
		var missing []string
		for op := range ops {
			if !shown[op] {
				missing = append(missing, op)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			t.Errorf("%s: %d of %d operations not listed: %v", svc.Name, len(missing), len(ops), missing)
		}
	}
	// And nothing else: what is listed is documented, and what is
	// documented is served by a routed service.
	for op := range shown {
		if !documented[op] {
			t.Errorf("listed but not in gateway/openapi.yaml: %s", op)
		}
	}
	for op := range documented {
		_, path, _ := strings.Cut(op, " ")
		if _, ok := stack.ServiceForPath(path); !ok {
			t.Errorf("documented but no routed service owns it: %s", op)
		}
	}

	requests, problems := bl.snapshot()
	gateway, err := url.Parse(stk.HTTPSURL)
	if err != nil {
		t.Fatal(err)
	}
	var sawSpec, sawBundle bool
	for _, r := range requests {
		u, err := url.Parse(r)
		if err != nil {
			t.Errorf("request to %q: %v", r, err)
			continue
		}
		switch {
		case u.Scheme == "data" || u.Scheme == "blob":
			continue
		case u.Scheme != gateway.Scheme || u.Host != gateway.Host:
			t.Errorf("the page requested %s, outside the gateway %s", r, stk.HTTPSURL)
		}
		sawSpec = sawSpec || u.Path == "/docs/openapi.yaml"
		sawBundle = sawBundle || strings.HasPrefix(u.Path, "/docs/assets/swagger-ui-bundle.")
	}
	if !sawSpec || !sawBundle {
		t.Errorf("requests seen (spec %v, bundle %v): %v", sawSpec, sawBundle, requests)
	}
	if len(problems) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("%d requests made by the page", len(requests))
}
