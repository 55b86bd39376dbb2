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

// A customer with 150 topics (made through the API): the topics' list
// pages with the real total, the page mapping's topic chooser reaches the
// 150th by searching and all of them by "More", a message is given the
// 150th by hand and the inbox's topic filter finds it by search. Then the deletes of
// a mapping, an action, a document and a topic, each after a
// confirmation, and a delete the API refuses (the topic was deleted
// meanwhile: its 404 is shown next to its row); the same for accounts. A failed connect flow and
// a crafted outcome link end on the console's page with an error, never a
// success.
func TestAdminDeletesAndChoosersBeyond100(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c := client(t)
	tn := e2ekit.NewTenant(t, stk, c, "Choosers")

	type created struct {
		TopicID    int64 `json:"topicID"`
		ActionID   int64 `json:"actionID"`
		DocumentID int64 `json:"documentID"`
	}
	topicIDs := make([]int64, 0, 150)
	for i := 1; i <= 150; i++ {
		var tp created
		e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Topics", tn.AdminToken,
			map[string]any{"name": fmt.Sprintf("Topic %03d", i), "description": ""}), http.StatusCreated, &tp)
		topicIDs = append(topicIDs, tp.TopicID)
	}
	action, doc := "Refund "+randid.Hex(3), "Policy "+randid.Hex(3)
	var a, d created
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Actions", tn.AdminToken,
		map[string]any{"name": action, "hookName": "refund", "channelID": nil, "isActive": true, "requiresConfirmation": false}), http.StatusCreated, &a)
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Documents", tn.AdminToken,
		map[string]any{"title": doc, "content": "Thirty days.", "channelID": nil, "isHook": false, "hookName": ""}), http.StatusCreated, &d)

	bctx, bl := newBrowser(t, ctx)
	page := "https://shop.example.test/last/" + randid.Hex(3)
	var summary, pager string
	var options, afterMore int
	err := chromedp.Run(bctx,
		chromedp.Navigate(stk.HTTPSURL+"/"),
		signIn(tn.AdminEmail, tn.AdminPassword),
		chromedp.Click(`nav a[href="/admin/topics"]`, chromedp.ByQuery),
		poll(hasRow(".resource.topic", "Topic 001"), 15*time.Second),
		chromedp.Text(`.resource.topic .summary`, &summary, chromedp.ByQuery),
		chromedp.Text(`.resource.topic .pager span`, &pager, chromedp.ByQuery),
		// The chooser holds the first 100 (by name) and offers more.
		poll(`document.querySelectorAll('#mapping-topicID option').length === 101`, 10*time.Second),
		chromedp.Evaluate(`document.querySelectorAll('#mapping-topicID option').length`, &options),
		chromedp.Click(`.resource.mapping .chooser-more`, chromedp.ByQuery),
		poll(`document.querySelectorAll('#mapping-topicID option').length === 151 && document.querySelector('.resource.mapping .chooser-more') === null`, 10*time.Second),
		chromedp.Evaluate(`document.querySelectorAll('#mapping-topicID option').length`, &afterMore),
		// Searching asks the API for the 150th.
		chromedp.SendKeys(`#mapping-topicID-q`, "150", chromedp.ByQuery),
		poll(`Array.from(document.querySelectorAll('#mapping-topicID option')).map(o => o.textContent).join() === "Choose a topic,Topic 150"`, 10*time.Second),
		choose(`#mapping-topicID`, "Topic 150"),
		fill(`#mapping-urlPattern`, page),
		chromedp.Click(`.resource.mapping .admin-form button[type=submit]`, chromedp.ByQuery),
		poll(fmt.Sprintf(`Array.from(document.querySelectorAll('.resource.mapping tbody tr')).some(tr => tr.textContent.includes(%q) && tr.textContent.includes('Topic 150'))`, page), 10*time.Second),
	)
	if err != nil {
		t.Fatalf("choosers: %v; %s", err, pageState(bctx, bl))
	}
	if summary != "1–20 of 150 topics" || pager != "Page 1 of 8" {
		t.Errorf("the topics' list says %q, %q; want the total and 8 pages", summary, pager)
	}
	if options != 101 || afterMore != 151 {
		t.Errorf("chooser options %d, then %d after More; want 101 and 151", options, afterMore)
	}
	screenshot(t, bctx, "topics-chooser")

	// An end user's message is given the 150th topic by hand (the list
	// holds all 150), and the inbox's topic filter finds it by search.
	var ch, eu, tk struct {
		ChannelID int64 `json:"channelID"`
		EndUserID int64 `json:"endUserID"`
		TicketID  int64 `json:"ticketID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Channels", tn.AdminToken, map[string]any{"name": "Web " + randid.Hex(3), "kind": "web"}), http.StatusCreated, &ch)
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/EndUsers", tn.AdminToken,
		map[string]any{"name": "Pat Customer", "email": "pat-" + randid.Hex(4) + "@example.org"}), http.StatusCreated, &eu)
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Tickets", tn.AdminToken,
		map[string]any{"subject": "Many topics", "channelID": ch.ChannelID, "endUserID": eu.EndUserID}), http.StatusCreated, &tk)
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/TicketMessages", tn.AdminToken,
		map[string]any{"ticketID": tk.TicketID, "message": "Which topic is this?", "senderType": "EndUser"}), http.StatusCreated, nil)
	var filtered string
	err = chromedp.Run(bctx,
		chromedp.Navigate(fmt.Sprintf("%s/tickets/%d", stk.HTTPSURL, tk.TicketID)),
		chromedp.WaitVisible(`.topics button`, chromedp.ByQuery),
		chromedp.Click(`.topics button`, chromedp.ByQuery), // Assign topics…
		poll(`document.querySelectorAll('.topics label.check').length === 150`, 15*time.Second),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('.topics label.check')).find(l => l.textContent.trim() === 'Topic 150').querySelector('input').click()`, nil),
		chromedp.Click(`.topics button[type=submit]`, chromedp.ByQuery),
		poll(`document.querySelector('[data-topics-source="manual"]') !== null && document.querySelector('.topics p').textContent.includes('Topic 150')`, 10*time.Second),
		chromedp.Click(`nav a[href="/"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#f-topic-q`, chromedp.ByQuery),
		chromedp.SendKeys(`#f-topic-q`, "150", chromedp.ByQuery),
		poll(`Array.from(document.querySelectorAll('#f-topic option')).some(o => o.textContent === 'Topic 150')`, 10*time.Second),
		choose(`#f-topic`, "Topic 150"),
		poll(fmt.Sprintf(`new URLSearchParams(location.search).get('topic') === %q && document.querySelectorAll('tbody tr').length === 1`, fmt.Sprint(topicIDs[149])), 10*time.Second),
		chromedp.Text(`tbody tr`, &filtered, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("the 150th topic on a message and in the inbox filter: %v; %s", err, pageState(bctx, bl))
	}
	if !strings.Contains(filtered, "Many topics") {
		t.Errorf("the inbox filtered by Topic 150 shows %q", filtered)
	}
	var got struct {
		Topics []string `json:"topics"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodGet, fmt.Sprintf("/api/Tickets/%d", tk.TicketID), tn.AdminToken, nil), http.StatusOK, &got)
	if len(got.Topics) != 1 || got.Topics[0] != "Topic 150" {
		t.Errorf("the ticket's topics %q, want Topic 150", got.Topics)
	}
	// Back to the topics page for the deletes.
	err = chromedp.Run(bctx,
		chromedp.Click(`nav a[href="/admin/topics"]`, chromedp.ByQuery),
		poll(hasRow(".resource.topic", "Topic 001")+` && `+hasRow(".resource.mapping", page), 15*time.Second),
	)
	if err != nil {
		t.Fatalf("back to the topics: %v; %s", err, pageState(bctx, bl))
	}

	// The deletes, each after a confirmation.
	err = chromedp.Run(bctx,
		confirmDelete(".resource.mapping", page),
		poll(`!(`+hasRow(".resource.mapping", page)+`)`, 10*time.Second),
		confirmDelete(".resource.action", action),
		poll(`!(`+hasRow(".resource.action", action)+`)`, 10*time.Second),
		confirmDelete(".resource.document", doc),
		poll(`!(`+hasRow(".resource.document", doc)+`)`, 10*time.Second),
		confirmDelete(".resource.topic", "Topic 001"),
		poll(`!(`+hasRow(".resource.topic", "Topic 001")+`) && `+hasRow(".resource.topic", "Topic 002"), 10*time.Second),
	)
	if err != nil {
		t.Fatalf("deletes: %v; %s", err, pageState(bctx, bl))
	}
	// Topic 002 is deleted through the API behind the page's back: the
	// page's delete is refused (404) and says so at the row.
	e2ekit.WantStatus(t, c.Do(http.MethodDelete, fmt.Sprintf("/api/Topics/%d", topicIDs[1]), tn.AdminToken, nil), http.StatusNoContent, nil)
	var refusal string
	err = chromedp.Run(bctx,
		confirmDelete(".resource.topic", "Topic 002"),
		poll(`Array.from(document.querySelectorAll('.resource.topic tbody tr')).find(tr => tr.textContent.includes('Topic 002'))?.querySelector('.row-problem') != null`, 10*time.Second),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('.resource.topic tbody tr')).find(tr => tr.textContent.includes('Topic 002')).querySelector('.row-problem').textContent`, &refusal),
	)
	if err != nil {
		t.Fatalf("the refused delete: %v; %s", err, pageState(bctx, bl))
	}
	if !strings.HasPrefix(refusal, "Not deleted: ") || len(refusal) <= len("Not deleted: ") {
		t.Errorf("the refused delete says %q", refusal)
	}
	screenshot(t, bctx, "topics-delete-refused")
	axeCheck(t, bctx, "topics (choosers, a refused delete)")

	// What the page did, through the API.
	count := func(path string) int {
		var l e2ekit.List[struct{}]
		e2ekit.WantStatus(t, c.Do(http.MethodGet, path, tn.AdminToken, nil), http.StatusOK, &l)
		return l.TotalCount
	}
	if n := count("/api/Topics?pageSize=1"); n != 148 {
		t.Errorf("%d topics left, want 148", n)
	}
	for _, p := range []string{"/api/Actions?pageSize=1", "/api/Documents?pageSize=1", "/api/PageTopicMappings?pageSize=1"} {
		if n := count(p); n != 0 {
			t.Errorf("%s: %d left, want 0", p, n)
		}
	}

	// Accounts: the agent is deleted after a confirmation (its token is
	// refused from then on); a second one deleted through the API behind
	// the page's back is refused at its row (404); the admin's own row
	// offers no delete.
	var gone struct {
		AccountID int64 `json:"accountID"`
	}
	goneEmail := "gone-" + randid.Hex(4) + "@choosers.test"
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Accounts", tn.AdminToken,
		map[string]any{"email": goneEmail, "name": "Gone", "role": "agent", "password": "pw-" + randid.Hex(10)}), http.StatusCreated, &gone)
	var ownDeletes int
	err = chromedp.Run(bctx,
		chromedp.Click(`nav a[href="/admin/accounts"]`, chromedp.ByQuery),
		poll(hasRow("main", tn.AgentEmail)+` && `+hasRow("main", goneEmail), 15*time.Second),
		chromedp.Evaluate(fmt.Sprintf(`Array.from(document.querySelectorAll('main tbody tr')).find(tr => tr.textContent.includes(%q)).querySelectorAll('button.delete').length`, tn.AdminEmail), &ownDeletes),
		confirmDelete("main", tn.AgentEmail),
		poll(`!(`+hasRow("main", tn.AgentEmail)+`) && document.querySelector('main p.ok[role=status]') !== null`, 10*time.Second),
	)
	if err != nil {
		t.Fatalf("account delete: %v; %s", err, pageState(bctx, bl))
	}
	if ownDeletes != 0 {
		t.Errorf("the admin's own row offers %d deletes", ownDeletes)
	}
	if r := c.Do(http.MethodGet, "/api/Customers/me", tn.AgentToken, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("the deleted agent's token: %d %s", r.Status, r.Body)
	}
	e2ekit.WantStatus(t, c.Do(http.MethodDelete, fmt.Sprintf("/api/Accounts/%d", gone.AccountID), tn.AdminToken, nil), http.StatusNoContent, nil)
	var accountRefusal string
	goneRow := fmt.Sprintf(`Array.from(document.querySelectorAll('main tbody tr')).find(tr => tr.textContent.includes(%q))`, goneEmail)
	err = chromedp.Run(bctx,
		confirmDelete("main", goneEmail),
		poll(goneRow+`?.querySelector('.row-problem') != null`, 10*time.Second),
		chromedp.Evaluate(goneRow+`.querySelector('.row-problem').textContent`, &accountRefusal),
	)
	if err != nil {
		t.Fatalf("the refused account delete: %v; %s", err, pageState(bctx, bl))
	}
	if !strings.HasPrefix(accountRefusal, "Not deleted: ") {
		t.Errorf("the refused account delete says %q", accountRefusal)
	}
	screenshot(t, bctx, "accounts-delete-refused")
	axeCheck(t, bctx, "accounts (a refused delete)")

	// A connect flow that fails (a state nobody issued) ends on the
	// console with the fixed text of its code; a crafted success link for
	// a connection that is not the customer's shows no success.
	var failed, crafted string
	err = chromedp.Run(bctx,
		chromedp.Navigate(stk.HTTPSURL+"/api/ProviderConnections/callback?state="+randid.Hex(20)+"&error=access_denied&error_description=%3Cb%3Eevil%3C%2Fb%3E"),
		poll(`location.pathname === "/admin/connections" && document.querySelector('.connections [data-outcome]') !== null`, 15*time.Second),
		chromedp.Text(`.connections [data-outcome="error"]`, &failed, chromedp.ByQuery),
		chromedp.Navigate(stk.HTTPSURL+"/admin/connections?connection=999999999&outcome=connected"),
		poll(`document.querySelector('.connections [data-outcome]') !== null`, 15*time.Second),
		chromedp.Text(`.connections [data-outcome="error"]`, &crafted, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("connect outcomes: %v; %s", err, pageState(bctx, bl))
	}
	if !strings.Contains(failed, "not connected") || strings.Contains(failed, "evil") {
		t.Errorf("the failed flow's page says %q", failed)
	}
	if !strings.Contains(crafted, "not connected") {
		t.Errorf("the crafted link's page says %q", crafted)
	}

	// The expected problems: the refused delete and the crafted link's
	// connection (404 both).
	_, problems := bl.snapshot()
	rest := withoutStatus(problems, fmt.Sprintf("/api/Topics/%d", topicIDs[1]), 404)
	rest = withoutStatus(rest, "/api/ProviderConnections/999999999", 404)
	rest = withoutStatus(rest, fmt.Sprintf("/api/Accounts/%d", gone.AccountID), 404)
	if len(rest) > 0 {
		t.Errorf("the pages reported problems:\n%s", strings.Join(rest, "\n"))
	}
}
