package graphfake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

const agent = "agent@contoso.example"

// get makes a GET with a Prefer header (empty for none); path is under /v1.0 or absolute.
func (e *env) get(path, tok, prefer string) reply {
	e.t.Helper()
	u := path
	if !strings.HasPrefix(path, "http") {
		u = e.srv.URL + "/v1.0" + path
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if prefer != "" {
		req.Header.Set("Prefer", prefer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: raw}
}

type deltaReply struct {
	Value []struct {
		ID               string          `json:"id"`
		Subject          *string         `json:"subject"`
		Body             json.RawMessage `json:"body"`
		ReceivedDateTime string          `json:"receivedDateTime"`
		Removed          *struct {
			Reason string `json:"reason"`
		} `json:"@removed"`
	} `json:"value"`
	NextLink  string `json:"@odata.nextLink"`
	DeltaLink string `json:"@odata.deltaLink"`
}

func (e *env) delta(link, tok string, pageSize int) deltaReply {
	e.t.Helper()
	r := e.get(link, tok, `IdType="ImmutableId", odata.maxpagesize=`+strconv.Itoa(pageSize))
	if r.status != http.StatusOK {
		e.t.Fatalf("delta %s: %d %s", link, r.status, r.body)
	}
	var d deltaReply
	if err := json.Unmarshal(r.body, &d); err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) addMail(d DeliverMail) string {
	e.t.Helper()
	if d.Mailbox == "" {
		d.Mailbox = agent
	}
	id, err := e.fake.AddMail(d)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func TestDeliverNotifiesTheFolderSubscriptions(t *testing.T) {
	tests := []struct {
		name          string
		notifications *int
		wantPosts     int
	}{
		{name: "Graph's usual duplicates", wantPosts: DefaultNotificationDuplicates},
		{name: "three", notifications: new(3), wantPosts: 3},
		{name: "silently", notifications: new(0), wantPosts: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tok := e.token(tenantA)
			inbox := e.create(tok, e.newSub("Agent@Contoso.example", "inbox"))
			e.create(tok, e.newSub(agent, "archive")) // another folder: not notified
			id, err := e.fake.Deliver(t.Context(), DeliverMail{Mailbox: agent, Subject: "Printer on fire",
				From: Address{Name: "Erin", Address: "erin@customer.example"}, Notifications: tt.notifications})
			if err != nil {
				t.Fatal(err)
			}
			got := e.recv.gotNotifications()
			if len(got) != tt.wantPosts {
				t.Fatalf("%d notification POSTs, want %d", len(got), tt.wantPosts)
			}
			userID := e.fake.UserID(tenantA, agent)
			for _, n := range got {
				if len(n.Value) != 1 {
					t.Fatalf("POST with %d items", len(n.Value))
				}
				it := n.Value[0]
				if it.SubscriptionID != inbox.ID || it.Resource != "Users/"+userID+"/Messages/"+id ||
					it.ResourceData == nil || it.ResourceData.ID != id || it.ClientState == nil || *it.ClientState != "state-inbox" {
					t.Errorf("item %+v", it)
				}
			}
			if ids := e.fake.Mail(agent, "Inbox"); len(ids) != 1 || ids[0] != id {
				t.Errorf("inbox holds %v, want [%s]", ids, id)
			}
		})
	}
}

func TestDeltaPagesAndContinues(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	base := e.clock.Now()
	old := e.addMail(DeliverMail{Subject: "old", ReceivedDateTime: base.Add(-48 * time.Hour)})
	var want []string
	for i := range 5 {
		want = append(want, e.addMail(DeliverMail{Subject: "m" + strconv.Itoa(i), ReceivedDateTime: base.Add(time.Duration(i) * time.Minute)}))
	}
	e.addMail(DeliverMail{Subject: "elsewhere", Folder: "archive"})
	e.addMail(DeliverMail{Mailbox: "other@contoso.example", Subject: "other mailbox"})

	filter := url.QueryEscape("receivedDateTime ge " + base.Add(-time.Hour).Format(time.RFC3339))
	link := "/users/" + agent + "/mailFolders/inbox/messages/delta?$select=id,subject&$filter=" + filter
	var got []string
	var pages int
	for {
		d := e.delta(link, tok, 2)
		pages++
		for _, v := range d.Value {
			if v.Subject == nil || v.Body != nil {
				t.Errorf("$select=id,subject: got subject %v, body %s", v.Subject, v.Body)
			}
			got = append(got, v.ID)
		}
		if d.NextLink == "" {
			if d.DeltaLink == "" {
				t.Fatal("last page without deltaLink")
			}
			link = d.DeltaLink
			break
		}
		link = d.NextLink
	}
	if pages != 3 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%d pages with %v, want 3 pages with %v (not %s)", pages, got, want, old)
	}

	// The deltaLink's round: what arrived since, and removals.
	newer := e.addMail(DeliverMail{Subject: "new"})
	if !e.fake.RemoveMail(agent, want[0]) {
		t.Fatal("RemoveMail")
	}
	d := e.delta(link, tok, 10)
	if len(d.Value) != 2 || d.Value[0].ID != newer || d.Value[1].ID != want[0] || d.Value[1].Removed == nil || d.DeltaLink == "" {
		t.Fatalf("incremental round %+v", d)
	}
	if d2 := e.delta(d.DeltaLink, tok, 10); len(d2.Value) != 0 || d2.DeltaLink == "" {
		t.Errorf("round without changes: %+v", d2)
	}
	if st := e.fake.MailboxStats(agent); st.DeltaCalls != 5 || st.WithoutImmutableID != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestExpiredDeltaTokensAnswer410(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	for range 3 {
		e.addMail(DeliverMail{})
	}
	first := e.delta("/users/"+agent+"/mailFolders/inbox/messages/delta", tok, 1)
	if first.NextLink == "" {
		t.Fatal("no nextLink")
	}
	e.fake.ExpireDeltaTokens("AGENT@contoso.example")
	r := e.get(first.NextLink, tok, "")
	if r.status != http.StatusGone || r.errorCode() != "syncStateNotFound" {
		t.Fatalf("expired nextLink: %d %s", r.status, r.body)
	}
	// A new round works and its links are valid.
	d := e.delta("/users/"+agent+"/mailFolders/inbox/messages/delta", tok, 10)
	if len(d.Value) != 3 || d.DeltaLink == "" {
		t.Fatalf("new round %+v", d)
	}
	if r := e.get(d.DeltaLink, tok, ""); r.status != http.StatusOK {
		t.Errorf("fresh deltaLink: %d", r.status)
	}
}

func TestMessageAndAttachments(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	pdf := bytes.Repeat([]byte{0, 1, 2, 0xff, '%'}, 3000)
	id := e.addMail(DeliverMail{Subject: "Invoice", HTML: "<html><head><style>p{}</style></head><body><p>Hello&nbsp;<b>you</b></p><p>Line 2</p></body></html>",
		From: Address{Name: "Erin", Address: "erin@customer.example"}, InReplyTo: "<a@x.example>", References: []string{"<z@x.example>", "<a@x.example>"},
		Attachments: []MailAttachment{
			{Name: "invoice.pdf", ContentType: "application/pdf", Content: pdf},
			{Name: "logo.png", ContentType: "image/png", Content: []byte("png"), IsInline: true, ContentID: "logo@x"},
			{Kind: AttachmentReference, Name: "share link", Size: 10},
		}})

	// By the user's GUID, with headers and the text body.
	user := e.fake.UserID(tenantA, agent)
	r := e.get("/users/"+user+"/messages/"+id+"?$select=id,body,internetMessageHeaders,hasAttachments", tok, `outlook.body-content-type="text"`)
	var m struct {
		ID   string `json:"id"`
		Body struct {
			ContentType, Content string
		} `json:"body"`
		Headers        []struct{ Name, Value string } `json:"internetMessageHeaders"`
		HasAttachments bool                           `json:"hasAttachments"`
		Subject        *string                        `json:"subject"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &m) != nil {
		t.Fatalf("message: %d %s", r.status, r.body)
	}
	if m.ID != id || m.Body.ContentType != "text" || m.Body.Content != "Hello\u00a0you\n\nLine 2" || !m.HasAttachments || m.Subject != nil {
		t.Errorf("message %+v", m)
	}
	hdrs := map[string]string{}
	for _, h := range m.Headers {
		hdrs[h.Name] = h.Value
	}
	if hdrs["In-Reply-To"] != "<a@x.example>" || hdrs["References"] != "<z@x.example> <a@x.example>" || !strings.HasSuffix(hdrs["Message-ID"], "@fake.example>") {
		t.Errorf("headers %v", hdrs)
	}
	if r := e.get("/users/"+agent+"/mailFolders/archive/messages/"+id, tok, ""); r.status != http.StatusNotFound {
		t.Errorf("message in the wrong folder: %d", r.status)
	}
	if r := e.get("/users/"+strings.ToUpper(agent)+"/mailFolders/Inbox/messages/"+id+"?$select=body", tok, ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"contentType":"html"`) {
		t.Errorf("folder-scoped message: %d %s", r.status, r.body)
	}
	if r := e.get("/users/"+agent+"/messages/"+strings.ToLower(id), tok, ""); r.status != http.StatusNotFound || r.errorCode() != "ErrorItemNotFound" {
		t.Errorf("ids are case-sensitive: %d %s", r.status, r.body)
	}
	if r := e.get("/users/"+agent+"/messages/"+id+"/$value", tok, ""); r.status != http.StatusOK || !strings.Contains(string(r.body), "Subject: Invoice") ||
		!strings.Contains(string(r.body), `filename=invoice.pdf`) {
		t.Errorf("$value: %d %s", r.status, r.body)
	}

	// contentId is a property of fileAttachment, not of attachment: Graph refuses it uncast.
	r = e.get("/users/"+agent+"/messages/"+id+"/attachments?$select=id,name,contentType,size,isInline,contentId", tok, "")
	if r.status != http.StatusBadRequest || r.errorCode() != "BadRequest" ||
		!strings.Contains(string(r.body), "Could not find a property named 'contentId' on type 'microsoft.graph.attachment'.") {
		t.Errorf("$select of a derived type's property: %d %s", r.status, r.body)
	}
	r = e.get("/users/"+agent+"/messages/"+id+"/attachments?$select=id,name,contentType,size,isInline,microsoft.graph.fileAttachment/contentId", tok, "")
	var list struct {
		Value []map[string]any `json:"value"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Value) != 3 {
		t.Fatalf("attachments: %d %s", r.status, r.body)
	}
	for _, a := range list.Value {
		if _, ok := a["contentBytes"]; ok {
			t.Errorf("$select without contentBytes returned them: %v", a["name"])
		}
	}
	if list.Value[0]["@odata.type"] != "#microsoft.graph.fileAttachment" || list.Value[1]["contentId"] != "logo@x" ||
		list.Value[2]["@odata.type"] != "#microsoft.graph.referenceAttachment" || list.Value[0]["size"] != float64(len(pdf)) {
		t.Errorf("attachments %v", list.Value)
	}
	r = e.get("/users/"+agent+"/messages/"+id+"/attachments/"+list.Value[0]["id"].(string)+"/$value", tok, "")
	if r.status != http.StatusOK || !bytes.Equal(r.body, pdf) || r.header.Get("Content-Type") != "application/pdf" {
		t.Errorf("attachment bytes: %d, %d bytes (want %d)", r.status, len(r.body), len(pdf))
	}
	if r := e.get("/users/"+agent+"/messages/"+id+"/attachments/nope/$value", tok, ""); r.status != http.StatusNotFound {
		t.Errorf("unknown attachment: %d", r.status)
	}
	if r := e.get("/users/6f1c2d3e-0000-4bbb-8ccc-000000000009/messages/"+id, tok, ""); r.status != http.StatusNotFound || r.errorCode() != "ErrorInvalidUser" {
		t.Errorf("unknown user id: %d %s", r.status, r.body)
	}
}

func TestAttachmentPaging(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.AttachmentPageSize = 2 })
	tok := e.token(tenantA)
	var atts []MailAttachment
	for i := range 5 {
		atts = append(atts, MailAttachment{Name: "f" + strconv.Itoa(i), Content: []byte{byte(i)}})
	}
	id := e.addMail(DeliverMail{Attachments: atts})
	link := "/users/" + agent + "/messages/" + id + "/attachments"
	var names []string
	for link != "" {
		r := e.get(link, tok, "")
		var page struct {
			Value []struct {
				Name string `json:"name"`
			} `json:"value"`
			NextLink string `json:"@odata.nextLink"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &page) != nil {
			t.Fatalf("%d %s", r.status, r.body)
		}
		for _, v := range page.Value {
			names = append(names, v.Name)
		}
		link = page.NextLink
	}
	if strings.Join(names, ",") != "f0,f1,f2,f3,f4" {
		t.Errorf("names %v", names)
	}
}

func TestReplyAndSendMail(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	id := e.addMail(DeliverMail{Subject: "Help", From: Address{Name: "Erin", Address: "erin@customer.example"},
		InternetMessageID: "<orig@customer.example>", References: []string{"<first@customer.example>"}})

	tests := []struct {
		name       string
		path       string
		body       any
		wantStatus int
		wantCode   string
	}{
		{name: "unknown message", path: "/users/" + agent + "/messages/AAkAnope/reply", body: map[string]any{"comment": "x"},
			wantStatus: 404, wantCode: "ErrorItemNotFound"},
		{name: "comment and body", path: "/users/" + agent + "/messages/" + id + "/reply",
			body:       map[string]any{"comment": "x", "message": map[string]any{"body": map[string]string{"contentType": "text", "content": "y"}}},
			wantStatus: 400},
		{name: "not an X- header", path: "/users/" + agent + "/messages/" + id + "/reply",
			body:       map[string]any{"comment": "x", "message": map[string]any{"internetMessageHeaders": []map[string]string{{"name": "Reply-To", "value": "a@b"}}}},
			wantStatus: 400, wantCode: "InvalidInternetMessageHeader"},
		{name: "unknown property", path: "/users/" + agent + "/messages/" + id + "/reply",
			body: map[string]any{"comment": "x", "message": map[string]any{"colour": "red"}}, wantStatus: 400},
		{name: "sendMail without recipients", path: "/users/" + agent + "/sendMail",
			body: map[string]any{"message": map[string]any{"subject": "s"}}, wantStatus: 400, wantCode: "ErrorInvalidRecipients"},
		{name: "reply", path: "/users/" + agent + "/messages/" + id + "/reply", wantStatus: 202,
			body: map[string]any{"comment": "We are on it.", "message": map[string]any{
				"internetMessageHeaders": []map[string]string{{"name": "X-Support-Reply", "value": "r1"}}}}},
		{name: "sendMail", path: "/users/" + agent + "/sendMail", wantStatus: 202,
			body: map[string]any{"saveToSentItems": true, "message": map[string]any{"subject": "[#7] Hello",
				"body":         map[string]string{"contentType": "Text", "content": "Hi"},
				"toRecipients": []map[string]any{{"emailAddress": map[string]string{"address": "dan@customer.example"}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.call(http.MethodPost, tt.path, tok, tt.body)
			if r.status != tt.wantStatus || (tt.wantCode != "" && r.errorCode() != tt.wantCode) {
				t.Errorf("%d %s; want %d %s", r.status, r.body, tt.wantStatus, tt.wantCode)
			}
		})
	}

	sent := e.fake.Sent()
	if len(sent) != 2 {
		t.Fatalf("sent %+v", sent)
	}
	rep, sm := sent[0], sent[1]
	if rep.Kind != SentReply || rep.InReplyTo != id || rep.Subject != "RE: Help" || rep.Text != "We are on it." ||
		len(rep.To) != 1 || rep.To[0].Address != "erin@customer.example" || rep.Headers["X-Support-Reply"] != "r1" {
		t.Errorf("reply %+v", rep)
	}
	if sm.Kind != SentSendMail || sm.Subject != "[#7] Hello" || sm.Text != "Hi" || sm.ContentType != "text" || sm.To[0].Address != "dan@customer.example" {
		t.Errorf("sendMail %+v", sm)
	}
	if inbox := e.fake.Mail(agent, "inbox"); len(inbox) != 1 {
		t.Errorf("inbox %v: sent mail must not land there", inbox)
	}
	sentItems := e.fake.Mail(agent, "sentitems")
	if len(sentItems) != 2 || sentItems[0] != rep.ID || sentItems[1] != sm.ID {
		t.Fatalf("sentitems %v", sentItems)
	}
	r := e.get("/users/"+agent+"/messages/"+rep.ID+"?$select=internetMessageHeaders,conversationId", tok, "")
	if !strings.Contains(string(r.body), `"name":"In-Reply-To","value":"\u003corig@customer.example\u003e"`) &&
		!strings.Contains(string(r.body), `"name":"In-Reply-To","value":"<orig@customer.example>"`) {
		t.Errorf("stored reply is not threaded: %s", r.body)
	}
	if !strings.Contains(string(r.body), "first@customer.example") {
		t.Errorf("stored reply lost the References: %s", r.body)
	}
}

func TestMailRoutesShareFaultsAndAuth(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	e.fake.Throttle(1, "0.5")
	r := e.get("/users/"+agent+"/mailFolders/inbox/messages/delta", tok, "")
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "0.5" {
		t.Errorf("throttled delta: %d %v", r.status, r.header)
	}
	if r := e.get("/users/"+agent+"/mailFolders/inbox/messages/delta", "", ""); r.status != http.StatusUnauthorized {
		t.Errorf("no token: %d", r.status)
	}
	e.fake.RevokeTokens(tenantA)
	if r := e.get("/users/"+agent+"/mailFolders/inbox/messages/delta", tok, ""); r.status != http.StatusUnauthorized {
		t.Errorf("revoked token: %d", r.status)
	}
	// Throttled and unauthenticated calls are refused before the mailbox counts them.
	if st := e.fake.MailboxStats(agent); st.Calls != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestControlMailAndSent(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	e.create(tok, e.newSub(agent, "inbox"))
	body, _ := json.Marshal(DeliverMail{Mailbox: agent, Subject: "from curl", Text: "hi",
		Attachments: []MailAttachment{{Name: "a.txt", ContentType: "text/plain", Content: []byte("abc")}}})
	resp, err := http.Post(e.srv.URL+"/_fake/mail", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || out["id"] == "" || out["notifyError"] != "" {
		t.Fatalf("POST /_fake/mail: %d %v", resp.StatusCode, out)
	}
	if n := len(e.recv.gotNotifications()); n != DefaultNotificationDuplicates {
		t.Errorf("%d notifications", n)
	}
	if r := e.call(http.MethodPost, "/users/"+agent+"/messages/"+out["id"]+"/reply", tok, map[string]any{"comment": "ok"}); r.status != http.StatusAccepted {
		t.Fatalf("reply %d %s", r.status, r.body)
	}
	resp, err = http.Get(e.srv.URL + "/_fake/sent")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sent []SentMail
	if err := json.NewDecoder(resp.Body).Decode(&sent); err != nil || len(sent) != 1 || sent[0].InReplyTo != out["id"] || sent[0].Subject != "RE: from curl" {
		t.Errorf("GET /_fake/sent: %v %+v", err, sent)
	}
	resp2, err := http.Post(e.srv.URL+"/_fake/mail", "application/json", strings.NewReader(`{"mailbox":""}`))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusBadRequest {
		t.Errorf("mail without mailbox: %d", resp2.StatusCode)
	}
}

// $select names only properties of the addressed type (or, cast, of a type derived from it), as
// Graph's OData parser checks them; the messages and delta reads refuse the rest with 400.
func TestSelectRefusesPropertiesTheTypeLacks(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	id := e.addMail(DeliverMail{Subject: "Hi", Attachments: []MailAttachment{{Name: "a.txt", Content: []byte("a")}}})
	cases := []struct {
		name, path, message string
	}{
		{"attachment contentId", "/messages/" + id + "/attachments?$select=id,contentId",
			"Could not find a property named 'contentId' on type 'microsoft.graph.attachment'."},
		{"attachment contentBytes", "/messages/" + id + "/attachments?$select=contentBytes",
			"Could not find a property named 'contentBytes' on type 'microsoft.graph.attachment'."},
		{"cast to a type that is not derived", "/messages/" + id + "/attachments?$select=microsoft.graph.message/subject",
			"The type 'microsoft.graph.message' is not derived from 'microsoft.graph.attachment'."},
		{"cast property missing", "/messages/" + id + "/attachments?$select=microsoft.graph.itemAttachment/contentId",
			"Could not find a property named 'contentId' on type 'microsoft.graph.itemAttachment'."},
		{"message", "/messages/" + id + "?$select=id,subject,contentId",
			"Could not find a property named 'contentId' on type 'microsoft.graph.message'."},
		{"delta", "/mailFolders/inbox/messages/delta?$select=id,isInline",
			"Could not find a property named 'isInline' on type 'microsoft.graph.message'."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.get("/users/"+agent+c.path, tok, "")
			var body struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if r.status != http.StatusBadRequest || json.Unmarshal(r.body, &body) != nil ||
				body.Error.Code != "BadRequest" || body.Error.Message != c.message {
				t.Errorf("%d %s", r.status, r.body)
			}
		})
	}
	for _, ok := range []string{
		"/messages/" + id + "/attachments?$select=id,name,microsoft.graph.fileAttachment/contentId,microsoft.graph.fileAttachment/name",
		"/messages/" + id + "?$select=ID,Subject,internetMessageHeaders",
		"/mailFolders/inbox/messages/delta?$select=id,receivedDateTime,from,subject,isDraft",
	} {
		if r := e.get("/users/"+agent+ok, tok, ""); r.status != http.StatusOK {
			t.Errorf("%s: %d %s", ok, r.status, r.body)
		}
	}
}

// Graph's paths take a user's id or userPrincipalName; an alias is 404 ErrorInvalidUser there and
// 404 Request_ResourceNotFound at GET /users/{alias}, and found with proxyAddresses/any(...).
func TestAliasesAndUserLookup(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	e.fake.AddAlias(agent, "Support@Contoso.example")
	id := e.addMail(DeliverMail{Mailbox: "support@contoso.example", Subject: "to the alias"})
	if got := e.fake.Mail(agent, "inbox"); len(got) != 1 || got[0] != id {
		t.Fatalf("mail to the alias is not in the user's mailbox: %v", got)
	}
	if r := e.get("/users/support@contoso.example/messages/"+id, tok, ""); r.status != http.StatusNotFound || r.errorCode() != "ErrorInvalidUser" {
		t.Errorf("alias in a mail path: %d %s", r.status, r.body)
	}
	for _, user := range []string{agent, strings.ToUpper(agent), e.fake.UserID(tenantA, agent)} {
		if r := e.get("/users/"+user+"/messages/"+id, tok, ""); r.status != http.StatusOK {
			t.Errorf("%s in a mail path: %d %s", user, r.status, r.body)
		}
	}
	if r := e.call(http.MethodPost, "/subscriptions", tok, e.newSub("support@contoso.example", "inbox")); r.status != http.StatusNotFound ||
		r.errorCode() != "ErrorInvalidUser" {
		t.Errorf("alias in a subscription resource: %d %s", r.status, r.body)
	}
	sub := e.create(tok, e.newSub(e.fake.UserID(tenantA, agent), "inbox"))
	if subs := e.fake.Subscriptions(); len(subs) != 1 || subs[0].ID != sub.ID || subs[0].UserID != e.fake.UserID(tenantA, agent) {
		t.Errorf("subscription by user id: %+v", subs)
	}

	type user struct {
		ID, UserPrincipalName, Mail string
		ProxyAddresses              []string
	}
	r := e.get("/users/"+agent+"?$select=id,userPrincipalName,mail", tok, "")
	var u user
	if r.status != http.StatusOK || json.Unmarshal(r.body, &u) != nil || u.ID != e.fake.UserID(tenantA, agent) || u.UserPrincipalName != agent {
		t.Errorf("user by UPN: %d %s", r.status, r.body)
	}
	if r := e.get("/users/support@contoso.example", tok, ""); r.status != http.StatusNotFound || r.errorCode() != "Request_ResourceNotFound" {
		t.Errorf("user by alias: %d %s", r.status, r.body)
	}
	if r := e.get("/users/"+agent+"?$select=id,contentId", tok, ""); r.status != http.StatusBadRequest {
		t.Errorf("user $select of a property users lack: %d %s", r.status, r.body)
	}
	filter := url.QueryEscape("proxyAddresses/any(x:x eq 'SMTP:support@CONTOSO.example')")
	r = e.get("/users?$filter="+filter+"&$select=id,userPrincipalName,proxyAddresses", tok, "")
	var list struct{ Value []user }
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Value) != 1 || list.Value[0].UserPrincipalName != agent ||
		strings.Join(list.Value[0].ProxyAddresses, ",") != "SMTP:"+agent+",smtp:support@contoso.example" {
		t.Errorf("user by proxy address: %d %s", r.status, r.body)
	}
	r = e.get("/users?$filter="+url.QueryEscape("proxyAddresses/any(x:x eq 'smtp:nobody@contoso.example')"), tok, "")
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Value) != 0 {
		t.Errorf("unknown proxy address: %d %s", r.status, r.body)
	}
}
