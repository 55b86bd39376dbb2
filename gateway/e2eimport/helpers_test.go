package e2eimport

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

type tenant = e2ekit.Tenant

func newTenant(t *testing.T) tenant { t.Helper(); return e2ekit.NewTenant(t, stk, client(t), "Import") }

func client(t testing.TB) *e2ekit.Client {
	return e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
}

func wantStatus(t testing.TB, r *e2ekit.Response, want int, v any) {
	t.Helper()
	e2ekit.WantStatus(t, r, want, v)
}

type ticketBody struct {
	TicketID    int64    `json:"ticketID"`
	Subject     string   `json:"subject"`
	Status      string   `json:"status"`
	IsClosed    bool     `json:"isClosed"`
	ChannelID   int64    `json:"channelID"`
	EndUserID   int64    `json:"endUserID"`
	Topics      []string `json:"topics"`
	DateCreated string   `json:"dateCreated"`
}

type addressBody struct {
	Name    string `json:"name"`
	Address string `json:"address"`
}

type messageBody struct {
	MessageID   int64  `json:"messageID"`
	TicketID    int64  `json:"ticketID"`
	SenderType  string `json:"senderType"`
	Message     string `json:"message"`
	Attachments int    `json:"attachments"`
	Mail        *struct {
		From              addressBody   `json:"from"`
		To                []addressBody `json:"to"`
		Cc                []addressBody `json:"cc"`
		Subject           string        `json:"subject"`
		InternetMessageID string        `json:"internetMessageID"`
		ReceivedAt        string        `json:"receivedAt"`
		HTML              string        `json:"html"`
		Truncated         bool          `json:"truncated"`
	} `json:"mail"`
	Delivery *struct {
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
		Error    string `json:"error"`
	} `json:"delivery"`
}

type attachmentBody struct {
	ID          int64  `json:"ticketMessageAttachmentID"`
	FileName    string `json:"fileName"`
	ContentType string `json:"contentType"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
}

type endUserBody struct {
	EndUserID int64  `json:"endUserID"`
	Name      string `json:"name"`
	Email     string `json:"email"`
}

// mailChannel is a subscribed e-mail channel of a tenant: its inbox has its
// Graph subscription.
type mailChannel struct {
	tn      tenant
	channel e2ekit.Channel
	folder  e2ekit.Folder
	mailbox string
}

func newMailChannel(t *testing.T) mailChannel {
	t.Helper()
	tn := newTenant(t)
	ch, f := e2ekit.SubscribedFolder(t, client(t), graph, tn)
	return mailChannel{tn: tn, channel: ch, folder: f, mailbox: *ch.EmailAddress}
}

// sender is a fresh end-user address.
func sender(name string) graphfake.Address {
	return graphfake.Address{Name: name, Address: "user-" + randid.Hex(5) + "@customer.example"}
}

// deliver puts a mail into the channel's inbox in the fake Graph, which
// notifies the subscription through the gateway, and returns its id.
func (mc mailChannel) deliver(t testing.TB, d graphfake.DeliverMail) string {
	t.Helper()
	d.Mailbox = mc.mailbox
	id, err := graph.Deliver(t.Context(), d)
	if err != nil {
		t.Fatalf("deliver: %v", err)
	}
	return id
}

// tickets lists the channel's tickets (up to 100, newest first).
func (mc mailChannel) tickets(t testing.TB) e2ekit.List[ticketBody] {
	t.Helper()
	var l e2ekit.List[ticketBody]
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/Tickets?channelId=%d&pageSize=100", mc.channel.ChannelID), mc.tn.AgentToken, nil), http.StatusOK, &l)
	return l
}

// waitTicket waits until the channel has a ticket with subject.
func (mc mailChannel) waitTicket(t testing.TB, subject string) ticketBody {
	t.Helper()
	var found ticketBody
	e2ekit.Eventually(t, 15*time.Second, "a ticket "+subject, func() bool {
		for _, tk := range mc.tickets(t).Items {
			if tk.Subject == subject {
				found = tk
				return true
			}
		}
		return false
	})
	return found
}

func (mc mailChannel) ticket(t testing.TB, id int64) ticketBody {
	t.Helper()
	var tk ticketBody
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/Tickets/%d", id), mc.tn.AgentToken, nil), http.StatusOK, &tk)
	return tk
}

func (mc mailChannel) messages(t testing.TB, ticketID int64) []messageBody {
	t.Helper()
	var l e2ekit.List[messageBody]
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/TicketMessages?ticketId=%d&pageSize=100", ticketID), mc.tn.AgentToken, nil), http.StatusOK, &l)
	return l.Items
}

// waitMessages waits until the ticket has n messages and returns them.
func (mc mailChannel) waitMessages(t testing.TB, ticketID int64, n int) []messageBody {
	t.Helper()
	var ms []messageBody
	e2ekit.Eventually(t, 15*time.Second, fmt.Sprintf("%d messages in ticket %d", n, ticketID), func() bool {
		ms = mc.messages(t, ticketID)
		return len(ms) >= n
	})
	if len(ms) != n {
		t.Fatalf("%d messages, want %d: %+v", len(ms), n, ms)
	}
	return ms
}

func (mc mailChannel) attachments(t testing.TB, messageID int64) []attachmentBody {
	t.Helper()
	var l []attachmentBody
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/TicketMessages/%d/attachments", messageID), mc.tn.AgentToken, nil), http.StatusOK, &l)
	return l
}

// download returns an attachment's bytes and Content-Type.
func (mc mailChannel) download(t testing.TB, messageID, attachmentID int64) ([]byte, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		fmt.Sprintf("%s/api/TicketMessages/%d/attachments/%d", stk.HTTPSURL, messageID, attachmentID), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+mc.tn.AgentToken)
	resp, err := stk.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("download: %d %v", resp.StatusCode, err)
	}
	return data, resp.Header.Get("Content-Type")
}

func (mc mailChannel) endUser(t testing.TB, id int64) endUserBody {
	t.Helper()
	var u endUserBody
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/EndUsers/%d", id), mc.tn.AgentToken, nil), http.StatusOK, &u)
	return u
}

// endUsersByEmail lists the tenant's end users with an address.
func (mc mailChannel) endUsersByEmail(t testing.TB, email string) []endUserBody {
	t.Helper()
	var l e2ekit.List[endUserBody]
	wantStatus(t, client(t).Do(http.MethodGet, "/api/EndUsers?email="+url.QueryEscape(email), mc.tn.AgentToken, nil), http.StatusOK, &l)
	return l.Items
}

// sentTo returns what the fake Graph sent from mailbox.
func sentFrom(mailbox string) []graphfake.SentMail {
	var out []graphfake.SentMail
	for _, s := range graph.Sent() {
		if s.Mailbox == mailbox {
			out = append(out, s)
		}
	}
	return out
}
