package graphfake

import (
	"net/http"
	"strings"
)

type outRecipient struct {
	EmailAddress struct {
		Name    string `json:"name"`
		Address string `json:"address"`
	} `json:"emailAddress"`
}

type outBody struct {
	ContentType string `json:"contentType"`
	Content     string `json:"content"`
}

type outHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// outMessage is the message of a reply or sendMail request: the writable properties of Graph's
// message the fake knows; others are refused as Graph refuses properties its model lacks.
type outMessage struct {
	ODataType              string         `json:"@odata.type"`
	Subject                *string        `json:"subject"`
	Body                   *outBody       `json:"body"`
	ToRecipients           []outRecipient `json:"toRecipients"`
	CcRecipients           []outRecipient `json:"ccRecipients"`
	BccRecipients          []outRecipient `json:"bccRecipients"`
	ReplyTo                []outRecipient `json:"replyTo"`
	InternetMessageHeaders []outHeader    `json:"internetMessageHeaders"`
	Importance             string         `json:"importance"`
}

type replyRequest struct {
	Comment string      `json:"comment"`
	Message *outMessage `json:"message"`
}

type sendMailRequest struct {
	Message         *outMessage `json:"message"`
	SaveToSentItems *bool       `json:"saveToSentItems"`
}

// decodeMailBody reads a bounded JSON body strictly, naming the message type in refusals.
func decodeMailBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	return decodeStrict(w, r, v, "RequestBodyRead", "The property '%s' does not exist on type 'microsoft.graph.message'. Make sure to only use property names that are defined by the type or mark the type as open type.")
}

func (m *outMessage) recipients() ([]Address, *apiError) {
	if m == nil {
		return nil, nil
	}
	var out []Address
	for _, r := range m.ToRecipients {
		if !strings.Contains(r.EmailAddress.Address, "@") {
			return nil, &apiError{status: http.StatusBadRequest, code: "ErrorInvalidRecipients",
				message: "At least one recipient is not valid., Recipient '" + r.EmailAddress.Address + "' is not resolved."}
		}
		out = append(out, Address{Name: r.EmailAddress.Name, Address: r.EmailAddress.Address})
	}
	return out, nil
}

// headers checks the custom headers as Graph does: only X- headers may be set.
func (m *outMessage) headers() (map[string]string, *apiError) {
	if m == nil || len(m.InternetMessageHeaders) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, h := range m.InternetMessageHeaders {
		if len(h.Name) < 3 || !strings.EqualFold(h.Name[:2], "x-") {
			return nil, &apiError{status: http.StatusBadRequest, code: "InvalidInternetMessageHeader",
				message: "The internet message header name '" + h.Name + "' should start with 'x-' or 'X-'."}
		}
		out[h.Name] = h.Value
	}
	return out, nil
}

// handleReply serves POST .../messages/{id}/reply: 202, the reply recorded and stored in the
// sent items folder, threaded to the original.
func (s *Server) handleReply(w http.ResponseWriter, r *http.Request, _ accessToken, mb *mailbox) {
	var in replyRequest
	if e := decodeMailBody(w, r, &in); e != nil {
		e.write(w)
		return
	}
	if in.Comment != "" && in.Message != nil && in.Message.Body != nil && in.Message.Body.Content != "" {
		badRequest("Specify either a comment or the body property of the message parameter, not both.").write(w)
		return
	}
	to, e := in.Message.recipients()
	if e != nil {
		e.write(w)
		return
	}
	headers, e := in.Message.headers()
	if e != nil {
		e.write(w)
		return
	}
	text, contentType := in.Comment, "text"
	if in.Message != nil && in.Message.Body != nil && in.Comment == "" {
		text, contentType = in.Message.Body.Content, strings.ToLower(in.Message.Body.ContentType)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	orig := messageLocked(r, mb)
	if orig == nil {
		itemNotFound().write(w)
		return
	}
	subject := "RE: " + orig.subject
	if in.Message != nil && in.Message.Subject != nil {
		subject = *in.Message.Subject
	}
	if len(to) == 0 {
		to = orig.replyTo
		if len(to) == 0 {
			to = []Address{orig.from}
		}
	}
	refs := orig.internetMessageID
	for _, h := range orig.headers {
		if strings.EqualFold(h.Name, "References") {
			refs = h.Value + " " + refs
		}
	}
	d := DeliverMail{Mailbox: mb.address, Folder: sentItems, Subject: subject, From: Address{Address: mb.address},
		To: to, ConversationID: orig.conversationID, InReplyTo: orig.internetMessageID, References: strings.Fields(refs),
		Headers: headers}
	s.recordSentLocked(w, d, SentMail{Kind: SentReply, Mailbox: mb.address, InReplyTo: orig.id, Subject: subject,
		To: to, Text: text, ContentType: contentType, Headers: headers}, true)
}

// handleSendMail serves POST /users/{mb}/sendMail: 202, the mail recorded and, unless
// saveToSentItems is false, stored in the sent items folder.
func (s *Server) handleSendMail(w http.ResponseWriter, r *http.Request, _ accessToken, mb *mailbox) {
	var in sendMailRequest
	if e := decodeMailBody(w, r, &in); e != nil {
		e.write(w)
		return
	}
	if in.Message == nil {
		badRequest("The message parameter is required.").write(w)
		return
	}
	to, e := in.Message.recipients()
	if e != nil {
		e.write(w)
		return
	}
	if len(to) == 0 && len(in.Message.CcRecipients) == 0 && len(in.Message.BccRecipients) == 0 {
		(&apiError{status: http.StatusBadRequest, code: "ErrorInvalidRecipients", message: "At least one recipient is not valid., A message can't be sent because it contains no recipients."}).write(w)
		return
	}
	headers, e := in.Message.headers()
	if e != nil {
		e.write(w)
		return
	}
	var subject, text, contentType string
	if in.Message.Subject != nil {
		subject = *in.Message.Subject
	}
	if in.Message.Body != nil {
		text, contentType = in.Message.Body.Content, strings.ToLower(in.Message.Body.ContentType)
	}
	save := in.SaveToSentItems == nil || *in.SaveToSentItems
	d := DeliverMail{Mailbox: mb.address, Folder: sentItems, Subject: subject, From: Address{Address: mb.address},
		To: to, Headers: headers}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordSentLocked(w, d, SentMail{Kind: SentSendMail, Mailbox: mb.address, Subject: subject, To: to, Text: text,
		ContentType: contentType, Headers: headers}, save)
}

// recordSentLocked stores d (when save) and records sent, then answers 202 as Graph does.
func (s *Server) recordSentLocked(w http.ResponseWriter, d DeliverMail, sent SentMail, save bool) {
	if save {
		if sent.ContentType == "html" {
			d.HTML = sent.Text
		} else {
			d.Text = sent.Text
		}
		m, err := s.storeLocked(d)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
			return
		}
		sent.ID, sent.InternetMessageID = m.id, m.internetMessageID
	}
	s.mail.sent = append(s.mail.sent, sent)
	w.WriteHeader(http.StatusAccepted)
}
