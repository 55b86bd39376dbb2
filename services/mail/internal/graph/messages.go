package graph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The $select of each read: only what the import needs, so that pages stay small.
const (
	deltaSelect   = "id,receivedDateTime,from,subject,isDraft"
	messageSelect = "id,receivedDateTime,subject,from,sender,toRecipients,ccRecipients,replyTo,internetMessageId,conversationId,internetMessageHeaders,body,hasAttachments"
	// contentId is a property of fileAttachment only: Graph refuses it uncast on the attachment
	// collection (400 "Could not find a property named 'contentId' on type
	// 'microsoft.graph.attachment'"), so it is selected with the derived type's cast, which
	// item and reference attachments simply do not carry.
	attachmentSelect = "id,name,contentType,size,isInline,microsoft.graph.fileAttachment/contentId"
)

// preferText asks Graph for a message body converted to plain text.
const preferText = `outlook.body-content-type="text"`

type emailAddressJSON struct {
	Name    string `json:"name"`
	Address string `json:"address"`
}

type recipientJSON struct {
	EmailAddress emailAddressJSON `json:"emailAddress"`
}

func (r *recipientJSON) address() Address {
	if r == nil {
		return Address{}
	}
	return Address{Name: r.EmailAddress.Name, Address: r.EmailAddress.Address}
}

func addresses(rs []recipientJSON) []Address {
	if len(rs) == 0 {
		return nil
	}
	out := make([]Address, len(rs))
	for i := range rs {
		out[i] = rs[i].address()
	}
	return out
}

func recipients(as []Address) []recipientJSON {
	out := make([]recipientJSON, len(as))
	for i, a := range as {
		out[i] = recipientJSON{EmailAddress: emailAddressJSON(a)}
	}
	return out
}

type bodyJSON struct {
	ContentType string `json:"contentType"`
	Content     string `json:"content"`
}

type headerJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// messageJSON is Graph's message resource, as far as the mail service reads it.
type messageJSON struct {
	ID                     string          `json:"id"`
	Removed                *struct{}       `json:"@removed"`
	ReceivedDateTime       string          `json:"receivedDateTime"`
	Subject                string          `json:"subject"`
	From                   *recipientJSON  `json:"from"`
	Sender                 *recipientJSON  `json:"sender"`
	ToRecipients           []recipientJSON `json:"toRecipients"`
	CcRecipients           []recipientJSON `json:"ccRecipients"`
	ReplyTo                []recipientJSON `json:"replyTo"`
	InternetMessageID      string          `json:"internetMessageId"`
	ConversationID         string          `json:"conversationId"`
	InternetMessageHeaders []headerJSON    `json:"internetMessageHeaders"`
	Body                   *bodyJSON       `json:"body"`
	HasAttachments         bool            `json:"hasAttachments"`
	IsDraft                bool            `json:"isDraft"`
}

func parseGraphTime(raw string) (time.Time, error) {
	if raw == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// queryEscape escapes a query value with %20 for spaces, as Graph's own links do.
func queryEscape(v string) string { return strings.ReplaceAll(url.QueryEscape(v), "+", "%20") }

func (c *Client) userURL(mailbox string) string {
	return c.baseURL + "/users/" + url.PathEscape(mailbox)
}

// MessagesDelta reads one page of a delta round over q's folder. With link == "" it starts a round
// ($select of what the import needs; q.Since, when set, limits it to mail received since); else it
// follows link, a NextLink or DeltaLink Graph returned earlier, which must point at the configured
// Graph (the token is never sent elsewhere). q.Mailbox is needed either way: it keys the mailbox's
// concurrency limit. A sync state Graph no longer knows is an error wrapping ErrSyncStateNotFound:
// start a new round without link.
func (c *Client) MessagesDelta(ctx context.Context, tenant string, q DeltaQuery, link string) (DeltaPage, error) {
	const op = "messages delta"
	rawURL := link
	if link == "" {
		if q.FolderID == "" {
			return DeltaPage{}, fmt.Errorf("graph: %s: %w: no folder id", op, ErrInvalid)
		}
		rawURL = c.userURL(q.Mailbox) + "/mailFolders/" + url.PathEscape(q.FolderID) + "/messages/delta?$select=" + deltaSelect
		if !q.Since.IsZero() {
			rawURL += "&$filter=" + queryEscape("receivedDateTime ge "+q.Since.UTC().Format(time.RFC3339))
		}
	} else if !c.sameOrigin(link) {
		return DeltaPage{}, fmt.Errorf("graph: %s: %w: link %q leaves %s; not followed", op, ErrInvalid, link, c.base.Host)
	}
	rq := mailRequest{op: op, method: http.MethodGet, url: rawURL, mailbox: q.Mailbox}
	if q.PageSize > 0 {
		rq.prefer = []string{"odata.maxpagesize=" + strconv.Itoa(q.PageSize)}
	}
	var reply struct {
		Value     []messageJSON `json:"value"`
		NextLink  string        `json:"@odata.nextLink"`
		DeltaLink string        `json:"@odata.deltaLink"`
	}
	if err := c.mailJSON(ctx, tenant, rq, &reply); err != nil {
		if syncStateLost(err) {
			return DeltaPage{}, fmt.Errorf("%w: %w", ErrSyncStateNotFound, err)
		}
		return DeltaPage{}, err
	}
	page := DeltaPage{NextLink: reply.NextLink, DeltaLink: reply.DeltaLink, Messages: make([]MessageChange, 0, len(reply.Value))}
	if (page.NextLink == "") == (page.DeltaLink == "") {
		return DeltaPage{}, fmt.Errorf("graph: %s: malformed reply: a page needs exactly one of @odata.nextLink and @odata.deltaLink", op)
	}
	for _, l := range []string{page.NextLink, page.DeltaLink} {
		if l != "" && !c.sameOrigin(l) {
			return DeltaPage{}, fmt.Errorf("graph: %s: link %q leaves %s; not followed", op, l, c.base.Host)
		}
	}
	for _, m := range reply.Value {
		if m.ID == "" {
			return DeltaPage{}, fmt.Errorf("graph: %s: malformed reply: a message without id", op)
		}
		if m.Removed != nil {
			page.Messages = append(page.Messages, MessageChange{ID: m.ID, Removed: true})
			continue
		}
		received, err := parseGraphTime(m.ReceivedDateTime)
		if err != nil {
			return DeltaPage{}, fmt.Errorf("graph: %s: %w: message %s: receivedDateTime: %w", op, ErrMalformedReply, m.ID, err)
		}
		page.Messages = append(page.Messages, MessageChange{ID: m.ID, ReceivedDateTime: received,
			From: m.From.address(), Subject: m.Subject, IsDraft: m.IsDraft})
	}
	return page, nil
}

// syncStateLost reports whether Graph no longer knows a delta link's state.
func syncStateLost(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Status == http.StatusGone || strings.EqualFold(e.Code, "syncStateNotFound") || strings.EqualFold(e.Code, "resyncRequired")
}

func (c *Client) messageURL(mailbox, id string) string {
	return c.userURL(mailbox) + "/messages/" + url.PathEscape(id)
}

// Message reads what a ticket needs of one mail. BodyText is always set: Graph converts an HTML
// body to text on a second request.
func (c *Client) Message(ctx context.Context, tenant, mailbox, id string) (Message, error) {
	const op = "get message"
	if id == "" {
		return Message{}, fmt.Errorf("graph: %s: %w: no message id", op, ErrInvalid)
	}
	var j messageJSON
	rq := mailRequest{op: op, method: http.MethodGet, url: c.messageURL(mailbox, id) + "?$select=" + messageSelect, mailbox: mailbox}
	if err := c.mailJSON(ctx, tenant, rq, &j); err != nil {
		return Message{}, err
	}
	received, err := parseGraphTime(j.ReceivedDateTime)
	if err != nil {
		return Message{}, fmt.Errorf("graph: %s: %w: receivedDateTime: %w", op, ErrMalformedReply, err)
	}
	m := Message{
		ID:                j.ID,
		ReceivedDateTime:  received,
		Subject:           j.Subject,
		From:              j.From.address(),
		Sender:            j.Sender.address(),
		To:                addresses(j.ToRecipients),
		Cc:                addresses(j.CcRecipients),
		ReplyTo:           addresses(j.ReplyTo),
		InternetMessageID: j.InternetMessageID,
		ConversationID:    j.ConversationID,
		Headers:           map[string]string{},
		HasAttachments:    j.HasAttachments,
	}
	if m.ID == "" {
		m.ID = id
	}
	for _, h := range j.InternetMessageHeaders {
		name := textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(h.Name))
		if _, seen := m.Headers[name]; !seen && name != "" {
			m.Headers[name] = h.Value
		}
	}
	if ids := messageIDs(m.Headers["In-Reply-To"]); len(ids) > 0 {
		m.InReplyTo = ids[0]
	} else {
		m.InReplyTo = strings.TrimSpace(m.Headers["In-Reply-To"])
	}
	m.References = messageIDs(m.Headers["References"])

	if j.Body == nil || !strings.EqualFold(j.Body.ContentType, "html") {
		if j.Body != nil {
			m.BodyText = j.Body.Content
		}
		return m, nil
	}
	m.BodyHTML = j.Body.Content
	var text messageJSON
	rq = mailRequest{op: op + " text", method: http.MethodGet, url: c.messageURL(mailbox, id) + "?$select=body",
		mailbox: mailbox, prefer: []string{preferText}}
	if err := c.mailJSON(ctx, tenant, rq, &text); err != nil {
		return Message{}, err
	}
	if text.Body != nil {
		m.BodyText = text.Body.Content
	}
	return m, nil
}

// messageIDs returns the <...> message ids of an In-Reply-To or References header, in order,
// whether whitespace separates them or not.
func messageIDs(v string) []string {
	var ids []string
	for _, field := range strings.Fields(v) {
		for {
			start := strings.IndexByte(field, '<')
			if start < 0 {
				break
			}
			end := strings.IndexByte(field[start:], '>')
			if end < 0 {
				break
			}
			if end > 1 {
				ids = append(ids, field[start:start+end+1])
			}
			field = field[start+end+1:]
		}
	}
	return ids
}

type attachmentJSON struct {
	ODataType   string `json:"@odata.type"`
	ID          string `json:"id"`
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Size        int64  `json:"size"`
	IsInline    bool   `json:"isInline"`
	ContentID   string `json:"contentId"`
}

// attachmentKind turns "#microsoft.graph.fileAttachment" into AttachmentFile.
func attachmentKind(odataType string) string {
	kind := strings.TrimPrefix(odataType, "#")
	if i := strings.LastIndexByte(kind, '.'); i >= 0 {
		kind = kind[i+1:]
	}
	for _, k := range []string{AttachmentFile, AttachmentItem, AttachmentReference} {
		if strings.EqualFold(kind, k) {
			return k
		}
	}
	return kind
}

// Attachments lists a message's attachments without their bytes (see AttachmentContent),
// following every @odata.nextLink.
func (c *Client) Attachments(ctx context.Context, tenant, mailbox, messageID string) ([]Attachment, error) {
	const op = "list attachments"
	if messageID == "" {
		return nil, fmt.Errorf("graph: %s: %w: no message id", op, ErrInvalid)
	}
	var all []Attachment
	next := c.messageURL(mailbox, messageID) + "/attachments?$select=" + attachmentSelect
	seen := map[string]bool{}
	for page := 0; next != ""; page++ {
		if page == maxListPages || seen[next] {
			return nil, fmt.Errorf("graph: %s: the server's @odata.nextLink does not end", op)
		}
		seen[next] = true
		var reply struct {
			Value    []attachmentJSON `json:"value"`
			NextLink string           `json:"@odata.nextLink"`
		}
		if err := c.mailJSON(ctx, tenant, mailRequest{op: op, method: http.MethodGet, url: next, mailbox: mailbox}, &reply); err != nil {
			return nil, err
		}
		for _, a := range reply.Value {
			all = append(all, Attachment{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Kind: attachmentKind(a.ODataType),
				Size: a.Size, IsInline: a.IsInline, ContentID: a.ContentID})
		}
		if reply.NextLink != "" && !c.sameOrigin(reply.NextLink) {
			return nil, fmt.Errorf("graph: %s: @odata.nextLink %q leaves %s; not followed", op, reply.NextLink, c.base.Host)
		}
		next = reply.NextLink
	}
	return all, nil
}

// AttachmentContent streams an attachment's raw bytes ($value). The caller reads as much as it
// accepts and must Close the reader: until then the download holds one of the mailbox's slots.
func (c *Client) AttachmentContent(ctx context.Context, tenant, mailbox, messageID, attachmentID string) (io.ReadCloser, error) {
	const op = "get attachment content"
	if messageID == "" || attachmentID == "" {
		return nil, fmt.Errorf("graph: %s: %w: message and attachment ids are required", op, ErrInvalid)
	}
	rq := mailRequest{op: op, method: http.MethodGet, mailbox: mailbox, accept: "*/*",
		url: c.messageURL(mailbox, messageID) + "/attachments/" + url.PathEscape(attachmentID) + "/$value"}
	resp, release, err := c.mailDo(ctx, tenant, rq)
	if err != nil {
		return nil, err
	}
	return &releaseOnClose{ReadCloser: resp.Body, release: release}, nil
}
