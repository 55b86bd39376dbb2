package postgres

// The statements every ticket and message change is built from: insert a
// ticket, lock it, insert a message into it (with the ticket change the
// domain decided: tickets.MessagePlan), and the events of both, always in
// the caller's transaction.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// searchVector is the SQL of a text's tsvector: stemmed in the text's
// configuration ($cfg) and exact words ('simple'). cfg and text are
// placeholders such as "$3".
func searchVector(cfg, text string) string {
	return `(to_tsvector(` + cfg + `::regconfig, left(` + text + `, 100000)) || to_tsvector('simple', left(` + text + `, 100000)))`
}

// newToken is a ticket's feedback credential: 256 random bits, URL-safe.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ticketError names the field a ticket's foreign key refused.
func ticketError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" && pe.ConstraintName == "tickets_end_user_fkey" {
		return apperr.Field("endUserID", "is not an end user of yours", "the end user does not exist")
	}
	return postgres.Error(err, "ticket")
}

// insertTicket inserts a ticket and writes ticket.created. Its search
// configuration, which its subject is stemmed in, is in.SearchConfig.
func (s *Store) insertTicket(ctx context.Context, tx pgx.Tx, customerID int64, in tickets.NewTicket) (tickets.Ticket, error) {
	token, err := newToken()
	if err != nil {
		return tickets.Ticket{}, err
	}
	cfg := in.SearchConfig
	now := s.now()
	t, err := collectTicket(tx.Query(ctx, `INSERT INTO tickets AS t (customer_id, channel_id, end_user_id, customer_rep_id,
		subject, status, custom_fields, ticket_token, search, search_config, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, `+searchVector("$9", "$5")+`, $9::regconfig, $10, $10) RETURNING `+ticketWriteCols,
		customerID, in.ChannelID, in.EndUserID, in.CustomerRepID, in.Subject, string(in.Status), []byte(in.CustomFields),
		token, cfg, now))
	if err != nil {
		return t, ticketError(err)
	}
	return t, s.addTicketEvent(ctx, tx, contracts.EventTicketCreated, t, "")
}

// lockTicket reads the customer's ticket and locks it for the transaction.
func (s *Store) lockTicket(ctx context.Context, tx pgx.Tx, customerID, id int64) (tickets.Ticket, error) {
	t, err := collectTicket(tx.Query(ctx, `SELECT `+ticketWriteCols+` FROM tickets t
		WHERE t.customer_id = $1 AND t.ticket_id = $2 FOR UPDATE OF t`, customerID, id))
	return t, postgres.Error(err, "ticket")
}

// insertMessageSQL inserts a message and returns it: $23 is its id when
// the caller took one from the sequence already (AddMessage), else null.
var insertMessageSQL = `INSERT INTO ticket_messages AS m (message_id, customer_id, ticket_id, sender_type,
		sender_account_id, message, search_config, search, custom_fields, created_at, updated_at,
		mail_channel_id, provider_message_id, internet_message_id, conversation_id, in_reply_to, mail_from_name,
		mail_from_address, mail_to, mail_cc, mail_subject, mail_received_at, body_html, mail_truncated, mail_skipped)
		VALUES (coalesce($23::bigint, nextval('ticket_messages_message_id_seq')), $1, $2, $3, $4, $5, $6::regconfig, ` + searchVector("$6", "$5") + `, $7, $8, $8,
		$9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22) RETURNING ` + newMessageCols

// insertMessageArgs are insertMessageSQL's values for plan p; id is the
// message's id, or nil.
func insertMessageArgs(p tickets.MessagePlan, id *int64) []any {
	in, t := p.Message, p.Ticket
	args := append([]any{t.CustomerID, t.ID, string(in.SenderType), in.SenderAccountID, in.Text, p.SearchConfig,
		[]byte(in.CustomFields), t.UpdatedAt}, mailArgs(in.Mail)...)
	return append(args, id)
}

// insertMessage writes plan p, which the domain made on a ticket locked by
// the caller (tickets.AddToTicket): the message, indexed in its search
// configuration, and the ticket's state (an end-user message reopens it),
// search configuration and dateUpdated; then ticket.updated when the state
// changed and ticket.message.created. It returns the message and the
// ticket as it is now.
func (s *Store) insertMessage(ctx context.Context, tx pgx.Tx, p tickets.MessagePlan) (tickets.Message, tickets.Ticket, error) {
	t := p.Ticket
	m, err := collectMessage(tx.Query(ctx, insertMessageSQL, insertMessageArgs(p, nil)...))
	if err != nil {
		return m, t, postgres.Error(err, "message")
	}
	// The rest needs no answers: one round trip (a third of the service's
	// CPU per message went to the syscalls of statement round trips).
	q := &pgx.Batch{}
	if err := s.queueMessageEffects(ctx, q, p, m); err != nil {
		return m, t, err
	}
	return m, t, tx.SendBatch(ctx, q).Close()
}

// queueMessageEffects queues in q what a message m of plan p does besides
// its row: the ticket's state, search configuration and dateUpdated (a HOT
// update: no ticket index holds them, migration 016), ticket.updated when
// the state changed and ticket.message.created.
func (s *Store) queueMessageEffects(ctx context.Context, q *pgx.Batch, p tickets.MessagePlan, m tickets.Message) error {
	t := p.Ticket
	q.Queue(`UPDATE tickets SET status = $3, updated_at = $4, search_config = $5::regconfig
		WHERE customer_id = $1 AND ticket_id = $2`, t.CustomerID, t.ID, string(t.Status), t.UpdatedAt, t.SearchConfig)
	if p.Previous != "" {
		ev, err := s.ticketEvent(ctx, contracts.EventTicketUpdated, t, p.Previous)
		if err != nil {
			return err
		}
		outbox.Queue(ctx, q, ev)
	}
	ev, err := s.messageEvent(ctx, contracts.EventMessageCreated, t, m, p.Language)
	if err != nil {
		return err
	}
	outbox.Queue(ctx, q, ev)
	return nil
}

// addMessage is AddMessage's transaction in two round trips instead of
// five (BEGIN, lock, insert, the ticket's change and events, COMMIT): BEGIN,
// the ticket's lock and the message's id from its sequence in one; the
// message, the ticket's change, the events and COMMIT in the other, since
// the events only need the id. A statement that fails, or a plan that
// refuses, leaves the transaction open or aborted: it is rolled back before
// the connection goes back to the pool.
func (s *Store) addMessage(ctx context.Context, customerID, ticketID int64, add func(tickets.Ticket) tickets.MessagePlan) (m tickets.Message, err error) {
	conn, err := s.db.Acquire(ctx)
	if err != nil {
		return m, err
	}
	defer conn.Release()
	defer func() {
		if conn.Conn().PgConn().TxStatus() != 'I' && !conn.Conn().IsClosed() {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var t tickets.Ticket
	var id int64
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(`SELECT `+ticketWriteCols+` FROM tickets t WHERE t.customer_id = $1 AND t.ticket_id = $2 FOR UPDATE OF t`,
		customerID, ticketID).Query(func(rows pgx.Rows) error {
		var err error
		t, err = collectTicket(rows, nil)
		return postgres.Error(err, "ticket")
	})
	b.Queue(`SELECT nextval('ticket_messages_message_id_seq')`).QueryRow(func(row pgx.Row) error { return row.Scan(&id) })
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return m, err
	}
	p := add(t)
	q := &pgx.Batch{}
	q.Queue(insertMessageSQL, insertMessageArgs(p, &id)...).Query(func(rows pgx.Rows) error {
		var err error
		m, err = collectMessage(rows, nil)
		return err
	})
	if err := s.queueMessageEffects(ctx, q, p, tickets.Message{ID: id, SenderType: p.Message.SenderType}); err != nil {
		return m, err
	}
	q.Queue("COMMIT")
	return m, conn.SendBatch(ctx, q).Close()
}

// mailArgs are the values of a message's mail columns ($9 to $22 of
// insertMessage): all null for a message not made from a mail.
func mailArgs(f *tickets.MailFacts) []any {
	if f == nil {
		return make([]any, 14)
	}
	addresses := func(a []contracts.MailAddress) []byte {
		if a == nil {
			a = []contracts.MailAddress{}
		}
		b, _ := json.Marshal(a)
		return b
	}
	skipped := f.Skipped
	if skipped == nil {
		skipped = []tickets.SkippedAttachment{}
	}
	skippedJSON, _ := json.Marshal(skipped)
	var receivedAt *time.Time
	if !f.ReceivedAt.IsZero() {
		receivedAt = &f.ReceivedAt
	}
	return []any{f.ChannelID, f.ProviderMessageID, nullText(f.InternetMessageID), nullText(f.ConversationID),
		nullText(f.InReplyTo), f.From.Name, f.From.Address, addresses(f.To), addresses(f.Cc), f.Subject,
		receivedAt, f.HTML, f.Truncated, skippedJSON}
}

// ticketEvent is a ticket event; prev is the state before a change of
// state ("" otherwise).
func (s *Store) ticketEvent(ctx context.Context, eventType string, t tickets.Ticket, prev tickets.Status) (outbox.Message, error) {
	return outbox.Event(ctx, eventType, t.CustomerID, s.now(), contracts.TicketChanged{
		TicketID: t.ID, ChannelID: t.ChannelID, EndUserID: t.EndUserID, CustomerRepID: t.CustomerRepID,
		Subject: t.Subject, Status: string(t.Status), PreviousStatus: string(prev), IsClosed: t.IsClosed(),
	})
}

// addTicketEvent writes a ticket event (ticketEvent).
func (s *Store) addTicketEvent(ctx context.Context, tx pgx.Tx, eventType string, t tickets.Ticket, prev tickets.Status) error {
	m, err := s.ticketEvent(ctx, eventType, t, prev)
	if err != nil {
		return err
	}
	return outbox.Add(ctx, tx, m)
}

// messageEvent is a ticket.message.* event.
func (s *Store) messageEvent(ctx context.Context, eventType string, t tickets.Ticket, m tickets.Message, lang string) (outbox.Message, error) {
	return outbox.Event(ctx, eventType, t.CustomerID, s.now(), contracts.MessageChanged{
		MessageID: m.ID, TicketID: t.ID, ChannelID: t.ChannelID, EndUserID: t.EndUserID,
		SenderType: string(m.SenderType), Language: lang,
	})
}

// addMessageEvent writes a ticket.message.* event (messageEvent).
func (s *Store) addMessageEvent(ctx context.Context, tx pgx.Tx, eventType string, t tickets.Ticket, m tickets.Message, lang string) error {
	ev, err := s.messageEvent(ctx, eventType, t, m, lang)
	if err != nil {
		return err
	}
	return outbox.Add(ctx, tx, ev)
}

// addEvent writes one event of the customer to the outbox.
func (s *Store) addEvent(ctx context.Context, tx pgx.Tx, eventType string, customerID int64, data any) error {
	m, err := outbox.Event(ctx, eventType, customerID, s.now(), data)
	if err != nil {
		return err
	}
	return outbox.Add(ctx, tx, m)
}
