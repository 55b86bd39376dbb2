package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// messageScalarCols are a message's own columns (alias m), named for
// messageRow: the mail a message was made from as one JSON object (null for
// other messages, see mailRow), and its delivery by mail.
const messageScalarCols = `m.message_id, m.customer_id, m.ticket_id, m.sender_type, m.sender_account_id, m.message,
	coalesce(m.ai_reply_text, '') AS ai_reply_text, m.ai_reply_status, m.ai_reply_at, m.ai_reply_engine,
	coalesce(m.ai_reply_model, '') AS ai_reply_model, m.ai_reply_documents,
	m.custom_fields, m.is_escalated, coalesce(m.topics_source, '') AS topics_source, m.created_at, m.updated_at,
	CASE WHEN m.mail_channel_id IS NOT NULL THEN jsonb_build_object('channelID', m.mail_channel_id,
		'providerMessageID', m.provider_message_id, 'internetMessageID', m.internet_message_id,
		'conversationID', m.conversation_id, 'inReplyTo', m.in_reply_to, 'fromName', m.mail_from_name,
		'fromAddress', m.mail_from_address, 'to', m.mail_to, 'cc', m.mail_cc, 'subject', m.mail_subject,
		'receivedAt', m.mail_received_at, 'html', m.body_html, 'truncated', m.mail_truncated,
		'skipped', m.mail_skipped) END AS mail,
	m.delivery_status, m.delivery_attempts, coalesce(m.delivery_error, '') AS delivery_error, m.delivery_updated_at`

// messageCols select a message aliased m, with its topics (by id) and the
// number of its attachments.
const messageCols = messageScalarCols + `,
	coalesce((SELECT jsonb_agg(jsonb_build_object('id', mt.ticket_message_topic_id, 'topicID', mt.topic_id, 'name', n.name)
		ORDER BY mt.ticket_message_topic_id) FROM message_topics mt
		JOIN topic_names n ON n.customer_id = mt.customer_id AND n.topic_id = mt.topic_id
		WHERE mt.message_id = m.message_id), '[]') AS topics,
	(SELECT count(*) FROM attachments a WHERE a.message_id = m.message_id) AS attachments`

// newMessageCols return a message just inserted: it has no topics and no
// attachments yet.
const newMessageCols = messageScalarCols + `, '[]'::jsonb AS topics, 0::bigint AS attachments`

// messageRow is a row of messageCols.
type messageRow struct {
	ID                int64               `db:"message_id"`
	CustomerID        int64               `db:"customer_id"`
	TicketID          int64               `db:"ticket_id"`
	SenderType        string              `db:"sender_type"`
	SenderAccountID   *int64              `db:"sender_account_id"`
	Text              string              `db:"message"`
	AIReplyText       string              `db:"ai_reply_text"`
	AIReplyStatus     string              `db:"ai_reply_status"`
	AIReplyAt         *time.Time          `db:"ai_reply_at"`
	AIReplyEngine     *string             `db:"ai_reply_engine"`
	AIReplyModel      string              `db:"ai_reply_model"`
	AIReplyDocuments  []promptDocumentRow `db:"ai_reply_documents"`
	CustomFields      []byte              `db:"custom_fields"`
	IsEscalated       bool                `db:"is_escalated"`
	TopicsSource      string              `db:"topics_source"`
	CreatedAt         time.Time           `db:"created_at"`
	UpdatedAt         time.Time           `db:"updated_at"`
	Mail              *mailRow            `db:"mail"`
	DeliveryStatus    *string             `db:"delivery_status"`
	DeliveryAttempts  int                 `db:"delivery_attempts"`
	DeliveryError     string              `db:"delivery_error"`
	DeliveryUpdatedAt *time.Time          `db:"delivery_updated_at"`
	Topics            []topicRow          `db:"topics"`
	Attachments       int                 `db:"attachments"`
}

// promptDocumentRow is one of ai_reply_documents.
type promptDocumentRow struct {
	DocumentID int64   `json:"documentID"`
	Title      string  `json:"title"`
	Content    string  `json:"content"`
	Score      float64 `json:"score"`
}

type topicRow struct {
	ID      int64  `json:"id"`
	TopicID int64  `json:"topicID"`
	Name    string `json:"name"`
}

// mailRow is the JSON object messageScalarCols build of a message's mail
// columns.
type mailRow struct {
	ChannelID         int64                       `json:"channelID"`
	ProviderMessageID string                      `json:"providerMessageID"`
	InternetMessageID *string                     `json:"internetMessageID"`
	ConversationID    *string                     `json:"conversationID"`
	InReplyTo         *string                     `json:"inReplyTo"`
	FromName          *string                     `json:"fromName"`
	FromAddress       *string                     `json:"fromAddress"`
	To                []contracts.MailAddress     `json:"to"`
	Cc                []contracts.MailAddress     `json:"cc"`
	Subject           *string                     `json:"subject"`
	ReceivedAt        time.Time                   `json:"receivedAt"`
	HTML              *string                     `json:"html"`
	Truncated         *bool                       `json:"truncated"`
	Skipped           []tickets.SkippedAttachment `json:"skipped"`
}

func (r *mailRow) facts() *tickets.MailFacts {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return &tickets.MailFacts{ChannelID: r.ChannelID, ProviderMessageID: r.ProviderMessageID,
		InternetMessageID: s(r.InternetMessageID), ConversationID: s(r.ConversationID), InReplyTo: s(r.InReplyTo),
		From: contracts.MailAddress{Name: s(r.FromName), Address: s(r.FromAddress)}, To: r.To, Cc: r.Cc,
		Subject: s(r.Subject), ReceivedAt: r.ReceivedAt, HTML: s(r.HTML), Truncated: r.Truncated != nil && *r.Truncated,
		Skipped: r.Skipped}
}

func (r messageRow) message() tickets.Message {
	m := tickets.Message{ID: r.ID, CustomerID: r.CustomerID, TicketID: r.TicketID, SenderType: tickets.SenderType(r.SenderType),
		SenderAccountID: r.SenderAccountID, Text: r.Text, TopicsSource: r.TopicsSource, CustomFields: r.CustomFields,
		IsEscalated: r.IsEscalated, Attachments: r.Attachments, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		AIReply: tickets.AIReply{Text: r.AIReplyText, Status: tickets.AIReplyStatus(r.AIReplyStatus), CreatedAt: r.AIReplyAt}}
	if r.AIReplyEngine != nil {
		m.AIReply.Provenance = &assistant.Provenance{Engine: *r.AIReplyEngine, Model: r.AIReplyModel}
		m.AIReply.Documents = make([]tickets.PromptDocument, len(r.AIReplyDocuments))
		for i, d := range r.AIReplyDocuments {
			m.AIReply.Documents[i] = tickets.PromptDocument{DocumentID: d.DocumentID, Title: d.Title, Content: d.Content, Score: d.Score}
		}
	}
	if r.Mail != nil {
		m.Mail = r.Mail.facts()
	}
	if r.DeliveryStatus != nil {
		m.Delivery = &tickets.Delivery{Status: *r.DeliveryStatus, Attempts: r.DeliveryAttempts, Error: r.DeliveryError}
		if r.DeliveryUpdatedAt != nil {
			m.Delivery.UpdatedAt = *r.DeliveryUpdatedAt
		}
	}
	for _, t := range r.Topics {
		m.Topics = append(m.Topics, tickets.MessageTopic{ID: t.ID, TopicID: t.TopicID, TopicName: t.Name})
	}
	return m
}

// collectMessage reads the one message a query of messageCols returns.
func collectMessage(rows pgx.Rows, err error) (tickets.Message, error) {
	r, err := collectOne[messageRow](rows, err)
	return r.message(), err
}

// Every change of a message locks its ticket first and then the message
// (lockMessage), the order insertMessage and the ticket changes use too, so
// two changes of one ticket never wait on each other in opposite orders.

// ListMessages pages through the messages of one of the customer's
// tickets, oldest first; another customer's ticket is a 404.
func (s *Store) ListMessages(ctx context.Context, customerID, ticketID int64, p paging.Page) ([]tickets.Message, int, error) {
	var exists bool
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tickets WHERE customer_id = $1 AND ticket_id = $2)`,
		customerID, ticketID).Scan(&exists); err != nil {
		return nil, 0, postgres.Error(err, "ticket")
	}
	if !exists {
		return nil, 0, apperr.E(apperr.NotFound, "ticket not found")
	}
	const where = `WHERE m.customer_id = $1 AND m.ticket_id = $2`
	rows, total, err := page[messageRow](ctx, s.db, "message",
		`SELECT count(*) FROM ticket_messages m `+where,
		`SELECT `+messageCols+` FROM ticket_messages m `+where+` ORDER BY m.created_at, m.message_id LIMIT $3 OFFSET $4`,
		p, customerID, ticketID)
	return convert(rows, messageRow.message), total, err
}

// Message returns a message of the customer.
func (s *Store) Message(ctx context.Context, customerID, id int64) (tickets.Message, error) {
	m, err := collectMessage(s.db.Query(ctx, `SELECT `+messageCols+` FROM ticket_messages m
		WHERE m.customer_id = $1 AND m.message_id = $2`, customerID, id))
	return m, postgres.Error(err, "message")
}

// lockMessage locks the ticket of the customer's message, then the
// message, and returns both.
func (s *Store) lockMessage(ctx context.Context, tx pgx.Tx, customerID, id int64) (tickets.Message, tickets.Ticket, error) {
	var ticketID int64
	if err := tx.QueryRow(ctx, `SELECT ticket_id FROM ticket_messages WHERE customer_id = $1 AND message_id = $2`,
		customerID, id).Scan(&ticketID); err != nil {
		return tickets.Message{}, tickets.Ticket{}, postgres.Error(err, "message")
	}
	t, err := s.lockTicket(ctx, tx, customerID, ticketID)
	if apperr.Is(err, apperr.NotFound) {
		// The ticket went between the two statements: so did the message.
		return tickets.Message{}, t, apperr.E(apperr.NotFound, "message not found")
	}
	if err != nil {
		return tickets.Message{}, t, err
	}
	m, err := collectMessage(tx.Query(ctx, `SELECT `+messageCols+` FROM ticket_messages m
		WHERE m.customer_id = $1 AND m.message_id = $2 FOR UPDATE OF m`, customerID, id))
	return m, t, postgres.Error(err, "message")
}

// AddMessage locks one of the customer's tickets, lets add plan the
// message (tickets.AddToTicket: an end-user message reopens it) and writes
// the plan (insertMessage).
func (s *Store) AddMessage(ctx context.Context, customerID, ticketID int64, add func(tickets.Ticket) tickets.MessagePlan) (tickets.Message, error) {
	m, err := s.addMessage(ctx, customerID, ticketID, add)
	if o := postgres.Outage(err); o != nil {
		err = o
	}
	if err != nil {
		return m, postgres.Error(err, "message")
	}
	if s.wake != nil {
		s.wake()
	}
	return m, nil
}

// OpenTicketWithMessage inserts a ticket and its first message, as add
// plans it on the new ticket, in one transaction.
func (s *Store) OpenTicketWithMessage(ctx context.Context, customerID int64, nt tickets.NewTicket, add func(tickets.Ticket) tickets.MessagePlan) (tickets.Message, error) {
	var m tickets.Message
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		t, err := s.insertTicket(ctx, tx, customerID, nt)
		if err != nil {
			return err
		}
		m, _, err = s.insertMessage(ctx, tx, add(t))
		return err
	})
	return m, postgres.Error(err, "message")
}

// PatchMessage locks the customer's message and its ticket, lets change
// compute the message's new fields (tickets.MessagePatch.Apply) and writes
// them with ticket.message.updated; a change that changes nothing writes
// nothing. A new text is indexed again in the change's configuration.
func (s *Store) PatchMessage(ctx context.Context, customerID, id int64, change func(tickets.Message) (tickets.MessageChange, error)) error {
	return postgres.Error(s.inTx(ctx, func(tx pgx.Tx) error {
		m, t, err := s.lockMessage(ctx, tx, customerID, id)
		if err != nil {
			return err
		}
		c, err := change(m)
		if err != nil || !c.Changed {
			return err
		}
		var replyText *string
		if c.AIReplyStatus != tickets.AIReplyNone || c.AIReplyText != "" {
			replyText = &c.AIReplyText
		}
		// The search columns are written again only for a new text; the
		// engine's provenance goes with a reply changed by hand.
		if _, err := tx.Exec(ctx, `UPDATE ticket_messages SET message = $3,
			search_config = CASE WHEN $4 THEN $5::regconfig ELSE search_config END,
			search = CASE WHEN $4 THEN `+searchVector("$5", "$3")+` ELSE search END,
			ai_reply_text = $6, ai_reply_status = $7, ai_reply_at = $8, custom_fields = $9, updated_at = $10,
			ai_reply_engine = CASE WHEN $11 THEN NULL ELSE ai_reply_engine END,
			ai_reply_model = CASE WHEN $11 THEN NULL ELSE ai_reply_model END,
			ai_reply_documents = CASE WHEN $11 THEN NULL ELSE ai_reply_documents END
			WHERE customer_id = $1 AND message_id = $2`,
			customerID, id, c.Text, c.TextChanged, c.SearchConfig, replyText, string(c.AIReplyStatus), c.AIReplyAt,
			[]byte(c.CustomFields), s.now(), c.ReplyByHand); err != nil {
			return err
		}
		return s.addMessageEvent(ctx, tx, contracts.EventMessageUpdated, t, m, c.Language)
	}), "message")
}

// DeleteMessage deletes a message; its topics, votes, escalation comments
// and attachments go with it (the attachments' bytes are queued in
// blob_garbage by the trigger). It writes ticket.message.deleted.
func (s *Store) DeleteMessage(ctx context.Context, customerID, id int64) error {
	return postgres.Error(s.inTx(ctx, func(tx pgx.Tx) error {
		m, t, err := s.lockMessage(ctx, tx, customerID, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM ticket_messages WHERE customer_id = $1 AND message_id = $2`, customerID, id); err != nil {
			return err
		}
		return s.addMessageEvent(ctx, tx, contracts.EventMessageDeleted, t, m, "")
	}), "message")
}

// SendReply locks the customer's message and its ticket, lets decide plan
// the reply (tickets.PlanReply: which text, or a refusal; delivery by mail
// or not) and writes the plan in one transaction: the reply as a new Agent
// message of the ticket (with its pending delivery), the replied message's
// reply sent or modified, keeping the text that was sent, and
// message.reply.sent.
func (s *Store) SendReply(ctx context.Context, customerID, id int64,
	decide func(tickets.Message, tickets.Ticket) (tickets.ReplyPlan, error)) (tickets.Message, error) {
	var sent tickets.Message
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		m, t, err := s.lockMessage(ctx, tx, customerID, id)
		if err != nil {
			return err
		}
		p, err := decide(m, t)
		if err != nil {
			return err
		}
		if sent, t, err = s.insertMessage(ctx, tx, p.Reply); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE ticket_messages SET ai_reply_text = $3, ai_reply_status = $4,
			ai_reply_at = coalesce(ai_reply_at, $5), updated_at = $5, ai_reply_sent_message_id = $6
			WHERE customer_id = $1 AND message_id = $2`,
			customerID, id, p.Text, string(p.Status), s.now(), sent.ID); err != nil {
			return err
		}
		if p.Delivery != nil {
			sent.Delivery = p.Delivery
			if _, err := tx.Exec(ctx, `UPDATE ticket_messages SET delivery_status = $3, delivery_updated_at = $4
				WHERE customer_id = $1 AND message_id = $2`, customerID, sent.ID, sent.Delivery.Status, sent.Delivery.UpdatedAt); err != nil {
				return err
			}
		}
		to, providerID, internetID, err := s.replyMail(ctx, tx, t)
		if err != nil {
			return err
		}
		return s.addEvent(ctx, tx, contracts.EventReplySent, customerID, contracts.ReplySent{
			MessageID: sent.ID, InReplyToID: m.ID, TicketID: t.ID, ChannelID: t.ChannelID, EndUserID: t.EndUserID,
			Text: p.Text, Modified: p.Status == tickets.AIReplyModified, TicketRef: p.TicketRef,
			Subject: t.Subject, To: to, ReplyToProviderID: providerID, ReplyToInternetMessageID: internetID,
		})
	})
	return sent, postgres.Error(err, "message")
}

// EscalateMessage locks the customer's message and its ticket, lets decide
// plan the escalation (tickets.PlanEscalation: the ticket becomes
// Escalated, or a refusal) and writes it: the message escalated, the
// ticket's state (ticket.updated when it moved), the comment among the
// ticket's feedback comments, and message.escalated.
func (s *Store) EscalateMessage(ctx context.Context, customerID, id int64,
	decide func(tickets.Message, tickets.Ticket) (tickets.EscalationPlan, error)) error {
	return postgres.Error(s.inTx(ctx, func(tx pgx.Tx) error {
		m, t, err := s.lockMessage(ctx, tx, customerID, id)
		if err != nil {
			return err
		}
		p, err := decide(m, t)
		if err != nil {
			return err
		}
		now := s.now()
		if _, err := tx.Exec(ctx, `UPDATE ticket_messages SET is_escalated = true, updated_at = $3
			WHERE customer_id = $1 AND message_id = $2`, customerID, id, now); err != nil {
			return err
		}
		if p.Previous != "" {
			t = p.Ticket
			if _, err := tx.Exec(ctx, `UPDATE tickets SET status = $3, updated_at = $4 WHERE customer_id = $1 AND ticket_id = $2`,
				customerID, t.ID, string(t.Status), t.UpdatedAt); err != nil {
				return err
			}
			if err := s.addTicketEvent(ctx, tx, contracts.EventTicketUpdated, t, p.Previous); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO feedback_comments (customer_id, ticket_id, message_id, comment, email, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, customerID, t.ID, m.ID, p.Comment.Comment, p.Comment.Email, now); err != nil {
			return err
		}
		return s.addEvent(ctx, tx, contracts.EventMessageEscalated, customerID, contracts.MessageEscalated{
			MessageID: m.ID, TicketID: t.ID, FeedbackComment: p.Comment.Comment, Email: p.Comment.Email,
		})
	}), "message")
}

// RequestTopicDetection writes ticket.message.topic-detection.requested
// for a message of the customer.
func (s *Store) RequestTopicDetection(ctx context.Context, customerID, id int64) error {
	return postgres.Error(s.inTx(ctx, func(tx pgx.Tx) error {
		var ticketID int64
		if err := tx.QueryRow(ctx, `SELECT ticket_id FROM ticket_messages WHERE customer_id = $1 AND message_id = $2`,
			customerID, id).Scan(&ticketID); err != nil {
			return err
		}
		return s.addEvent(ctx, tx, contracts.EventTopicDetectionRequested, customerID,
			contracts.TopicDetectionRequested{MessageID: id, TicketID: ticketID})
	}), "message")
}
