package e2email

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// post sends body to the callback with Graph's headers.
func post(t *testing.T, path, contentType string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, stk.HTTPSURL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	r := client(t).DoRequest(req)
	return r.Status, r.Header, r.Body
}

func TestWebhookValidationHandshake(t *testing.T) {
	t.Parallel()
	tokens := []string{
		"Validation: Testing client application reachability for subscription Request-Id: 0f1b3a52-1c8e-4cd4-9e2b-3c5d1a0b9f11",
		"a b:c:d", "plus+and%percent&amp;=eq", "ünïcödé – 検証 🔐", "x",
	}
	for _, tok := range tokens {
		q := "?validationToken=" + url.QueryEscape(tok)
		for _, path := range []string{"/api/ProviderWebhook", "/api/providerwebhook", "/API/PROVIDERWEBHOOK"} {
			r := client(t).Do(http.MethodGet, path+q, "", nil)
			if r.Status != http.StatusOK || r.String() != tok || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
				t.Errorf("GET %s %q: %d %q %q", path, tok, r.Status, r.Header.Get("Content-Type"), r.String())
			}
			// Graph's own form: POST, text/plain, empty body.
			status, h, body := post(t, path+q, "text/plain; charset=utf-8", nil)
			if status != http.StatusOK || string(body) != tok || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
				t.Errorf("POST %s %q: %d %q %q", path, tok, status, h.Get("Content-Type"), body)
			}
		}
	}
	// %20 and + both mean a space in a query.
	r := client(t).Do(http.MethodGet, "/api/providerwebhook?validationToken=a+b%20c%3Ad", "", nil)
	if r.String() != "a b c:d" {
		t.Errorf("decoded token %q", r.String())
	}
	wantStatus(t, client(t).Do(http.MethodGet, "/api/ProviderWebhook", "", nil), http.StatusBadRequest, nil)
	wantStatus(t, client(t).Do(http.MethodGet, "/api/ProviderWebhook?other=1", "", nil), http.StatusBadRequest, nil)
}

func TestWebhookBodies(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		ct     string
		body   string
		status int
	}{
		{"empty", "application/json", "", http.StatusOK},
		{"empty without type", "", "", http.StatusOK},
		{"whitespace", "application/json", " \r\n\t ", http.StatusOK},
		{"malformed", "application/json", `{"value":[`, http.StatusBadRequest},
		{"not an object", "application/json", `[1,2]`, http.StatusBadRequest},
		{"value not an array", "application/json", `{"value":{"subscriptionId":"x"}}`, http.StatusBadRequest},
		{"wrong item type", "application/json", `{"value":[{"subscriptionId":5}]}`, http.StatusBadRequest},
		{"invalid UTF-8", "application/json", "{\"value\":[{\"clientState\":\"\xff\"}]}", http.StatusBadRequest},
		{"no items", "application/json", `{"value":[]}`, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, h, body := post(t, "/api/ProviderWebhook", tt.ct, []byte(tt.body))
			if status != tt.status {
				t.Fatalf("%d %s, want %d", status, body, tt.status)
			}
			if status >= 400 && !strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") {
				t.Fatalf("%d as %q", status, h.Get("Content-Type"))
			}
		})
	}
	// Over MAX_BODY_BYTES (1 MiB): 413, read to the end so the client that
	// sends it whole sees the answer.
	big := append([]byte(`{"value":[{"clientState":"`), bytes.Repeat([]byte("x"), 1<<20+10)...)
	big = append(big, []byte(`"}]}`)...)
	status, _, body := post(t, "/api/ProviderWebhook", "application/json", big)
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized: %d %s", status, body)
	}
}

// Microsoft's documentation example of a mail notification: its
// subscription is not ours, and no create is in flight with its client
// state, so it queues nothing, is not parked, and is answered 2xx.
func TestWebhookDocumentationExampleUnknownSubscription(t *testing.T) {
	t.Parallel()
	before := metric(t, "mailingest", "mail_notifications_dropped_total", `reason="unknown"`)
	doc := `{
  "value": [
    {
      "id": "lsgTZMr9KwAAA",
      "subscriptionId": "` + newGUID() + `",
      "subscriptionExpirationDateTime": "2016-03-19T22:11:09.952Z",
      "clientState": "secretClientValue",
      "changeType": "created",
      "resource": "users/71f9cdd1-5d0c-4d36-b8e9-1d2bd2e0a6b2@84bd8158-6d4d-4958-8b9f-9d6445542f95/messages/AAMkADMxZmEzMDM1LTFjODQtNDVkYi04ZWMwLTQ5ZWE0MTFiZWQ5NABGAAAAAACy",
      "tenantId": "84bd8158-6d4d-4958-8b9f-9d6445542f95",
      "resourceData": {
        "@odata.type": "#Microsoft.Graph.Message",
        "@odata.id": "Users/71f9cdd1-5d0c-4d36-b8e9-1d2bd2e0a6b2@84bd8158-6d4d-4958-8b9f-9d6445542f95/Messages/AAMkADMxZmEzMDM1LTFjODQtNDVkYi04ZWMwLTQ5ZWE0MTFiZWQ5NABGAAAAAACy",
        "@odata.etag": "W/\"CQAAABYAAADkrWGo7bouTKlsgTZMr9KwAAAUWRHf\"",
        "id": "AAMkADMxZmEzMDM1LTFjODQtNDVkYi04ZWMwLTQ5ZWE0MTFiZWQ5NABGAAAAAACy"
      }
    }
  ]
}`
	status, _, body := post(t, "/api/ProviderWebhook", "application/json", []byte(doc))
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	var res struct{ Received, Queued, Parked, Dropped int }
	if err := json.Unmarshal(body, &res); err != nil || res.Received != 1 || res.Queued != 0 || res.Parked != 0 || res.Dropped != 1 {
		t.Fatalf("answer %s", body)
	}
	if after := metric(t, "mailingest", "mail_notifications_dropped_total", `reason="unknown"`); after < before+1 {
		t.Fatalf("dropped unknown %v -> %v", before, after)
	}
}

// Issue 22 §2: anyone may post to the callback, so items with fields over
// Graph's sizes (~100 KB ids and client states, a changeType Graph does not
// have) are dropped before they reach anything that keeps them: 200,
// counted as malformed, nothing parked or queued.
func TestWebhookOversizedItemsDropped(t *testing.T) {
	t.Parallel()
	before := metric(t, "mailingest", "mail_notifications_dropped_total", `reason="malformed"`)
	parked := metric(t, "mailingest", "mail_notifications_parked_total")
	big := strings.Repeat("A", 100<<10)
	items := []map[string]any{
		{"subscriptionId": big, "clientState": "c", "changeType": "created"},
		{"subscriptionId": newGUID(), "clientState": big, "changeType": "created"},
		{"subscriptionId": newGUID(), "clientState": "c", "changeType": "created", "tenantId": big},
		{"subscriptionId": newGUID(), "clientState": "c", "changeType": "created", "resource": big},
		{"subscriptionId": newGUID(), "clientState": "c", "changeType": "created" + big},
	}
	raw, err := json.Marshal(map[string]any{"value": items})
	if err != nil {
		t.Fatal(err)
	}
	status, _, body := post(t, "/api/ProviderWebhook", "application/json", raw)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	var res struct{ Received, Queued, Parked, Dropped int }
	if err := json.Unmarshal(body, &res); err != nil || res.Received != 5 || res.Dropped != 5 || res.Parked != 0 || res.Queued != 0 {
		t.Fatalf("answer %s", body)
	}
	if after := metric(t, "mailingest", "mail_notifications_dropped_total", `reason="malformed"`); after < before+5 {
		t.Fatalf("dropped malformed %v -> %v", before, after)
	}
	if after := metric(t, "mailingest", "mail_notifications_parked_total"); after != parked {
		t.Fatalf("parked %v -> %v", parked, after)
	}
}

// Graph may notify while the create call is still returning, before the new
// id is stored: those notifications carry the client state stored before
// the create, so they are parked, and queue the folder's import once the id
// is stored. Not parallel: the fake notifies on every create meanwhile.
func TestNotificationDuringCreateParked(t *testing.T) {
	graph.SetNotifyOnCreate(2)
	t.Cleanup(func() { graph.SetNotifyOnCreate(0) })
	parked := metric(t, "mailingest", "mail_notifications_parked_total")
	unknown := metric(t, "mailingest", "mail_notifications_dropped_total", `reason="unknown"`)
	tn := newTenant(t)
	_, f := subscribedFolder(t, tn)
	graph.SetNotifyOnCreate(0)
	if after := metric(t, "mailingest", "mail_notifications_parked_total"); after < parked+2 {
		t.Fatalf("parked %v -> %v, want the 2 notifications sent during the create", parked, after)
	}
	if after := metric(t, "mailingest", "mail_notifications_dropped_total", `reason="unknown"`); after != unknown {
		t.Fatalf("dropped unknown %v -> %v", unknown, after)
	}
	// Released once the id is stored (the park's first retry is a second
	// later): an import for the notification, besides the catch-up.
	eventually(t, 10*time.Second, "the parked notifications' import", func() bool {
		for _, r := range imports(t, f.FolderID) {
			if r.Reason == contracts.ImportNotification {
				return true
			}
		}
		return false
	})
}

func newGUID() string {
	h := randid.Hex(16)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// subscribedFolder is e2ekit.SubscribedFolder.
func subscribedFolder(t *testing.T, tn tenant) (channelBody, folderBody) {
	t.Helper()
	return e2ekit.SubscribedFolder(t, client(t), graph, tn)
}

func TestNotificationQueuesImport(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	ch, f := subscribedFolder(t, tn)
	sub := *f.ProviderSubscriptionID
	// The catch-up import of the new subscription.
	eventually(t, 5*time.Second, "catch-up import", func() bool { return len(imports(t, f.FolderID)) >= 1 })
	if got := imports(t, f.FolderID)[0]; got.Reason != contracts.ImportCatchUp || got.FolderID != f.FolderID ||
		got.ChannelID != ch.ChannelID || got.CustomerID != tn.CustomerID {
		t.Fatalf("catch-up %+v", got)
	}
	// Graph sends each change two or three times.
	id := "AAMkAD" + randid.Hex(20)
	status, err := graph.NotifyBatch(t.Context(), graphfake.Notification{SubscriptionID: sub, MessageID: id},
		graphfake.Notification{SubscriptionID: sub, MessageID: id}, graphfake.Notification{SubscriptionID: sub, MessageID: id})
	if err != nil || status != http.StatusOK {
		t.Fatalf("notify: %d %v", status, err)
	}
	// Queued before the answer: no waiting.
	var notified []contracts.MailImportRequest
	for _, r := range imports(t, f.FolderID) {
		if r.Reason == contracts.ImportNotification {
			notified = append(notified, r)
		}
	}
	if len(notified) != 1 || notified[0].CustomerID != tn.CustomerID || notified[0].ChannelID != ch.ChannelID ||
		notified[0].NotBefore.Before(notified[0].RequestedAt) {
		t.Fatalf("notification imports %+v", notified)
	}
	var got folderBody
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/Channels/%d/folders/%d", ch.ChannelID, f.FolderID), tn.AgentToken, nil), http.StatusOK, &got)
	if got.LastNotificationAt == nil {
		t.Fatalf("lastNotificationAt not recorded: %+v", got)
	}
}

func TestForgedNotificationDropped(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	_, f := subscribedFolder(t, tn)
	eventually(t, 5*time.Second, "catch-up import", func() bool { return len(imports(t, f.FolderID)) >= 1 })
	before := metric(t, "mailingest", "mail_notifications_dropped_total", `reason="forged"`)
	status, err := graph.NotifyBatch(t.Context(), graphfake.Notification{SubscriptionID: *f.ProviderSubscriptionID, Forge: true})
	if err != nil || status < 200 || status > 299 {
		t.Fatalf("forged notification answered %d %v (must be 2xx, or Graph retries for hours)", status, err)
	}
	if n := len(imports(t, f.FolderID)); n != 1 {
		t.Fatalf("%d imports after a forged notification", n)
	}
	if after := metric(t, "mailingest", "mail_notifications_dropped_total", `reason="forged"`); after != before+1 {
		t.Fatalf("forged drops %v -> %v", before, after)
	}
}

// Spec section 3: only both switches on queue an import. The switches are
// set behind the API so that the subscription stays (the API retires it
// when a switch goes off).
func TestAutoRetrieveSwitches(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	for _, tt := range []struct {
		channel, folder bool
	}{{true, true}, {true, false}, {false, true}, {false, false}} {
		t.Run(fmt.Sprintf("channel %v folder %v", tt.channel, tt.folder), func(t *testing.T) {
			ch, f := subscribedFolder(t, tn)
			eventually(t, 5*time.Second, "catch-up import", func() bool { return len(imports(t, f.FolderID)) >= 1 })
			state := clientState(t, f.FolderID)
			exec(t, `UPDATE mail.channels SET auto_retrieve_emails = $2 WHERE channel_id = $1`, ch.ChannelID, tt.channel)
			exec(t, `UPDATE mail.channel_folders SET auto_retrieve_emails = $2 WHERE folder_id = $1`, f.FolderID, tt.folder)
			// Posted here rather than by the fake: the renewal job may delete
			// a switched-off folder's subscription at Graph at any moment.
			body, _ := json.Marshal(map[string]any{"value": []map[string]any{{
				"subscriptionId": *f.ProviderSubscriptionID, "clientState": state, "changeType": "created",
				"resource": "Users/71f9cdd1-5d0c-4d36-b8e9-1d2bd2e0a6b2/Messages/AAMk" + randid.Hex(6), "tenantId": providerTenant,
			}}})
			if status, _, resp := post(t, "/api/providerwebhook", "application/json", body); status != http.StatusOK {
				t.Fatalf("notify: %d %s", status, resp)
			}
			want := 1
			if tt.channel && tt.folder {
				want = 2
			}
			if n := len(imports(t, f.FolderID)); n != want {
				t.Fatalf("%d imports, want %d", n, want)
			}
		})
	}
}

// When the subscription id is unknown (a notification from before the id
// was stored, or a subscription made elsewhere) the resource names the
// folder, in the shapes Graph and its SDKs write.
func TestResourceFallback(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	ch, f := subscribedFolder(t, tn)
	eventually(t, 5*time.Second, "catch-up import", func() bool { return len(imports(t, f.FolderID)) >= 1 })
	state := clientState(t, f.FolderID)
	mb := *ch.EmailAddress
	shapes := []struct {
		resource string
		queued   bool
	}{
		{"/users/" + mb + "/mailFolders('inbox')/messages", true},
		{"Users/" + strings.ToUpper(mb) + "/MailFolders('inbox')/Messages", true},
		{"users/" + mb + "/mailFolders/inbox/messages", true},
		{"/Users/" + url.PathEscape(mb) + "/mailFolders(\"inbox\")/messages", true},
		{"Users/71f9cdd1-5d0c-4d36-b8e9-1d2bd2e0a6b2/Messages/AAMkAD" + randid.Hex(8), false},
		{"me/messages", false},
		{"", false},
		{strings.Repeat("/users/x", 500), false},
	}
	for i, s := range shapes {
		before := len(imports(t, f.FolderID))
		body, _ := json.Marshal(map[string]any{"value": []map[string]any{{
			"subscriptionId": newGUID(), "clientState": state, "changeType": "created", "resource": s.resource,
			"tenantId": providerTenant, "resourceData": map[string]any{"id": "AAMk" + randid.Hex(6)},
		}}})
		// Each shape in its own coalescing bucket.
		time.Sleep(contracts.MailImportBucket)
		status, _, resp := post(t, "/api/providerwebhook", "application/json", body)
		if status != http.StatusOK {
			t.Fatalf("shape %d %q: %d %s", i, s.resource, status, resp)
		}
		if got := len(imports(t, f.FolderID)) - before; (got == 1) != s.queued || got > 1 {
			t.Errorf("shape %d %q: %d imports queued, want queued=%v", i, s.resource, got, s.queued)
		}
	}
}

// Ten thousand notifications for one folder within a few seconds queue at
// most one import per bucket (contracts.MailImportBucket).
func TestNotificationBurstCoalesces(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	_, f := subscribedFolder(t, tn)
	eventually(t, 5*time.Second, "catch-up import", func() bool { return len(imports(t, f.FolderID)) >= 1 })
	sub := *f.ProviderSubscriptionID
	const senders, batches, perBatch = 8, 25, 50 // 10,000 items
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for range senders {
		wg.Go(func() {
			items := make([]graphfake.Notification, perBatch)
			for i := range items {
				items[i] = graphfake.Notification{SubscriptionID: sub}
			}
			for range batches {
				status, err := graph.NotifyBatch(t.Context(), items...)
				if err != nil || status != http.StatusOK {
					errs <- fmt.Errorf("%d %v", status, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	took := time.Since(start)
	n := len(imports(t, f.FolderID)) - 1
	buckets := int(took/contracts.MailImportBucket) + 2
	t.Logf("10,000 notifications in %s: %d imports queued", took.Round(time.Millisecond), n)
	if n < 1 || n > buckets {
		t.Fatalf("%d imports for 10,000 notifications in %s (at most %d buckets)", n, took, buckets)
	}
}

// The gateway's per-client-IP limit does not apply to the callbacks: Graph
// sends every tenant's notifications from a few addresses. A gateway with a
// limit of 3 requests lets 20 callbacks through and refuses the API.
func TestCallbacksNotLimitedPerClientIP(t *testing.T) {
	t.Parallel()
	routes := stack.ServiceRoutes([]stack.Service{mustService(t, "mailingest")}, func(stack.Service) string { return stk.ServiceURLs["mailingest"] })
	gw, err := stack.StartGateway(t.Context(), stack.GatewayOptions{
		RepoRoot: repoRoot, TraefikBin: filepath.Join(binDir, "traefik"), Dir: t.TempDir(),
		Routes:    routes,
		RateLimit: stack.RateLimit{Average: 1, Period: time.Minute, Burst: 3},
		TLS:       stk.TLS, LogName: "traefik-callbacks",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gw.Stop() }()
	hc := stk.HTTPClient()
	do := func(method, path string) int {
		req, _ := http.NewRequestWithContext(t.Context(), method, gw.HTTPSURL+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 20 {
		if s := do(http.MethodPost, "/api/providerwebhook"); s != http.StatusOK {
			t.Fatalf("callback %d: %d", i, s)
		}
		if s := do(http.MethodGet, "/api/ProviderWebhook?validationToken=x"); s != http.StatusOK {
			t.Fatalf("handshake %d: %d", i, s)
		}
	}
	limited := 0
	for range 6 {
		if do(http.MethodGet, "/api/Channels") == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("the API routes were not limited per client IP")
	}
}

func mustService(t *testing.T, name string) stack.Service {
	s, ok := stack.LookupService(name)
	if !ok {
		t.Fatalf("no service %s", name)
	}
	return s
}

// clientState is the folder's subscription secret, as stored.
func clientState(t *testing.T, folderID int64) string {
	t.Helper()
	var state string
	if err := backends.DB.QueryRow(t.Context(), `SELECT client_state FROM mail.channel_folders WHERE folder_id = $1`, folderID).Scan(&state); err != nil {
		t.Fatal(err)
	}
	return state
}
