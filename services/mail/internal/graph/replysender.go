package graph

import (
	"context"
	"errors"

	"supportplatform.dev/services/mail/internal/replier"
)

// ReplySender adapts Client to replier.Sender: the replier's mail becomes
// Graph's and Graph's errors the replier's classes.
type ReplySender struct{ c *Client }

// NewReplySender returns c as the replier's sender.
func NewReplySender(c *Client) ReplySender { return ReplySender{c: c} }

// replyClass maps Graph's answers to the replier's error classes: shed or
// transiently failed calls (after the client's own retries) are throttled,
// every other Graph answer and a refused token are refusals (404 the
// message's absence). What did not complete (transport, timeout, a token
// endpoint out of reach) stays unclassed.
func replyClass(err error) error {
	if err == nil {
		return nil
	}
	if IsThrottled(err) {
		after, _ := RetryAfter(err)
		return &replier.SendError{Class: replier.ErrThrottled, RetryAfter: after, Err: err}
	}
	if IsNotFound(err) {
		return &replier.SendError{Class: replier.ErrNotFound, Err: err}
	}
	var ge *Error
	var te *TokenError
	if errors.As(err, &ge) || errors.As(err, &te) && te.Status != 0 {
		return &replier.SendError{Class: replier.ErrRefused, Err: err}
	}
	return err
}

func outgoing(m replier.OutgoingMail) OutgoingMail {
	out := OutgoingMail{Subject: m.Subject, Text: m.Text, Headers: m.Headers}
	for _, a := range m.To {
		out.To = append(out.To, Address(a))
	}
	return out
}

func (s ReplySender) Reply(ctx context.Context, tenant, mailbox, messageID string, m replier.OutgoingMail) error {
	return replyClass(s.c.Reply(ctx, tenant, mailbox, messageID, outgoing(m)))
}

func (s ReplySender) SendMail(ctx context.Context, tenant, mailbox string, m replier.OutgoingMail) error {
	return replyClass(s.c.SendMail(ctx, tenant, mailbox, outgoing(m)))
}
