package graph

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// outMessageJSON is the message of a reply or sendMail request.
type outMessageJSON struct {
	Subject                string          `json:"subject,omitempty"`
	Body                   *bodyJSON       `json:"body,omitempty"`
	ToRecipients           []recipientJSON `json:"toRecipients,omitempty"`
	InternetMessageHeaders []headerJSON    `json:"internetMessageHeaders,omitempty"`
}

type replyJSON struct {
	Message *outMessageJSON `json:"message,omitempty"`
	Comment string          `json:"comment"`
}

type sendMailJSON struct {
	Message         outMessageJSON `json:"message"`
	SaveToSentItems bool           `json:"saveToSentItems"`
}

// customHeaders turns m's headers into Graph's list, sorted by name so that a request is the same
// every time. Graph accepts only custom headers (X-...) on outgoing mail and answers others with
// 400; they are refused here before anything is sent.
func customHeaders(h map[string]string) ([]headerJSON, error) {
	out := make([]headerJSON, 0, len(h))
	for name, value := range h {
		if len(name) < 3 || !strings.EqualFold(name[:2], "x-") || strings.ContainsAny(name, " :\r\n") {
			return nil, fmt.Errorf("%w: header %q is not a custom X- header", ErrInvalid, name)
		}
		if strings.ContainsAny(value, "\r\n") {
			return nil, fmt.Errorf("%w: header %q has a line break", ErrInvalid, name)
		}
		out = append(out, headerJSON{Name: name, Value: value})
	}
	slices.SortFunc(out, func(a, b headerJSON) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Reply answers message messageID of mailbox (POST .../messages/{id}/reply): Graph addresses it
// to the original's sender (or its Reply-To), threads it (In-Reply-To, References, the
// conversation) and saves it in Sent Items. m.Text goes as the reply's comment, Graph's way of
// giving the new text above the quoted original; Graph refuses a comment together with a message
// body, so no body is sent. m.To, when set, replaces the recipients; m.Subject, when set, replaces
// Graph's "RE: ..." subject; m.Headers are custom X- headers.
func (c *Client) Reply(ctx context.Context, tenant, mailbox, messageID string, m OutgoingMail) error {
	const op = "reply"
	if messageID == "" {
		return fmt.Errorf("graph: %s: %w: no message id", op, ErrInvalid)
	}
	headers, err := customHeaders(m.Headers)
	if err != nil {
		return fmt.Errorf("graph: %s: %w", op, err)
	}
	in := replyJSON{Comment: m.Text}
	if m.Subject != "" || len(m.To) > 0 || len(headers) > 0 {
		in.Message = &outMessageJSON{Subject: m.Subject, InternetMessageHeaders: headers}
		if len(m.To) > 0 {
			in.Message.ToRecipients = recipients(m.To)
		}
	}
	return c.mailJSON(ctx, tenant, mailRequest{op: op, method: http.MethodPost,
		url: c.messageURL(mailbox, messageID) + "/reply", mailbox: mailbox, body: in}, nil)
}

// SendMail sends a new mail from mailbox (POST /users/{mailbox}/sendMail) with a plain-text body,
// saved in Sent Items.
func (c *Client) SendMail(ctx context.Context, tenant, mailbox string, m OutgoingMail) error {
	const op = "send mail"
	if len(m.To) == 0 {
		return fmt.Errorf("graph: %s: %w: no recipient", op, ErrInvalid)
	}
	headers, err := customHeaders(m.Headers)
	if err != nil {
		return fmt.Errorf("graph: %s: %w", op, err)
	}
	in := sendMailJSON{SaveToSentItems: true, Message: outMessageJSON{
		Subject:                m.Subject,
		Body:                   &bodyJSON{ContentType: "Text", Content: m.Text},
		ToRecipients:           recipients(m.To),
		InternetMessageHeaders: headers,
	}}
	return c.mailJSON(ctx, tenant, mailRequest{op: op, method: http.MethodPost,
		url: c.userURL(mailbox) + "/sendMail", mailbox: mailbox, body: in}, nil)
}
