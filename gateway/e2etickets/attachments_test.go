package e2etickets

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// attMessage is a ticket with one message, made as database rows.
type attMessage struct {
	TicketID  int64
	MessageID int64
	Token     string // the ticket token of the feedback link
}

// attSeedMessage makes an end user and a channel through the API, then a
// ticket and a message as rows (the TicketMessages API is built beside
// this one; switch to it here once it is in).
func attSeedMessage(t *testing.T, tn tenant) attMessage {
	t.Helper()
	u := createEndUser(t, tn.AgentToken, map[string]any{"name": "Attacher " + randid.Hex(3)})
	channel := createChannel(t, tn)
	c := client(t)
	var msg struct {
		MessageID int64 `json:"messageID"`
		TicketID  int64 `json:"ticketID"`
	}
	wantStatus(t, c.Do(http.MethodPost, "/api/TicketMessages", tn.AgentToken, map[string]any{"subject": "Attachments",
		"channelID": channel, "endUserID": u.EndUserID, "senderType": "Agent", "message": "Here is the answer."}),
		http.StatusCreated, &msg)
	var ticket struct {
		TicketToken string `json:"ticketToken"`
	}
	wantStatus(t, c.Do(http.MethodGet, fmt.Sprintf("/api/Tickets/%d", msg.TicketID), tn.AgentToken, nil), http.StatusOK, &ticket)
	return attMessage{TicketID: msg.TicketID, MessageID: msg.MessageID, Token: ticket.TicketToken}
}

type attBody struct {
	TicketMessageAttachmentID int64  `json:"ticketMessageAttachmentID"`
	TicketMessageID           int64  `json:"ticketMessageID"`
	FileName                  string `json:"fileName"`
	ContentType               string `json:"contentType"`
	Size                      int64  `json:"size"`
	SHA256                    string `json:"sha256"`
	DateCreated               string `json:"dateCreated"`
}

func attPath(messageID int64) string {
	return fmt.Sprintf("/api/TicketMessages/%d/attachments", messageID)
}

// attPart is one part of a multipart body: the header as written (so
// tests can send what a library would escape) and the content.
type attPart struct {
	header textproto.MIMEHeader
	data   []byte
}

func attFilePart(fileName, contentType string, data []byte) attPart {
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, fileName))
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return attPart{header: h, data: data}
}

// attPost sends a multipart body of parts to the upload route.
func attPost(t *testing.T, token string, messageID int64, parts ...attPart) *e2ekit.Response {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for _, p := range parts {
		pw, err := w.CreatePart(p.header)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return attSend(t, token, messageID, w.FormDataContentType(), body.Bytes())
}

func attSend(t *testing.T, token string, messageID int64, contentType string, body []byte) *e2ekit.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, stk.HTTPSURL+attPath(messageID), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return client(t).DoRequest(req)
}

// attUpload uploads one file and checks the answer's Location.
func attUpload(t *testing.T, token string, messageID int64, fileName, contentType string, data []byte) attBody {
	t.Helper()
	r := attPost(t, token, messageID, attFilePart(fileName, contentType, data))
	var a attBody
	wantStatus(t, r, http.StatusCreated, &a)
	if loc := r.Header.Get("Location"); loc != fmt.Sprintf("%s/%d", attPath(messageID), a.TicketMessageAttachmentID) {
		t.Fatalf("Location %q for %+v", loc, a)
	}
	return a
}

func attDownload(t *testing.T, token string, messageID, id int64) *e2ekit.Response {
	t.Helper()
	return client(t).Do(http.MethodGet, fmt.Sprintf("%s/%d", attPath(messageID), id), token, nil)
}

func attRandom(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func attSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// attChunks counts the chunks of a blob key in the bucket (as the NATS
// harness user sees it).
func attChunks(t *testing.T, key string) int {
	t.Helper()
	bucket := backends.Names.Stream(contracts.BucketAttachments)
	st, err := backends.JS.Stream(t.Context(), contracts.ObjectStream(bucket))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context(), jetstream.WithSubjectFilter("$O."+bucket+".C."+key))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return n
}

func attKey(t *testing.T, id int64) string {
	t.Helper()
	var key string
	if err := backends.DB.QueryRow(t.Context(), `SELECT object_key FROM tickets.attachments WHERE attachment_id = $1`, id).Scan(&key); err != nil {
		t.Fatal(err)
	}
	return key
}

// Byte-for-byte round trips of 1 byte and 10 MB of random bytes through
// the gateway, with the download's headers; then the list.
func TestAttRoundTrip(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	m := attSeedMessage(t, tn)
	var ids []int64
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"one byte", []byte{0x7f}},
		{"ten megabytes", attRandom(t, 10_000_000)},
	} {
		a := attUpload(t, tn.AgentToken, m.MessageID, "data.bin", "application/x-anything", tc.data)
		if a.Size != int64(len(tc.data)) || a.SHA256 != attSum(tc.data) || a.FileName != "data.bin" || a.TicketMessageID != m.MessageID {
			t.Fatalf("%s: %+v", tc.name, a)
		}
		r := attDownload(t, tn.AdminToken, m.MessageID, a.TicketMessageAttachmentID)
		wantStatus(t, r, http.StatusOK, nil)
		if attSum(r.Body) != attSum(tc.data) {
			t.Fatalf("%s: downloaded %d bytes, sha256 %s; uploaded %d", tc.name, len(r.Body), attSum(r.Body), len(tc.data))
		}
		if r.Header.Get("Content-Length") != fmt.Sprint(len(tc.data)) || r.Header.Get("Content-Type") != a.ContentType ||
			r.Header.Get("X-Content-Type-Options") != "nosniff" ||
			r.Header.Get("Content-Disposition") != `attachment; filename="data.bin"; filename*=UTF-8''data.bin` {
			t.Fatalf("%s: headers %v", tc.name, r.Header)
		}
		ids = append(ids, a.TicketMessageAttachmentID)
	}
	// A zero-byte file is a file.
	empty := attUpload(t, tn.AgentToken, m.MessageID, "empty.txt", "text/plain", nil)
	if empty.Size != 0 || empty.SHA256 != attSum(nil) || empty.ContentType != "application/octet-stream" {
		t.Fatalf("empty file %+v", empty)
	}
	if r := attDownload(t, tn.AgentToken, m.MessageID, empty.TicketMessageAttachmentID); r.Status != http.StatusOK || len(r.Body) != 0 {
		t.Fatalf("empty download: %d %d bytes", r.Status, len(r.Body))
	}
	ids = append(ids, empty.TicketMessageAttachmentID)

	var list []attBody
	wantStatus(t, client(t).Do(http.MethodGet, attPath(m.MessageID), tn.AgentToken, nil), http.StatusOK, &list)
	if len(list) != 3 {
		t.Fatalf("list %+v", list)
	}
	for i, a := range list {
		if a.TicketMessageAttachmentID != ids[i] {
			t.Fatalf("list order %+v, want ids %v", list, ids)
		}
	}
	other := attSeedMessage(t, tn)
	var none []attBody
	wantStatus(t, client(t).Do(http.MethodGet, attPath(other.MessageID), tn.AgentToken, nil), http.StatusOK, &none)
	if none == nil || len(none) != 0 {
		t.Fatalf("list of a message without attachments: %+v", none)
	}
}

// Over ATTACHMENT_MAX_BYTES (25 MiB): 413, no attachment, no bytes left
// in the bucket; exactly the cap is stored.
func TestAttOverTheCap(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	m := attSeedMessage(t, tn)
	const maxBytes = 25 << 20
	wantProblem(t, attPost(t, tn.AgentToken, m.MessageID, attFilePart("big.bin", "", make([]byte, maxBytes+1))),
		http.StatusRequestEntityTooLarge, "")
	var list []attBody
	wantStatus(t, client(t).Do(http.MethodGet, attPath(m.MessageID), tn.AgentToken, nil), http.StatusOK, &list)
	if len(list) != 0 {
		t.Fatalf("attachments after a refused upload: %+v", list)
	}
	rows, err := backends.DB.Query(t.Context(), `SELECT object_key FROM tickets.blob_garbage WHERE object_key LIKE $1`,
		fmt.Sprintf("%d\\_%d\\_%%", tn.CustomerID, m.MessageID))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if len(keys) != 1 {
		t.Fatalf("garbage keys of the refused upload: %v", keys)
	}
	if n := attChunks(t, keys[0]); n != 0 {
		t.Fatalf("%d chunks of the refused upload are stored", n)
	}
	data := attRandom(t, maxBytes)
	if a := attUpload(t, tn.AgentToken, m.MessageID, "exact.bin", "", data); a.Size != maxBytes || a.SHA256 != attSum(data) {
		t.Fatalf("upload of exactly the cap: %+v", a)
	}
}

// The type is sniffed from the bytes: a PNG named x.txt, sent as
// text/plain, is image/png; HTML is served as a download, never rendered.
func TestAttSniffedType(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	m := attSeedMessage(t, tn)
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), attRandom(t, 2000)...)
	a := attUpload(t, tn.AgentToken, m.MessageID, "x.txt", "text/plain", png)
	if a.ContentType != "image/png" || a.FileName != "x.txt" {
		t.Fatalf("png: %+v", a)
	}
	r := attDownload(t, tn.AgentToken, m.MessageID, a.TicketMessageAttachmentID)
	wantStatus(t, r, http.StatusOK, nil)
	if r.Header.Get("Content-Type") != "image/png" || !bytes.Equal(r.Body, png) {
		t.Fatalf("png served as %q", r.Header.Get("Content-Type"))
	}
	html := attUpload(t, tn.AgentToken, m.MessageID, "page.png", "image/png", []byte("<html><script>alert(1)</script></html>"))
	if html.ContentType != "text/html; charset=utf-8" {
		t.Fatalf("html: %+v", html)
	}
	r = attDownload(t, tn.AgentToken, m.MessageID, html.TicketMessageAttachmentID)
	wantStatus(t, r, http.StatusOK, nil)
	if !strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment;") || r.Header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(r.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("html served with %v", r.Header)
	}
}

// File names keep the base name only, without control or formatting
// characters; the download's Content-Disposition is safe ASCII plus the
// exact UTF-8 name.
func TestAttFileNames(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	m := attSeedMessage(t, tn)
	for _, tc := range []struct {
		name        string
		disposition string // the part's Content-Disposition
		want        string
		header      string // the download's Content-Disposition
	}{
		{"unix path", `form-data; name="file"; filename="../../etc/passwd"`, "passwd",
			`attachment; filename="passwd"; filename*=UTF-8''passwd`},
		{"windows path", `form-data; name="file"; filename="C:\\Users\\eve\\run.exe"`, "run.exe",
			`attachment; filename="run.exe"; filename*=UTF-8''run.exe`},
		{"quotes and semicolons", `form-data; name="file"; filename="a\"b; c.txt"`, `a"b; c.txt`,
			`attachment; filename="a_b; c.txt"; filename*=UTF-8''a%22b%3B%20c.txt`},
		{"utf-8 via filename*", `form-data; name="file"; filename*=UTF-8''%C3%9Cbersicht%20%F0%9F%93%8E.pdf`, "Übersicht 📎.pdf",
			`attachment; filename="_bersicht _.pdf"; filename*=UTF-8''%C3%9Cbersicht%20%F0%9F%93%8E.pdf`},
		{"control characters and bidi override", `form-data; name="file"; filename*=UTF-8''in%0D%0Avoice%E2%80%AEfdp.exe`, "invoicefdp.exe",
			`attachment; filename="invoicefdp.exe"; filename*=UTF-8''invoicefdp.exe`},
		{"nothing left", `form-data; name="file"; filename="../"`, "attachment",
			`attachment; filename="attachment"; filename*=UTF-8''attachment`},
		{"too long", `form-data; name="file"; filename="` + strings.Repeat("n", 300) + `.txt"`, strings.Repeat("n", 255), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", tc.disposition)
			r := attPost(t, tn.AgentToken, m.MessageID, attPart{header: h, data: []byte("content")})
			var a attBody
			wantStatus(t, r, http.StatusCreated, &a)
			if a.FileName != tc.want {
				t.Fatalf("file name %q, want %q", a.FileName, tc.want)
			}
			d := attDownload(t, tn.AgentToken, m.MessageID, a.TicketMessageAttachmentID)
			wantStatus(t, d, http.StatusOK, nil)
			if tc.header != "" && d.Header.Get("Content-Disposition") != tc.header {
				t.Fatalf("Content-Disposition %q, want %q", d.Header.Get("Content-Disposition"), tc.header)
			}
		})
	}
}

// Bodies that are not a file upload are 400s naming file; ids must be ids;
// a token is needed.
func TestAttBadRequests(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	m := attSeedMessage(t, tn)
	noName := textproto.MIMEHeader{}
	noName.Set("Content-Disposition", `form-data; name="file"`)
	emptyName := textproto.MIMEHeader{}
	emptyName.Set("Content-Disposition", `form-data; name="file"; filename=""`)
	other := textproto.MIMEHeader{}
	other.Set("Content-Disposition", `form-data; name="attachment"; filename="x.txt"`)
	for name, r := range map[string]*e2ekit.Response{
		"json body":         client(t).Do(http.MethodPost, attPath(m.MessageID), tn.AgentToken, map[string]string{"file": "x"}),
		"no body":           attSend(t, tn.AgentToken, m.MessageID, "multipart/form-data; boundary=xyz", nil),
		"no boundary":       attSend(t, tn.AgentToken, m.MessageID, "multipart/form-data", []byte("--x\r\n")),
		"no file part":      attPost(t, tn.AgentToken, m.MessageID, attPart{header: other, data: []byte("x")}),
		"no parts":          attPost(t, tn.AgentToken, m.MessageID),
		"file without name": attPost(t, tn.AgentToken, m.MessageID, attPart{header: noName, data: []byte("x")}),
		"empty file name":   attPost(t, tn.AgentToken, m.MessageID, attPart{header: emptyName, data: []byte("x")}),
		"cut short": attSend(t, tn.AgentToken, m.MessageID, "multipart/form-data; boundary=xyz",
			[]byte("--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nthe body ends here")),
	} {
		t.Run(name, func(t *testing.T) { wantProblem(t, r, http.StatusBadRequest, "file") })
	}
	var list []attBody
	wantStatus(t, client(t).Do(http.MethodGet, attPath(m.MessageID), tn.AgentToken, nil), http.StatusOK, &list)
	if len(list) != 0 {
		t.Fatalf("attachments stored from bad requests: %+v", list)
	}

	c := client(t)
	wantProblem(t, c.Do(http.MethodGet, "/api/TicketMessages/0/attachments", tn.AgentToken, nil), http.StatusBadRequest, "id")
	wantProblem(t, c.Do(http.MethodGet, attPath(m.MessageID)+"/x1", tn.AgentToken, nil), http.StatusBadRequest, "attachmentId")
	wantProblem(t, c.Do(http.MethodDelete, attPath(m.MessageID)+"/-1", tn.AgentToken, nil), http.StatusBadRequest, "attachmentId")
	wantProblem(t, attPost(t, "", m.MessageID, attFilePart("a.txt", "", []byte("x"))), http.StatusUnauthorized, "")
	wantProblem(t, c.Do(http.MethodGet, attPath(m.MessageID), "", nil), http.StatusUnauthorized, "")
}

// Another customer's message or attachment, or an attachment of another
// message, is a 404 on every route; DELETE removes the metadata at once
// and the bytes right after.
func TestAttDeleteAndOtherTenants(t *testing.T) {
	t.Parallel()
	tn, other := newTenant(t), newTenant(t)
	m := attSeedMessage(t, tn)
	sibling := attSeedMessage(t, tn)
	a := attUpload(t, tn.AgentToken, m.MessageID, "secret.txt", "", []byte("tenant secret"))
	item := fmt.Sprintf("%s/%d", attPath(m.MessageID), a.TicketMessageAttachmentID)
	viaSibling := fmt.Sprintf("%s/%d", attPath(sibling.MessageID), a.TicketMessageAttachmentID)
	c := client(t)
	for _, token := range []string{other.AdminToken, other.AgentToken} {
		wantProblem(t, c.Do(http.MethodGet, attPath(m.MessageID), token, nil), http.StatusNotFound, "")
		wantProblem(t, c.Do(http.MethodGet, item, token, nil), http.StatusNotFound, "")
		wantProblem(t, c.Do(http.MethodDelete, item, token, nil), http.StatusNotFound, "")
		wantProblem(t, attPost(t, token, m.MessageID, attFilePart("x.txt", "", []byte("x"))), http.StatusNotFound, "")
	}
	wantProblem(t, c.Do(http.MethodGet, viaSibling, tn.AgentToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodDelete, viaSibling, tn.AgentToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodGet, attPath(1<<50), tn.AgentToken, nil), http.StatusNotFound, "")

	key := attKey(t, a.TicketMessageAttachmentID)
	if n := attChunks(t, key); n != 1 {
		t.Fatalf("%d chunks stored, want 1", n)
	}
	wantStatus(t, c.Do(http.MethodDelete, item, tn.AdminToken, nil), http.StatusNoContent, nil)
	wantProblem(t, c.Do(http.MethodGet, item, tn.AdminToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodDelete, item, tn.AdminToken, nil), http.StatusNotFound, "")
	// The deletion wakes the sweeper.
	for deadline := time.Now().Add(10 * time.Second); attChunks(t, key) != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the deleted attachment's bytes are still stored after 10 s")
		}
	}
}

// Concurrent uploads to one message are all stored, each with its own
// bytes and nothing left queued as garbage.
func TestAttParallelUploads(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	m := attSeedMessage(t, tn)
	const n = 8
	files := make([][]byte, n)
	for i := range files {
		files[i] = attRandom(t, 200_000+i)
	}
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	counts := e2ekit.Parallel(n, func() *e2ekit.Response {
		i := <-next
		return attPost(t, tn.AgentToken, m.MessageID, attFilePart(fmt.Sprintf("f%d.bin", i), "", files[i]))
	})
	if counts[http.StatusCreated] != n {
		t.Fatalf("statuses %v", counts)
	}
	var list []attBody
	wantStatus(t, client(t).Do(http.MethodGet, attPath(m.MessageID), tn.AgentToken, nil), http.StatusOK, &list)
	if len(list) != n {
		t.Fatalf("%d attachments", len(list))
	}
	for _, a := range list {
		var i int
		if _, err := fmt.Sscanf(a.FileName, "f%d.bin", &i); err != nil || a.SHA256 != attSum(files[i]) {
			t.Fatalf("attachment %+v", a)
		}
		r := attDownload(t, tn.AgentToken, m.MessageID, a.TicketMessageAttachmentID)
		if r.Status != http.StatusOK || !bytes.Equal(r.Body, files[i]) {
			t.Fatalf("download of %s: %d, %d bytes", a.FileName, r.Status, len(r.Body))
		}
	}
	var queued int
	if err := backends.DB.QueryRow(t.Context(), `SELECT count(*) FROM tickets.blob_garbage WHERE object_key LIKE $1`,
		fmt.Sprintf("%d\\_%d\\_%%", tn.CustomerID, m.MessageID)).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	if queued != 0 {
		t.Fatalf("%d keys queued as garbage after stored uploads", queued)
	}
}

// attQuota is the suite's ATTACHMENT_QUOTA_BYTES: 26 MiB per customer.
const attQuota = 26 << 20

// The customer's attachment quota: an upload that does not fit is a 413
// whose problem gives the figures (used, limit, size), checked against
// gateway/openapi.yaml; nothing is kept; another customer is not held by
// it; deleting an attachment frees the room.
func TestAttQuota(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	m := attSeedMessage(t, tn)
	first := attUpload(t, tn.AgentToken, m.MessageID, "first.bin", "", attRandom(t, 20<<20))
	r := attPost(t, tn.AgentToken, m.MessageID, attFilePart("second.bin", "", attRandom(t, 7<<20)))
	wantStatus(t, r, http.StatusRequestEntityTooLarge, nil)
	var p struct {
		Type   string `json:"type"`
		Detail string `json:"detail"`
		Quota  *struct {
			Used  int64 `json:"used"`
			Limit int64 `json:"limit"`
			Size  int64 `json:"size"`
		} `json:"quota"`
	}
	r.JSON(t, &p)
	// The request's size (the file and its multipart framing) is checked
	// before a byte is stored.
	if p.Quota == nil || p.Quota.Used != 20<<20 || p.Quota.Limit != attQuota || p.Quota.Size < 7<<20 || p.Quota.Size > 7<<20+1024 ||
		!strings.Contains(p.Detail, "quota") {
		t.Fatalf("problem %s", r.String())
	}
	var list []attBody
	wantStatus(t, client(t).Do(http.MethodGet, attPath(m.MessageID), tn.AgentToken, nil), http.StatusOK, &list)
	if len(list) != 1 || list[0].TicketMessageAttachmentID != first.TicketMessageAttachmentID {
		t.Fatalf("attachments after the refusal: %+v", list)
	}
	// Another customer has its own quota.
	other := newTenant(t)
	om := attSeedMessage(t, other)
	attUpload(t, other.AgentToken, om.MessageID, "other.bin", "", attRandom(t, 7<<20))
	// Deleting frees the room.
	wantStatus(t, client(t).Do(http.MethodDelete, fmt.Sprintf("%s/%d", attPath(m.MessageID), first.TicketMessageAttachmentID),
		tn.AgentToken, nil), http.StatusNoContent, nil)
	attUpload(t, tn.AgentToken, m.MessageID, "second.bin", "", attRandom(t, 7<<20))
}
