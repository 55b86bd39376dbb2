package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/httpcrud"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Messages is what the TicketMessages API calls of the domain.
type Messages interface {
	ListMessages(ctx context.Context, customerID, ticketID int64, p paging.Page) ([]tickets.Message, int, error)
	Message(ctx context.Context, customerID, id int64) (tickets.Message, error)
	CreateMessage(ctx context.Context, customerID, accountID int64, in tickets.CreateMessageInput) (tickets.Message, error)
	PatchMessage(ctx context.Context, customerID, id int64, p tickets.MessagePatch) error
	DeleteMessage(ctx context.Context, customerID, id int64) error
	SetTopics(ctx context.Context, customerID, id int64, topicIDs []int64) error
	SendReply(ctx context.Context, customerID, accountID, id int64, modifiedAnswer *string) (tickets.Message, error)
	Escalate(ctx context.Context, customerID, id int64, comment, email string) error
	DetectTopics(ctx context.Context, customerID, id int64) error
	PromptDocuments(ctx context.Context, customerID, id int64) (tickets.PromptDocumentsResult, error)
}

type messageTopicResponse struct {
	TicketMessageTopicID int64  `json:"ticketMessageTopicID"`
	TopicID              int64  `json:"topicID"`
	TopicName            string `json:"topicName"`
}

type aiReplyResponse struct {
	Text        *string    `json:"text"`
	Status      string     `json:"status"`
	DateCreated *time.Time `json:"dateCreated"`
	// Engine and Model name what prepared the reply; null when the
	// assistant did not (no reply, or one an agent wrote).
	Engine *string `json:"engine"`
	Model  *string `json:"model"`
}

type messageResponse struct {
	MessageID        int64                  `json:"messageID"`
	TicketID         int64                  `json:"ticketID"`
	DateCreated      time.Time              `json:"dateCreated"`
	DateUpdated      time.Time              `json:"dateUpdated"`
	SenderType       string                 `json:"senderType"`
	SenderAccountID  *int64                 `json:"senderAccountID"`
	Message          string                 `json:"message"`
	Topics           []messageTopicResponse `json:"topics"`
	TopicsSource     *string                `json:"topicsSource"`
	AIReply          aiReplyResponse        `json:"aiReply"`
	CustomFieldsData json.RawMessage        `json:"customFieldsData"`
	IsEscalated      bool                   `json:"isEscalated"`
	Attachments      int                    `json:"attachments"`
	Mail             *mailResponse          `json:"mail"`
	Delivery         *deliveryResponse      `json:"delivery"`
}

type mailAddressResponse struct {
	Name    string `json:"name"`
	Address string `json:"address"`
}

type skippedAttachmentResponse struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Reason string `json:"reason"`
}

// mailResponse is the mail a message was made from.
type mailResponse struct {
	From               mailAddressResponse         `json:"from"`
	To                 []mailAddressResponse       `json:"to"`
	Cc                 []mailAddressResponse       `json:"cc"`
	Subject            string                      `json:"subject"`
	InternetMessageID  string                      `json:"internetMessageID"`
	ReceivedAt         *time.Time                  `json:"receivedAt"`
	HTML               string                      `json:"html"`
	Truncated          bool                        `json:"truncated"`
	SkippedAttachments []skippedAttachmentResponse `json:"skippedAttachments"`
}

// deliveryResponse is an agent reply's delivery by mail.
type deliveryResponse struct {
	Status      string    `json:"status"`
	Attempts    int       `json:"attempts"`
	Error       *string   `json:"error"`
	DateUpdated time.Time `json:"dateUpdated"`
}

func toMail(f *tickets.MailFacts) *mailResponse {
	if f == nil {
		return nil
	}
	addresses := func(in []contracts.MailAddress) []mailAddressResponse {
		out := make([]mailAddressResponse, len(in))
		for i, a := range in {
			out[i] = mailAddressResponse{Name: a.Name, Address: a.Address}
		}
		return out
	}
	skipped := make([]skippedAttachmentResponse, len(f.Skipped))
	for i, a := range f.Skipped {
		skipped[i] = skippedAttachmentResponse{Name: a.Name, Size: a.Size, Reason: a.Reason}
	}
	r := &mailResponse{From: mailAddressResponse{Name: f.From.Name, Address: f.From.Address}, To: addresses(f.To), Cc: addresses(f.Cc),
		Subject: f.Subject, InternetMessageID: f.InternetMessageID, HTML: f.HTML, Truncated: f.Truncated, SkippedAttachments: skipped}
	if !f.ReceivedAt.IsZero() {
		at := f.ReceivedAt.UTC()
		r.ReceivedAt = &at
	}
	return r
}

func toDelivery(d *tickets.Delivery) *deliveryResponse {
	if d == nil {
		return nil
	}
	return &deliveryResponse{Status: d.Status, Attempts: d.Attempts, Error: optional(d.Error), DateUpdated: d.UpdatedAt.UTC()}
}

func toMessage(m tickets.Message) messageResponse {
	fields := m.CustomFields
	if len(fields) == 0 {
		fields = json.RawMessage(`{}`)
	}
	topics := make([]messageTopicResponse, len(m.Topics))
	for i, t := range m.Topics {
		topics[i] = messageTopicResponse{TicketMessageTopicID: t.ID, TopicID: t.TopicID, TopicName: t.TopicName}
	}
	reply := aiReplyResponse{Text: optional(m.AIReply.Text), Status: string(m.AIReply.Status)}
	if reply.Status == "" {
		reply.Status = string(tickets.AIReplyNone)
	}
	if m.AIReply.CreatedAt != nil {
		at := m.AIReply.CreatedAt.UTC()
		reply.DateCreated = &at
	}
	if p := m.AIReply.Provenance; p != nil {
		engine, model := p.Engine, p.Model
		reply.Engine, reply.Model = &engine, &model
	}
	return messageResponse{MessageID: m.ID, TicketID: m.TicketID, DateCreated: m.CreatedAt.UTC(), DateUpdated: m.UpdatedAt.UTC(),
		SenderType: string(m.SenderType), SenderAccountID: m.SenderAccountID, Message: m.Text, Topics: topics,
		TopicsSource: topicsSource(m), AIReply: reply, CustomFieldsData: fields, IsEscalated: m.IsEscalated, Attachments: m.Attachments,
		Mail: toMail(m.Mail), Delivery: toDelivery(m.Delivery)}
}

// topicsSource is who set the message's topics (manual, auto); nil when
// it has none.
func topicsSource(m tickets.Message) *string {
	if len(m.Topics) == 0 || m.TopicsSource == "" {
		return nil
	}
	s := m.TopicsSource
	return &s
}

// createMessageRequest is POST /api/TicketMessages: ticketID for a
// message into a ticket, the ticket's fields for one that opens a ticket.
type createMessageRequest struct {
	TicketID         *int64          `json:"ticketID"`
	Message          *string         `json:"message"`
	SenderType       *string         `json:"senderType"`
	CustomFieldsData json.RawMessage `json:"customFieldsData"`
	Subject          *string         `json:"subject"`
	ChannelID        *int64          `json:"channelID"`
	EndUserID        *int64          `json:"endUserID"`
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func (r createMessageRequest) Input() tickets.CreateMessageInput {
	in := tickets.CreateMessageInput{
		TicketID: r.TicketID,
		Message: tickets.MessageInput{Text: deref(r.Message), SenderType: deref(r.SenderType),
			CustomFields: r.CustomFieldsData},
		Ticket: tickets.TicketInput{Subject: deref(r.Subject), ChannelID: deref(r.ChannelID), EndUserID: deref(r.EndUserID)},
	}
	for _, f := range []struct {
		name  string
		given bool
	}{{"subject", r.Subject != nil}, {"channelID", r.ChannelID != nil}, {"endUserID", r.EndUserID != nil}} {
		if f.given {
			in.TicketFields = append(in.TicketFields, f.name)
		}
	}
	return in
}

// principal is the caller: its customer scopes everything, its account
// writes Agent messages.
func principal(c *gin.Context) (authn.Principal, error) { return authn.Must(c.Request.Context()) }

func (h *Handlers) listMessages(c *gin.Context) error {
	var ticketID int64
	return httpcrud.ListPage(c, func(q *httpserver.Query) struct{} {
		if id := q.ID("ticketId"); id != nil {
			ticketID = *id
		} else if q.Get("ticketId") == "" {
			q.Invalid("ticketId", "is required")
		}
		return struct{}{}
	}, func(ctx context.Context, cid int64, _ struct{}, p paging.Page) ([]tickets.Message, int, error) {
		return h.Messages.ListMessages(ctx, cid, ticketID, p)
	}, toMessage)
}

func (h *Handlers) getMessage(c *gin.Context) error {
	return httpcrud.GetOne(c, h.Messages.Message, toMessage)
}

func (h *Handlers) createMessage(c *gin.Context) error {
	p, err := principal(c)
	if err != nil {
		return err
	}
	var req createMessageRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	m, err := h.Messages.CreateMessage(c.Request.Context(), p.CustomerID, p.AccountID, req.Input())
	if err != nil {
		return err
	}
	httpcrud.Created(c, "/api/TicketMessages", m.ID, toMessage(m))
	return nil
}

// patchMessage takes a JSON merge patch, labelled
// application/merge-patch+json or application/json.
func (h *Handlers) patchMessage(c *gin.Context) error {
	cid, id, err := httpcrud.CustomerAndID(c)
	if err != nil {
		return err
	}
	var body json.RawMessage
	if err := httpserver.BindJSON(c, &body); err != nil {
		return err
	}
	patch, err := tickets.ParseMessagePatch(body)
	if err != nil {
		return err
	}
	if err := h.Messages.PatchMessage(c.Request.Context(), cid, id, patch); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (h *Handlers) deleteMessage(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.Messages.DeleteMessage)
}

type topicsRequest struct {
	TopicIDs []int64 `json:"topicIds"`
}

func (h *Handlers) setMessageTopics(c *gin.Context) error {
	cid, id, err := httpcrud.CustomerAndID(c)
	if err != nil {
		return err
	}
	var req topicsRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.Messages.SetTopics(c.Request.Context(), cid, id, req.TopicIDs); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

type confirmation struct {
	Message string `json:"message"`
}

type sendReplyRequest struct {
	ModifiedAnswer *string `json:"modifiedAnswer"`
}

// bindOptionalJSON decodes a body that may be left out altogether.
func bindOptionalJSON(c *gin.Context, dst any) error {
	if c.Request.ContentLength == 0 {
		return nil
	}
	return httpserver.BindJSON(c, dst)
}

func (h *Handlers) sendReply(c *gin.Context) error {
	p, err := principal(c)
	if err != nil {
		return err
	}
	id, err := httpserver.PathID(c)
	if err != nil {
		return err
	}
	var req sendReplyRequest
	if err := bindOptionalJSON(c, &req); err != nil {
		return err
	}
	sent, err := h.Messages.SendReply(c.Request.Context(), p.CustomerID, p.AccountID, id, req.ModifiedAnswer)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, confirmation{Message: "The reply was sent as message " + strconv.FormatInt(sent.ID, 10) + "."})
	return nil
}

type escalateRequest struct {
	FeedbackComment *string `json:"feedbackComment"`
	Email           *string `json:"email"`
}

func (h *Handlers) escalateMessage(c *gin.Context) error {
	cid, id, err := httpcrud.CustomerAndID(c)
	if err != nil {
		return err
	}
	var req escalateRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.Messages.Escalate(c.Request.Context(), cid, id, deref(req.FeedbackComment), deref(req.Email)); err != nil {
		return err
	}
	c.JSON(http.StatusOK, confirmation{Message: "The message was escalated."})
	return nil
}

func (h *Handlers) detectTopics(c *gin.Context) error {
	cid, id, err := httpcrud.CustomerAndID(c)
	if err != nil {
		return err
	}
	if err := h.Messages.DetectTopics(c.Request.Context(), cid, id); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

type promptDocumentResponse struct {
	DocumentID int64   `json:"documentID"`
	Title      string  `json:"title"`
	Content    string  `json:"content"`
	Score      float64 `json:"score"`
}

// promptDocumentsResponse: the documents, and what chose them. Source is
// "reply" for the documents the prepared reply was grounded in (stored
// with it), "ranking" for the current ranking of a message without one.
type promptDocumentsResponse struct {
	PromptDocuments []promptDocumentResponse `json:"promptDocuments"`
	Source          string                   `json:"source"`
	Engine          *string                  `json:"engine"`
	Model           *string                  `json:"model"`
}

func (h *Handlers) promptDocuments(c *gin.Context) error {
	cid, id, err := httpcrud.CustomerAndID(c)
	if err != nil {
		return err
	}
	res, err := h.Messages.PromptDocuments(c.Request.Context(), cid, id)
	if err != nil {
		return err
	}
	out := promptDocumentsResponse{PromptDocuments: make([]promptDocumentResponse, len(res.Documents)), Source: "ranking",
		Engine: optional(res.Provenance.Engine), Model: optional(res.Provenance.Model)}
	if res.Stored {
		out.Source = "reply"
	}
	for i, d := range res.Documents {
		out.PromptDocuments[i] = promptDocumentResponse{DocumentID: d.DocumentID, Title: d.Title, Content: d.Content, Score: d.Score}
	}
	c.JSON(http.StatusOK, out)
	return nil
}
