package e2econsole

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/randid"
)

// axe-core is vendored, not fetched at test time: testdata/axe/axe.min.js
// is the file of the npm package axe-core at axeVersion (npm pack
// axe-core@4.11.0), with its licence (MPL-2.0) and third-party notices
// beside it. To update: npm pack axe-core@<version>, copy package/axe.min.js,
// package/LICENSE and package/LICENSE-3RD-PARTY.txt, and change both
// constants.
const (
	axeVersion = "4.11.0"
	axeSHA256  = "e9e5863c33a874f09bc01acd9234b7e3c871479f5eef8802fa582544465e6d01"
	axeFile    = "testdata/axe/axe.min.js"
)

// The vendored axe-core is the pinned release, unchanged, with its licence.
func TestAxeIsThePinnedRelease(t *testing.T) {
	src, err := os.ReadFile(axeFile)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(src); hex.EncodeToString(sum[:]) != axeSHA256 {
		t.Errorf("%s has sha256 %x, want %s (axe-core %s)", axeFile, sum, axeSHA256, axeVersion)
	}
	if !strings.HasPrefix(string(src), "/*! axe v"+axeVersion+"\n") {
		t.Errorf("%s does not start with the banner of axe v%s: %.40q", axeFile, axeVersion, src)
	}
	for _, f := range []string{"testdata/axe/LICENSE", "testdata/axe/LICENSE-3RD-PARTY.txt"} {
		if b, err := os.ReadFile(f); err != nil || len(b) == 0 {
			t.Errorf("%s: %v (%d bytes)", f, err, len(b))
		}
	}
}

// axeCheck runs axe-core in the page and fails t on every serious or
// critical violation. Mail frames (sandboxed, the end user's content) are
// left out: axe cannot reach into a sandboxed frame without scripts.
func axeCheck(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	src, err := os.ReadFile(axeFile)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	err = chromedp.Run(ctx,
		chromedp.Evaluate(`if (!window.axe) { `+string(src)+` }; true`, nil),
		chromedp.Evaluate(`axe.run(document, {iframes: false, resultTypes: ['violations']}).then(r => r.passes.length === 0 ? ['no rule passed: axe checked nothing'] : r.violations
			.filter(v => v.impact === 'serious' || v.impact === 'critical')
			.map(v => v.id + ' (' + v.impact + '): ' + v.help + ' at ' + v.nodes.slice(0, 5).map(n => n.target.join(' ')).join(', ')))`,
			&found, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
	)
	if err != nil {
		t.Errorf("axe on the %s page: %v", page, err)
		return
	}
	for _, v := range found {
		t.Errorf("axe on the %s page: %s", page, v)
	}
	t.Logf("axe on the %s page: %d serious or critical violations", page, len(found))
}

// Every page of the console passes axe-core with no serious or critical
// violation: sign-in, the password pages, the inbox, a ticket, the
// accounts page (an admin's).
func TestAccessibility(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c := client(t)
	demo := stk.Demo
	token := c.Login(demo.Email, demo.Password)
	ch, eu := webChannelAndUser(t, c, token, "Axel Reader", "axel")
	var tk ticket
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Tickets", token,
		map[string]any{"subject": "Screen reader " + randid.Hex(3), "channelID": ch.ChannelID, "endUserID": eu.EndUserID}), http.StatusCreated, &tk)
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/TicketMessages", token,
		map[string]any{"ticketID": tk.TicketID, "message": "The buttons are not read out.\n\n> On Monday you wrote:\n> try again", "senderType": "EndUser"}), http.StatusCreated, nil)

	bctx, bl := newBrowser(t, ctx)
	pages := []struct {
		name string
		run  chromedp.Action
	}{
		{"sign-in", chromedp.Tasks{chromedp.Navigate(stk.HTTPSURL + "/signin"), chromedp.WaitVisible(`#email`, chromedp.ByQuery)}},
		{"forgot-password", chromedp.Tasks{chromedp.Navigate(stk.HTTPSURL + "/forgot-password"), poll(`document.querySelector('main h1') !== null`, 10*time.Second)}},
		{"reset-password", chromedp.Tasks{chromedp.Navigate(stk.HTTPSURL + "/reset-password#token=x"), poll(`document.querySelector('main h1') !== null`, 10*time.Second)}},
		{"inbox", chromedp.Tasks{chromedp.Navigate(stk.HTTPSURL + "/"), signIn(demo.Email, demo.Password),
			poll(`document.querySelectorAll('tr[data-ticket-id]').length > 0`, 15*time.Second)}},
		{"ticket", chromedp.Tasks{chromedp.Click(fmt.Sprintf(`a[href="/tickets/%d"]`, tk.TicketID), chromedp.ByQuery),
			poll(`document.querySelectorAll('.thread li').length > 0`, 15*time.Second)}},
		{"accounts", chromedp.Tasks{chromedp.Click(`a[href="/admin/accounts"]`, chromedp.ByQuery),
			poll(`location.pathname === '/admin/accounts' && document.querySelector('main table, main form') !== null`, 15*time.Second)}},
	}
	for _, p := range pages {
		if err := chromedp.Run(bctx, p.run); err != nil {
			t.Fatalf("the %s page: %v; %s", p.name, err, pageState(bctx, bl))
		}
		axeCheck(t, bctx, p.name)
	}
}
