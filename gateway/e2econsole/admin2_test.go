package e2econsole

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// choose picks the option of the select sel whose label is label, as a
// person would (Preact listens to the change event).
func choose(sel, label string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => {
		const s = document.querySelector(%q);
		const o = Array.from(s.options).find(o => o.textContent === %q);
		if (!o) throw new Error("no option " + %q + " in " + %q);
		s.value = o.value;
		s.dispatchEvent(new Event("change", {bubbles: true}));
	})()`, sel, label, label, sel), nil)
}

// fill replaces the value of the input sel.
func fill(sel, value string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => {
		const i = document.querySelector(%q);
		i.value = %q;
		i.dispatchEvent(new Event("input", {bubbles: true}));
	})()`, sel, value), nil)
}

// rowButton clicks the button btn of the row of the list section that
// shows text.
func rowButton(section, text, btn string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => {
		const tr = Array.from(document.querySelectorAll(%q)).find(tr => tr.textContent.includes(%q));
		if (!tr) throw new Error("no row with " + %q);
		tr.querySelector(%q).click();
	})()`, section+" tbody tr", text, text, btn), nil)
}

// hasRow is a condition: the list section has a row showing text.
func hasRow(section, text string) string {
	return fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).some(tr => tr.textContent.includes(%q))`, section+" tbody tr", text)
}

// waitThroughNavigations waits until the JavaScript expression cond is
// true in the tab while it goes through the pages of other sites (poll
// fails when its page goes away).
func waitThroughNavigations(bctx context.Context, cond string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(bctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		var ok bool
		err := chromedp.Run(actx, chromedp.Evaluate(cond, &ok))
		acancel()
		if err == nil && ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s (last: %v): %s", timeout, err, cond)
		case <-tick.C:
		}
	}
}

// retrieves is a condition: the channels' list shows the channel of
// mailbox with "Retrieves mail" yesNo.
func retrieves(mailbox, yesNo string) string {
	return fmt.Sprintf(`Array.from(document.querySelectorAll('.resource.channel tbody tr')).some(tr => tr.cells[2].textContent === %q && tr.cells[4].textContent === %q)`, mailbox, yesNo)
}

// An admin connects a Microsoft 365 tenant from the channels page (the
// fake Graph's sign-in and consent pages approve at once; the flow ends on
// the console's /admin/connections with the outcome, not on a JSON
// document), creates a microsoft365 e-mail channel in it, adds a folder
// beside the inbox, switches mail retrieval on and sees each folder's
// outcome, then off. Then the deletes: the tenant is refused while the
// channel names it (409 next to its row), the folder and the channel are
// deleted (each after a confirmation), and then the tenant.
func TestAdminChannelsAndFolders(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	demo := stk.Demo
	bctx, bl := newBrowser(t, ctx)

	h := randid.Hex(16)
	tenant := h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
	user := "admin-" + randid.Hex(4) + "@console-" + randid.Hex(3) + ".onmicrosoft.test"
	graph.AddUser(graphfake.User{Username: user, Name: "Tenant admin", TenantID: tenant})
	graph.SetAutoApprove(true)

	err := chromedp.Run(bctx,
		chromedp.Navigate(stk.HTTPSURL+"/"),
		signIn(demo.Email, demo.Password),
		chromedp.Click(`nav a[href="/admin/channels"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#conn-login-hint`, chromedp.ByQuery),
		chromedp.SendKeys(`#conn-login-hint`, user, chromedp.ByQuery),
		chromedp.Click(`.connections button[type=submit]`, chromedp.ByQuery),
	)
	if err == nil {
		// Microsoft (the fake), the platform's callback and its 303 to
		// the console, in this tab: the page says so (from the API) and
		// lists the tenant. Through navigations: an evaluation in a
		// context that went with a page is retried, not a failure.
		err = waitThroughNavigations(bctx, fmt.Sprintf(`location.pathname === "/admin/connections" && location.search === "" &&
			(document.querySelector('.connections [data-outcome="connected"]')?.textContent ?? "").includes(%q) &&
			Array.from(document.querySelectorAll('.connections tr[data-status="connected"]')).some(tr => tr.textContent.includes(%q))`, tenant, tenant), 30*time.Second)
	}
	if err != nil {
		t.Fatalf("connecting a tenant: %v; %s", err, pageState(bctx, bl))
	}
	requests, _ := bl.snapshot()
	for _, r := range requests {
		if strings.Contains(r, "/api/ProviderConnections/callback") && !strings.HasPrefix(r, stk.HTTPSURL+"/api/ProviderConnections/callback?") {
			t.Errorf("the callback was asked elsewhere: %s", r)
		}
	}
	screenshot(t, bctx, "connections")

	name := "Support " + randid.Hex(3)
	mailbox := e2ekit.Mailbox()
	var outcomes []string
	err = chromedp.Run(bctx,
		chromedp.WaitVisible(`#channel-name`, chromedp.ByQuery),
		chromedp.SendKeys(`#channel-name`, name, chromedp.ByQuery),
		chromedp.SendKeys(`#channel-emailAddress`, mailbox, chromedp.ByQuery),
		choose(`#channel-provider`, "Microsoft 365"),
		chromedp.WaitVisible(`#channel-providerTenantID`, chromedp.ByQuery),
		chromedp.SendKeys(`#channel-providerTenantID`, tenant, chromedp.ByQuery),
		chromedp.Click(`.resource.channel .admin-form button[type=submit]`, chromedp.ByQuery),
		poll(hasRow(".resource.channel", mailbox), 10*time.Second),
		rowButton(".resource.channel", mailbox, "button.folders"),
		// A new e-mail channel has its inbox; the admin adds the archive.
		poll(hasRow(".resource.folder", "inbox"), 10*time.Second),
		chromedp.SendKeys(`#folder-externalFolderID`, "archive", chromedp.ByQuery),
		chromedp.SendKeys(`#folder-displayName`, "Archive", chromedp.ByQuery),
		chromedp.Click(`.resource.folder .admin-form button[type=submit]`, chromedp.ByQuery),
		poll(hasRow(".resource.folder", "Archive"), 10*time.Second),
		chromedp.Click(`button.subscribe`, chromedp.ByQuery),
		poll(`document.querySelectorAll('.outcomes li').length === 2`, 20*time.Second),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('.outcomes li')).map(li => li.textContent)`, &outcomes),
		// The folders' list is read again: both have their subscription;
		// so is the channels' list.
		poll(`Array.from(document.querySelectorAll('.resource.folder tbody tr')).every(tr => !tr.textContent.includes('none'))`, 10*time.Second),
		poll(retrieves(mailbox, "Yes"), 10*time.Second),
	)
	if err != nil {
		t.Fatalf("channel, folder, subscribe: %v; %s", err, pageState(bctx, bl))
	}
	slices.Sort(outcomes)
	if want := []string{"archive: subscribed", "inbox: subscribed"}; !slices.Equal(outcomes, want) {
		t.Errorf("subscribe outcomes %q, want %q", outcomes, want)
	}
	screenshot(t, bctx, "channels")

	err = chromedp.Run(bctx,
		chromedp.Click(`button.unsubscribe`, chromedp.ByQuery),
		poll(`Array.from(document.querySelectorAll('.outcomes li')).map(li => li.dataset.outcome).join() === "unsubscribed,unsubscribed"`, 20*time.Second),
		poll(retrieves(mailbox, "No"), 10*time.Second),
	)
	if err != nil {
		t.Fatalf("unsubscribe: %v; %s", err, pageState(bctx, bl))
	}

	// The deletes. The tenant first: the channel names it (409, shown at
	// its row, nothing deleted).
	tenantRow := fmt.Sprintf(`Array.from(document.querySelectorAll('.connections tbody tr')).find(tr => tr.textContent.includes(%q))`, tenant)
	var refusal string
	err = chromedp.Run(bctx,
		chromedp.Evaluate(tenantRow+`.querySelector('button.delete').click()`, nil),
		chromedp.Evaluate(tenantRow+`.querySelector('button.confirm-delete').click()`, nil),
		poll(tenantRow+`?.querySelector('.row-problem') != null`, 10*time.Second),
		chromedp.Evaluate(tenantRow+`.querySelector('.row-problem').textContent`, &refusal),
		screenshotAction(t, "connections-delete-refused"),
		// The folder, after its confirmation (a first click deletes
		// nothing).
		confirmDelete(".resource.folder", "Archive"),
		poll(`!(`+hasRow(".resource.folder", "Archive")+`) && `+hasRow(".resource.folder", "inbox"), 10*time.Second),
		// The channel (its folders' section goes with it).
		confirmDelete(".resource.channel", mailbox),
		poll(`!(`+hasRow(".resource.channel", mailbox)+`) && document.querySelector('.resource.folder') === null`, 10*time.Second),
		// Now the tenant goes.
		chromedp.Evaluate(tenantRow+`.querySelector('button.delete').click()`, nil),
		chromedp.Evaluate(tenantRow+`.querySelector('button.confirm-delete').click()`, nil),
		poll(tenantRow+` === undefined`, 10*time.Second),
	)
	if err != nil {
		t.Fatalf("deletes: %v; %s", err, pageState(bctx, bl))
	}
	if !strings.Contains(refusal, "Not deleted") || !strings.Contains(strings.ToLower(refusal), "channel") {
		t.Errorf("the refused delete of the tenant says %q", refusal)
	}
	// The one expected problem is the refused delete.
	_, problems := bl.snapshot()
	if rest := withoutStatus(problems, "/api/ProviderConnections/", 409); len(rest) > 0 {
		t.Errorf("the pages reported problems:\n%s", strings.Join(rest, "\n"))
	}
}

// withoutStatus drops the problems the browser reports for answers of
// status to requests whose URL contains path (the network event and the
// console's "Failed to load resource" line): a refusal a test provokes.
func withoutStatus(problems []string, path string, status int) []string {
	return slices.DeleteFunc(slices.Clone(problems), func(p string) bool {
		return strings.Contains(p, path) && (strings.HasSuffix(p, fmt.Sprintf(": HTTP %d", status)) ||
			strings.HasPrefix(p, fmt.Sprintf("log error (network): Failed to load resource: the server responded with a status of %d", status)))
	})
}

// confirmDelete deletes the row of the list section that shows text as a
// person does: Delete, which deletes nothing yet, then "Really delete?".
func confirmDelete(section, text string) chromedp.Tasks {
	row := fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).find(tr => tr.textContent.includes(%q))`, section+" tbody tr", text)
	return chromedp.Tasks{
		rowButton(section, text, "button.delete"),
		poll(row+`?.querySelector('button.confirm-delete') != null`, 5*time.Second),
		rowButton(section, text, "button.confirm-delete"),
	}
}

// screenshotAction is screenshot as a step of chromedp.Run.
func screenshotAction(t *testing.T, name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		screenshot(t, ctx, name)
		return nil
	})
}

// An admin creates a topic, an action and a document, links both to the
// topic, and maps a page to it: a URL the API refuses shows its error at
// the field, and the mapping is then created and edited.
func TestAdminTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	demo := stk.Demo
	bctx, bl := newBrowser(t, ctx)
	topic, action, doc := "Refunds "+randid.Hex(3), "Refund "+randid.Hex(3), "Refund policy "+randid.Hex(3)
	page := "https://shop.example.test/help/" + randid.Hex(3) + "/"
	var fieldError string
	err := chromedp.Run(bctx,
		chromedp.Navigate(stk.HTTPSURL+"/"),
		signIn(demo.Email, demo.Password),
		chromedp.Click(`nav a[href="/admin/topics"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#topic-name`, chromedp.ByQuery),
		chromedp.SendKeys(`#topic-name`, topic, chromedp.ByQuery),
		chromedp.SendKeys(`#topic-description`, "Money back", chromedp.ByQuery),
		chromedp.Click(`.resource.topic .admin-form button[type=submit]`, chromedp.ByQuery),
		poll(hasRow(".resource.topic", topic), 10*time.Second),

		chromedp.SendKeys(`#action-name`, action, chromedp.ByQuery),
		chromedp.SendKeys(`#action-hookName`, "refund", chromedp.ByQuery),
		chromedp.Click(`.resource.action .admin-form button[type=submit]`, chromedp.ByQuery),
		poll(hasRow(".resource.action", action), 10*time.Second),

		chromedp.SendKeys(`#document-title`, doc, chromedp.ByQuery),
		chromedp.SendKeys(`#document-content`, "Refunds within 30 days.", chromedp.ByQuery),
		chromedp.Click(`.resource.document .admin-form button[type=submit]`, chromedp.ByQuery),
		poll(hasRow(".resource.document", doc), 10*time.Second),

		rowButton(".resource.topic", topic, "button.select-topic"),
		chromedp.WaitVisible(`#topic-action-actionID`, chromedp.ByQuery),
		poll(fmt.Sprintf(`Array.from(document.querySelectorAll('#topic-action-actionID option')).some(o => o.textContent === %q)`, action), 10*time.Second),
		choose(`#topic-action-actionID`, action),
		fill(`#topic-action-priority`, "5"),
		chromedp.Click(`.resource.topic-action .admin-form button[type=submit]`, chromedp.ByQuery),
		poll(hasRow(".resource.topic-action", action), 10*time.Second),
		choose(`#topic-document-documentID`, doc),
		fill(`#topic-document-relevanceScore`, "80"),
		chromedp.Click(`.resource.topic-document .admin-form button[type=submit]`, chromedp.ByQuery),
		poll(hasRow(".resource.topic-document", doc), 10*time.Second),

		// A relative URL: the API's field error is shown at the field.
		fill(`#mapping-urlPattern`, "/help"),
		choose(`#mapping-topicID`, topic),
		chromedp.Click(`.resource.mapping .admin-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#mapping-urlPattern-error`, chromedp.ByQuery),
		chromedp.Text(`#mapping-urlPattern-error`, &fieldError, chromedp.ByQuery),
		fill(`#mapping-urlPattern`, page),
		choose(`#mapping-matchType`, "Every page under this URL"),
		chromedp.Click(`.resource.mapping .admin-form button[type=submit]`, chromedp.ByQuery),
		poll(hasRow(".resource.mapping", page)+` && `+hasRow(".resource.mapping", "prefix"), 10*time.Second),
		rowButton(".resource.mapping", page, "button.edit"),
		choose(`#mapping-matchType`, "This page exactly"),
		chromedp.Click(`.resource.mapping .admin-form button[type=submit]`, chromedp.ByQuery),
		poll(fmt.Sprintf(`Array.from(document.querySelectorAll('.resource.mapping tbody tr')).some(tr => tr.textContent.includes(%q) && tr.textContent.includes('exact') && tr.textContent.includes(%q))`, page, topic), 10*time.Second),
		poll(`document.querySelector('#mapping-urlPattern-error') === null`, 5*time.Second),
	)
	if err != nil {
		t.Fatalf("topics: %v; %s", err, pageState(bctx, bl))
	}
	if fieldError == "" {
		t.Error("no field error for a relative URL")
	}
	screenshot(t, bctx, "topics")

	// What the pages did, through the API.
	c := client(t)
	tok := c.Login(demo.Email, demo.Password)
	type mapping struct {
		URLPattern string `json:"urlPattern"`
		MatchType  string `json:"matchType"`
	}
	var mappings e2ekit.List[mapping]
	e2ekit.WantStatus(t, c.Do(http.MethodGet, "/api/PageTopicMappings?pageSize=100", tok, nil), http.StatusOK, &mappings)
	found := slices.ContainsFunc(mappings.Items, func(m mapping) bool { return m.URLPattern == page && m.MatchType == "exact" })
	if !found {
		t.Errorf("no exact mapping of %s in %+v", page, mappings.Items)
	}

	// The refused mapping is the one expected problem.
	_, problems := bl.snapshot()
	problems = slices.DeleteFunc(problems, func(p string) bool {
		return strings.HasSuffix(p, "/api/PageTopicMappings: HTTP 400") ||
			strings.HasPrefix(p, "log error (network): Failed to load resource: the server responded with a status of 400") &&
				strings.HasSuffix(p, "/api/PageTopicMappings")
	})
	if len(problems) > 0 {
		t.Errorf("the pages reported problems:\n%s", strings.Join(problems, "\n"))
	}
}

// An agent is offered neither page, and one opened by address says it is
// for admins without asking the API for anything of it.
func TestAgentSeesNoChannelsOrTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	demo := stk.Demo
	c := client(t)
	email, password := "agent-"+randid.Hex(4)+"@console.test", "pw-"+randid.Hex(10)
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Accounts", c.Login(demo.Email, demo.Password),
		map[string]any{"email": email, "name": "Agent Blake", "role": "agent", "password": password}), http.StatusCreated, nil)

	bctx, bl := newBrowser(t, ctx)
	var adminLinks int
	var channels, topics string
	err := chromedp.Run(bctx,
		chromedp.Navigate(stk.HTTPSURL+"/"),
		signIn(email, password),
		chromedp.Evaluate(`document.querySelectorAll('a[href^="/admin"]').length`, &adminLinks),
	)
	if err != nil {
		t.Fatalf("the agent signs in: %v; %s", err, pageState(bctx, bl))
	}
	// The inbox reads channels and topics for its filters; the admin
	// pages must read nothing.
	before, _ := bl.snapshot()
	err = chromedp.Run(bctx,
		chromedp.Navigate(stk.HTTPSURL+"/admin/channels"),
		poll(`document.querySelector('main [role=alert]') !== null`, 15*time.Second),
		chromedp.Text(`main`, &channels, chromedp.ByQuery),
		chromedp.Navigate(stk.HTTPSURL+"/admin/topics"),
		poll(`document.querySelector('main [role=alert]') !== null`, 15*time.Second),
		chromedp.Text(`main`, &topics, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("the agent's pages: %v; %s", err, pageState(bctx, bl))
	}
	if adminLinks != 0 {
		t.Errorf("the agent is offered %d admin links", adminLinks)
	}
	for page, text := range map[string]string{"channels": channels, "topics": topics} {
		if !strings.Contains(text, "Admins only") || strings.Contains(text, "Create") {
			t.Errorf("the agent's %s page: %q", page, text)
		}
	}
	requests, problems := bl.snapshot()
	for _, r := range requests[len(before):] {
		for _, p := range []string{"/api/Channels", "/api/ProviderConnections", "/api/Topics", "/api/Actions", "/api/Documents", "/api/PageTopicMappings"} {
			if strings.Contains(r, p) {
				t.Errorf("the agent's page asked for %s", r)
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("the pages reported problems:\n%s", strings.Join(problems, "\n"))
	}
}
