package tickets

import (
	"context"
	"encoding/json"
	"strings"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/textfield"
)

// Bounds of tickets and messages.
const (
	MaxSubjectLen = 500 // characters
	// MaxMessageLen bounds a message's text (characters); search indexes
	// the first 100,000.
	MaxMessageLen = 200_000
)

// ChannelLookup asks the mail context for a channel (package lookup
// implements it over NATS): what ValidateTicket needs.
type ChannelLookup interface {
	Channel(ctx context.Context, customerID, channelID int64) (contracts.ChannelReply, error)
}

// Lookups are what Messages asks other services (package lookup implements
// them over NATS): channels, topics and their actions and documents.
type Lookups interface {
	ChannelLookup
	TopicNames(ctx context.Context, customerID int64, ids []int64) (map[int64]string, error)
	TopicActions(ctx context.Context, customerID, topicID int64) ([]contracts.LinkedAction, error)
	DocumentLookups
}

// TicketInput is a ticket as a client sends it: POST /api/Tickets, or the
// ticket part of a message that opens one.
type TicketInput struct {
	Subject      string
	ChannelID    int64
	EndUserID    int64
	Status       string // "" = Open
	CustomFields json.RawMessage
}

// ValidateTicket checks a new ticket's fields and that its channel is a live
// channel of the customer. Whether the end user is the customer's is the
// store's check (a foreign key), a 400 on endUserID too.
func ValidateTicket(ctx context.Context, look ChannelLookup, customerID int64, in TicketInput) (NewTicket, error) {
	var v apperr.Validation
	out := NewTicket{ChannelID: in.ChannelID, EndUserID: in.EndUserID, Subject: strings.TrimSpace(in.Subject), Status: StatusOpen}
	out.SearchConfig = SubjectSearchConfig(out.Subject)
	textfield.Line(&v, "subject", out.Subject, true, MaxSubjectLen)
	v.Check(in.ChannelID > 0, "channelID", "is required")
	v.Check(in.EndUserID > 0, "endUserID", "is required")
	if in.Status != "" {
		st, ok := ParseStatus(in.Status)
		v.Check(ok, "status", "must be Open, Pending, Escalated, Resolved or Closed")
		out.Status = st
	}
	fields, msg := normalizeCustomFields(in.CustomFields)
	if msg != "" {
		v.Add("customFieldsData", msg)
	}
	out.CustomFields = fields
	if err := v.Err(); err != nil {
		return out, err
	}
	ch, err := look.Channel(ctx, customerID, in.ChannelID)
	if err != nil {
		return out, err
	}
	if !ch.Exists || ch.IsDeleted {
		return out, apperr.Field("channelID", "is not a live channel of yours", "the channel does not exist or is deleted")
	}
	return out, nil
}

// MessageInput is a message as a client sends it.
type MessageInput struct {
	Text         string
	SenderType   string // "" = EndUser
	CustomFields json.RawMessage
}

// ValidateMessage checks a new message. accountID is the caller's account:
// an Agent message records who wrote it.
func ValidateMessage(in MessageInput, accountID int64) (NewMessage, error) {
	var v apperr.Validation
	out := NewMessage{Text: strings.TrimSpace(in.Text), SenderType: SenderEndUser}
	textfield.Multiline(&v, "message", out.Text, true, MaxMessageLen)
	if in.SenderType != "" {
		st, ok := ParseSenderType(in.SenderType)
		v.Check(ok, "senderType", "must be EndUser, Agent, AI or System")
		out.SenderType = st
	}
	if out.SenderType == SenderAgent && accountID > 0 {
		out.SenderAccountID = &accountID
	}
	fields, msg := normalizeCustomFields(in.CustomFields)
	if msg != "" {
		v.Add("customFieldsData", msg)
	}
	out.CustomFields = fields
	return out, v.Err()
}
