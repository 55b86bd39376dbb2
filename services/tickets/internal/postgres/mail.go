package postgres

// Mail into tickets: an imported mail becomes an end-user message of the
// ticket it answers, or opens one, through the same insert paths as the
// API (kernel.go); and the delivery state of agent replies sent by mail.

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// mailKey is the unique index of messages made from mail.
const mailKey = "ticket_messages_mail_key"

// ImportedMail returns the message already made from the customer's mail
// (channel, provider message id), if there is one.
func (s *Store) ImportedMail(ctx context.Context, customerID, channelID int64, providerMessageID string) (tickets.MailImported, bool, error) {
	return importedMail(ctx, s.db, customerID, channelID, providerMessageID)
}

func importedMail(ctx context.Context, q postgres.Querier, customerID, channelID int64, providerMessageID string) (tickets.MailImported, bool, error) {
	out := tickets.MailImported{Outcome: tickets.MailDuplicate}
	err := q.QueryRow(ctx, `SELECT ticket_id, message_id FROM ticket_messages
		WHERE customer_id = $1 AND mail_channel_id = $2 AND provider_message_id = $3`,
		customerID, channelID, providerMessageID).Scan(&out.TicketID, &out.MessageID)
	if errors.Is(err, pgx.ErrNoRows) {
		return tickets.MailImported{}, false, nil
	}
	if err != nil {
		return tickets.MailImported{}, false, postgres.Error(err, "message")
	}
	return out, true, nil
}

// threadLock is the advisory lock key of the mail's thread: mails of one
// conversation (or, without a conversation id, the same mail delivered
// twice) are threaded one after the other, so two mails of a new thread
// never open two tickets.
func threadLock(in tickets.MailImport) string {
	key := "tickets.mail:" + strconv.FormatInt(in.CustomerID, 10) + ":" + strconv.FormatInt(in.Mail.ChannelID, 10) + ":"
	if in.Mail.ConversationID != "" {
		return key + "c:" + in.Mail.ConversationID
	}
	return key + "m:" + in.Mail.ProviderMessageID
}

// ImportMail turns a prepared mail into an end-user message, in one
// transaction, as d decides (tickets.ImportDecisions): under the thread's advisory
// lock it loads the message made earlier from the mail (a duplicate:
// nothing written) or else finds or creates the sender as an end user
// (end-user.created) and loads the tickets the threading rules find
// (mailThread), on which d.Plan decides; then it opens the ticket of the
// plan (ticket.created) or joins the one it names, inserts the message as
// d.Add plans it (ticket.message.created; ticket.updated when it reopens
// the ticket) and stores its attachments' metadata, taking their keys off
// the garbage list, if d.Fits accepts them. A concurrent import of the
// same mail that commits first makes this one a duplicate too.
func (s *Store) ImportMail(ctx context.Context, in tickets.MailImport, d tickets.MailDecisions) (tickets.MailImported, error) {
	var out tickets.MailImported
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, threadLock(in)); err != nil {
			return err
		}
		var th tickets.MailThread
		earlier, dup, err := importedMail(ctx, tx, in.CustomerID, in.Mail.ChannelID, in.Mail.ProviderMessageID)
		if err != nil {
			return err
		}
		var u tickets.EndUser
		if dup {
			// Nothing else counts for a duplicate.
			th.Earlier = &earlier
		} else {
			// The sender before the tickets: imports that create the same end
			// user queue on its row before either locks a ticket.
			if u, err = s.mailEndUser(ctx, tx, in.CustomerID, in.Sender); err != nil {
				return err
			}
			if th, err = s.mailThread(ctx, tx, in); err != nil {
				return err
			}
		}
		plan := d.Plan(th)
		t := plan.Ticket
		switch plan.Outcome {
		case tickets.MailDuplicate:
			out = plan.Earlier
			return nil
		case tickets.MailNewTicket:
			nt := plan.NewTicket
			nt.EndUserID = u.ID
			if t, err = s.insertTicket(ctx, tx, in.CustomerID, nt); err != nil {
				return err
			}
		}
		m, _, err := s.insertMessage(ctx, tx, d.Add(t))
		if err != nil {
			return err
		}
		out = tickets.MailImported{Outcome: plan.Outcome, TicketID: t.ID, MessageID: m.ID}
		_, err = s.claimAttachments(ctx, tx, in.CustomerID, m.ID, in.Attachments, d.Fits)
		return err
	})
	if postgres.UniqueViolation(err, mailKey) {
		// Another import of the mail committed between our check and insert
		// (possible only when the two copies named different threads).
		done, dup, err2 := s.ImportedMail(ctx, in.CustomerID, in.Mail.ChannelID, in.Mail.ProviderMessageID)
		if err2 == nil && dup {
			return done, nil
		}
	}
	if err != nil {
		return tickets.MailImported{}, postgres.Error(err, "message")
	}
	return out, nil
}

// mailEndUser finds the customer's end user with the sender's address or
// creates one (end-user.created). Two imports creating the same address at
// once end with one end user: the second INSERT waits for the first and
// does nothing, and the SELECT after it sees the committed row.
func (s *Store) mailEndUser(ctx context.Context, tx pgx.Tx, customerID int64, sender contracts.MailAddress) (tickets.EndUser, error) {
	u, err := collectEndUser(tx.Query(ctx, `INSERT INTO end_users (customer_id, name, email, custom_fields)
		VALUES ($1, $2, $3, '{}') ON CONFLICT (customer_id, email) WHERE email IS NOT NULL DO NOTHING
		RETURNING `+endUserCols, customerID, sender.Name, sender.Address))
	if err == nil {
		return u, s.addEndUserEvent(ctx, tx, contracts.EventEndUserCreated, u)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return u, endUserError(err)
	}
	u, err = collectEndUser(tx.Query(ctx, `SELECT `+endUserCols+` FROM end_users WHERE customer_id = $1 AND email = $2`,
		customerID, sender.Address))
	return u, postgres.Error(err, "end user")
}

// mailThread loads the tickets the threading rules find for the mail,
// within the customer and its channel (the import's plan, PlanImport,
// picks one): the ticket of the newest mail whose Message-ID is the
// first of ThreadIDs that names one, the ticket of the conversation's
// newest mail, the subject's ticket with its participants. The lookups go in one round
// trip; the tickets found are locked in id order (as bulk updates lock
// them, so the two never wait on each other in opposite orders), and a
// ticket deleted since its lookup counts as not found.
func (s *Store) mailThread(ctx context.Context, tx pgx.Tx, in tickets.MailImport) (tickets.MailThread, error) {
	var th tickets.MailThread
	var byHeaders, byConversation, bySubject int64
	b := &pgx.Batch{}
	lookup := func(id *int64, sql string, args ...any) {
		b.Queue(sql, args...).QueryRow(func(row pgx.Row) error {
			if err := row.Scan(id); !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			return nil
		})
	}
	if len(in.ThreadIDs) > 0 {
		lookup(&byHeaders, `SELECT ticket_id FROM ticket_messages
			WHERE customer_id = $1 AND mail_channel_id = $2 AND internet_message_id = ANY($3::text[])
			ORDER BY array_position($3::text[], internet_message_id), message_id DESC LIMIT 1`,
			in.CustomerID, in.Mail.ChannelID, in.ThreadIDs)
	}
	if in.Mail.ConversationID != "" {
		lookup(&byConversation, `SELECT ticket_id FROM ticket_messages
			WHERE customer_id = $1 AND mail_channel_id = $2 AND conversation_id = $3
			ORDER BY message_id DESC LIMIT 1`,
			in.CustomerID, in.Mail.ChannelID, in.Mail.ConversationID)
	}
	if in.SubjectTicketID > 0 {
		lookup(&bySubject, `SELECT ticket_id FROM tickets WHERE customer_id = $1 AND channel_id = $2 AND ticket_id = $3`,
			in.CustomerID, in.Mail.ChannelID, in.SubjectTicketID)
	}
	if b.Len() == 0 {
		return th, nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return th, err
	}
	var ids []int64
	for _, id := range []int64{byHeaders, byConversation, bySubject} {
		if id > 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return th, nil
	}
	rows, err := collectAll[ticketRow](tx.Query(ctx, `SELECT `+ticketWriteCols+` FROM tickets t
		WHERE t.customer_id = $1 AND t.ticket_id = ANY($2) ORDER BY t.ticket_id FOR UPDATE OF t`, in.CustomerID, ids))
	if err != nil {
		return th, postgres.Error(err, "ticket")
	}
	locked := convert(rows, ticketRow.ticket)
	found := func(id int64) *tickets.Ticket {
		for i := range locked {
			if locked[i].ID == id {
				return &locked[i]
			}
		}
		return nil
	}
	th.ByHeaders, th.ByConversation, th.BySubject = found(byHeaders), found(byConversation), found(bySubject)
	if th.BySubject != nil {
		if th.Participants, err = participants(ctx, tx, *th.BySubject); err != nil {
			return th, err
		}
	}
	return th, nil
}

// participants are the ticket's end user's address and the From, To and Cc
// addresses of the ticket's mail-made messages.
func participants(ctx context.Context, tx pgx.Tx, t tickets.Ticket) (tickets.Participants, error) {
	var p tickets.Participants
	err := tx.QueryRow(ctx, `SELECT coalesce((SELECT email FROM end_users WHERE customer_id = $1 AND end_user_id = $3), ''),
		coalesce((SELECT array_agg(DISTINCT a.address) FROM ticket_messages m,
			LATERAL (SELECT m.mail_from_address
				UNION ALL SELECT e->>'address' FROM jsonb_array_elements(coalesce(m.mail_to, '[]') || coalesce(m.mail_cc, '[]')) e) a(address)
			WHERE m.customer_id = $1 AND m.ticket_id = $2 AND m.provider_message_id IS NOT NULL AND a.address IS NOT NULL), '{}')`,
		t.CustomerID, t.ID, t.EndUserID).Scan(&p.EndUser, &p.Thread)
	return p, err
}

// MessageChannel returns the channel of the ticket of the customer's
// message.
func (s *Store) MessageChannel(ctx context.Context, customerID, id int64) (int64, error) {
	var channelID int64
	err := s.db.QueryRow(ctx, `SELECT t.channel_id FROM ticket_messages m
		JOIN tickets t ON t.customer_id = m.customer_id AND t.ticket_id = m.ticket_id
		WHERE m.customer_id = $1 AND m.message_id = $2`, customerID, id).Scan(&channelID)
	return channelID, postgres.Error(err, "message")
}

// SetDelivery records the delivery state of the customer's agent message
// as a report of it left it. A report older than the one applied (by
// d.UpdatedAt, the report's occurredAt) changes nothing; pending (set at
// send time by this service's clock) always gives way to a report. An
// unknown or deleted message, or one that is not an agent's, is ignored:
// false.
func (s *Store) SetDelivery(ctx context.Context, customerID, messageID int64, d tickets.Delivery) (bool, error) {
	tag, err := s.db.Exec(ctx, `UPDATE ticket_messages SET delivery_status = $3, delivery_attempts = $4,
		delivery_error = $5, delivery_updated_at = $6
		WHERE customer_id = $1 AND message_id = $2 AND sender_type = 'Agent'
		AND (delivery_status IS NULL OR delivery_status = 'pending' OR delivery_updated_at < $6)`,
		customerID, messageID, d.Status, d.Attempts, nullText(d.Error), d.UpdatedAt)
	if err != nil {
		return false, postgres.Error(err, "message")
	}
	return tag.RowsAffected() > 0, nil
}

// replyMail is what message.reply.sent carries for delivery by mail: the
// end user's name and address, and the provider and Message-IDs of the
// end user's latest mail in the ticket (none when the end user wrote none:
// a reply to another sender's mail would go to that sender).
func (s *Store) replyMail(ctx context.Context, tx pgx.Tx, t tickets.Ticket) (to contracts.MailAddress, providerID, internetID string, err error) {
	err = tx.QueryRow(ctx, `SELECT u.name, coalesce(u.email, ''), coalesce(m.provider_message_id, ''),
		coalesce(m.internet_message_id, '')
		FROM end_users u LEFT JOIN LATERAL (SELECT provider_message_id, internet_message_id FROM ticket_messages
			WHERE customer_id = $1 AND ticket_id = $2 AND sender_type = 'EndUser' AND provider_message_id IS NOT NULL
			AND mail_from_address = u.email
			ORDER BY created_at DESC, message_id DESC LIMIT 1) m ON true
		WHERE u.customer_id = $1 AND u.end_user_id = $3`, t.CustomerID, t.ID, t.EndUserID).
		Scan(&to.Name, &to.Address, &providerID, &internetID)
	return to, providerID, internetID, err
}
