package e2econsole

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/randid"
)

// signIn fills the sign-in page and waits for the inbox.
func signIn(email, password string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.WaitVisible(`#email`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		poll(`document.querySelector('h1') !== null && document.querySelector('h1').textContent === 'Inbox' && document.querySelector('.who').textContent !== ''`, 20*time.Second),
	}
}

// An admin creates an agent on the accounts page; the agent signs in, is
// offered no admin page and is refused the one it opens by address (by
// the console, before the API would answer 403), and makes itself
// available.
func TestAdminPagesAreTheAdmins(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	demo := stk.Demo
	bctx, bl := newBrowser(t, ctx)
	agentEmail, agentPassword := "agent-"+randid.Hex(4)+"@console.test", "pw-"+randid.Hex(10)
	var created string
	err := chromedp.Run(bctx,
		chromedp.Navigate(stk.HTTPSURL+"/"),
		signIn(demo.Email, demo.Password),
		chromedp.Click(`nav a[href="/admin/accounts"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#acc-email`, chromedp.ByQuery),
		chromedp.SendKeys(`#acc-email`, agentEmail, chromedp.ByQuery),
		chromedp.SendKeys(`#acc-name`, "Agent Avery", chromedp.ByQuery),
		chromedp.SendKeys(`#acc-password`, agentPassword, chromedp.ByQuery),
		chromedp.Click(`.new-account button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.new-account .ok`, chromedp.ByQuery),
		chromedp.Text(`.new-account .ok`, &created, chromedp.ByQuery),
		poll(fmt.Sprintf(`Array.from(document.querySelectorAll('tr[data-account-id] td')).some(td => td.textContent === %q)`, agentEmail), 10*time.Second),
	)
	if err != nil {
		t.Fatalf("creating an agent: %v; %s", err, pageState(bctx, bl))
	}
	if !strings.Contains(created, agentEmail) {
		t.Errorf("after creating: %q", created)
	}
	screenshot(t, bctx, "accounts")

	var adminLinks int
	var refused string
	err = chromedp.Run(bctx,
		chromedp.Click(`header button`, chromedp.ByQuery), // Sign out
		signIn(agentEmail, agentPassword),
		chromedp.Evaluate(`document.querySelectorAll('a[href^="/admin"]').length`, &adminLinks),
		chromedp.Navigate(stk.HTTPSURL+"/admin/accounts"),
		poll(`document.querySelector('h1') !== null && document.querySelector('[role=alert]') !== null`, 15*time.Second),
		chromedp.Text(`[role=alert]`, &refused, chromedp.ByQuery),
		// The agent's availability, from the header (a new account starts
		// unavailable).
		poll(`document.querySelector('.availability input') !== null && !document.querySelector('.availability input').checked`, 10*time.Second),
		chromedp.Click(`.availability input`, chromedp.ByQuery),
		poll(`document.querySelector('.availability input').checked`, 10*time.Second),
	)
	if err != nil {
		t.Fatalf("the agent's pages: %v; %s", err, pageState(bctx, bl))
	}
	if adminLinks != 0 || !strings.Contains(refused, "for administrators") {
		t.Errorf("agent: %d admin links, accounts page says %q", adminLinks, refused)
	}
	var me struct {
		Account struct {
			Available bool `json:"available"`
		} `json:"account"`
	}
	c := client(t)
	e2ekit.WantStatus(t, c.Do(http.MethodGet, "/api/Customers/me", c.Login(agentEmail, agentPassword), nil), http.StatusOK, &me)
	if !me.Account.Available {
		t.Error("the agent is not available after ticking the box")
	}
	if _, problems := bl.snapshot(); len(problems) > 0 {
		t.Errorf("the pages reported problems (an agent's page must not even ask for admin data):\n%s", strings.Join(problems, "\n"))
	}
}
