package graphfake

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"net/textproto"
	"strconv"
	"strings"
)

func recipientJSON(a Address) map[string]any {
	return map[string]any{"emailAddress": map[string]string{"name": a.Name, "address": a.Address}}
}

func recipientsJSON(as []Address) []map[string]any {
	out := make([]map[string]any, 0, len(as))
	for _, a := range as {
		out = append(out, recipientJSON(a))
	}
	return out
}

// json renders the message as Graph's message resource. internetMessageHeaders, as with Graph,
// only come when selected; bodyText converts an HTML body to text.
func (m *mailMessage) json(bodyText bool) map[string]any {
	bodyType, body := m.bodyType, m.body
	if bodyText && bodyType == "html" {
		bodyType, body = "text", htmlToText(body)
	}
	preview := body
	if bodyType == "html" {
		preview = htmlToText(body)
	}
	if r := []rune(preview); len(r) > 255 {
		preview = string(r[:255])
	}
	headers := make([]map[string]string, len(m.headers))
	for i, h := range m.headers {
		headers[i] = map[string]string{"name": h.Name, "value": h.Value}
	}
	received := formatTime(m.received)
	return map[string]any{
		"@odata.etag":            newETag(),
		"id":                     m.id,
		"createdDateTime":        received,
		"lastModifiedDateTime":   received,
		"receivedDateTime":       received,
		"sentDateTime":           received,
		"hasAttachments":         len(m.attachments) > 0,
		"internetMessageId":      m.internetMessageID,
		"subject":                m.subject,
		"bodyPreview":            preview,
		"importance":             "normal",
		"parentFolderId":         m.folder,
		"conversationId":         m.conversationID,
		"isRead":                 false,
		"isDraft":                m.isDraft,
		"body":                   map[string]string{"contentType": bodyType, "content": body},
		"sender":                 recipientJSON(m.sender),
		"from":                   recipientJSON(m.from),
		"toRecipients":           recipientsJSON(m.to),
		"ccRecipients":           recipientsJSON(m.cc),
		"bccRecipients":          []map[string]any{},
		"replyTo":                recipientsJSON(m.replyTo),
		"internetMessageHeaders": headers,
	}
}

// entityType is the part of Graph's model the fake serves for $select: a type's own properties
// and its derived types (whose properties are selected with a cast, as in
// microsoft.graph.fileAttachment/contentId).
type entityType struct {
	name    string
	props   []string
	derived []*entityType
}

var (
	fileAttachmentType      = &entityType{name: "microsoft.graph.fileAttachment", props: []string{"contentBytes", "contentId", "contentLocation"}}
	itemAttachmentType      = &entityType{name: "microsoft.graph.itemAttachment", props: []string{"item"}}
	referenceAttachmentType = &entityType{name: "microsoft.graph.referenceAttachment"}
	attachmentType          = &entityType{name: "microsoft.graph.attachment",
		props:   []string{"id", "name", "contentType", "size", "isInline", "lastModifiedDateTime"},
		derived: []*entityType{fileAttachmentType, itemAttachmentType, referenceAttachmentType}}
	eventMessageType = &entityType{name: "microsoft.graph.eventMessage",
		props: []string{"meetingMessageType", "startDateTime", "endDateTime", "location", "type", "recurrence", "isOutOfDate", "isAllDay", "isDelegated", "event"}}
	messageType = &entityType{name: "microsoft.graph.message",
		props: []string{"id", "bccRecipients", "body", "bodyPreview", "categories", "ccRecipients", "changeKey", "conversationId",
			"conversationIndex", "createdDateTime", "flag", "from", "hasAttachments", "importance", "inferenceClassification",
			"internetMessageHeaders", "internetMessageId", "isDeliveryReceiptRequested", "isDraft", "isRead",
			"isReadReceiptRequested", "lastModifiedDateTime", "parentFolderId", "receivedDateTime", "replyTo", "sender",
			"sentDateTime", "subject", "toRecipients", "uniqueBody", "webLink", "attachments", "extensions",
			"multiValueExtendedProperties", "singleValueExtendedProperties"},
		derived: []*entityType{eventMessageType}}
)

func (t *entityType) has(prop string) bool {
	for _, p := range t.props {
		if strings.EqualFold(p, prop) {
			return true
		}
	}
	return false
}

// parseSelect checks a $select against the addressed type as Graph does: a plain name must be a
// property of the type itself (contentId is on fileAttachment, not on attachment: 400), a name
// cast to a derived type ("microsoft.graph.fileAttachment/contentId") one of that type's. It
// returns the selected names, lower-cased without their cast.
func parseSelect(t *entityType, selected string) (map[string]bool, *apiError) {
	if strings.TrimSpace(selected) == "" {
		return nil, nil
	}
	keep := map[string]bool{}
	for _, f := range strings.Split(selected, ",") {
		f = strings.TrimSpace(f)
		on, prop := t, f
		if cast, p, ok := strings.Cut(f, "/"); ok {
			on, prop = nil, p
			for _, d := range t.derived {
				if strings.EqualFold(d.name, cast) {
					on = d
				}
			}
			if on == nil {
				return nil, &apiError{status: http.StatusBadRequest, code: "BadRequest",
					message: "The type '" + cast + "' is not derived from '" + t.name + "'."}
			}
		}
		if prop == "" || (!on.has(prop) && (on == t || !t.has(prop))) {
			return nil, &apiError{status: http.StatusBadRequest, code: "BadRequest",
				message: "Could not find a property named '" + prop + "' on type '" + on.name + "'."}
		}
		keep[strings.ToLower(prop)] = true
	}
	return keep, nil
}

// selectFields keeps what parseSelect returned, and the id and etag Graph always returns; without
// $select (keep nil), everything but internetMessageHeaders.
func selectFields(full map[string]any, keep map[string]bool) map[string]any {
	if keep == nil {
		delete(full, "internetMessageHeaders")
		return full
	}
	for k := range full {
		if !keep[strings.ToLower(k)] && k != "id" && k != "@odata.etag" && k != "@odata.type" {
			delete(full, k)
		}
	}
	return full
}

func itemNotFound() *apiError {
	return &apiError{status: http.StatusNotFound, code: "ErrorItemNotFound", message: "The specified object was not found in the store."}
}

// messageLocked finds the path's message, in the path's folder when it names one.
func messageLocked(r *http.Request, mb *mailbox) *mailMessage {
	m, ok := mb.messages[r.PathValue("id")]
	if !ok {
		return nil
	}
	if f := r.PathValue("folder"); f != "" && folderKey(f) != m.folder {
		return nil
	}
	return m
}

// handleMessage serves GET .../messages/{id} with $select and Prefer: outlook.body-content-type.
func (s *Server) handleMessage(w http.ResponseWriter, r *http.Request, _ accessToken, mb *mailbox) {
	text := strings.EqualFold(preferValues(r)["outlook.body-content-type"], "text")
	keep, e := parseSelect(messageType, r.URL.Query().Get("$select"))
	if e != nil {
		e.write(w)
		return
	}
	s.mu.Lock()
	mb.stats.MessageCalls++
	m := messageLocked(r, mb)
	var out map[string]any
	if m != nil {
		out = selectFields(m.json(text), keep)
	}
	s.mu.Unlock()
	if m == nil {
		itemNotFound().write(w)
		return
	}
	out["@odata.context"] = contextURL(r, "users('"+r.PathValue("mb")+"')/messages/$entity")
	if text {
		w.Header().Set("Preference-Applied", `outlook.body-content-type="text"`)
	}
	writeJSON(w, http.StatusOK, out)
}

// handleMessageMIME serves GET .../messages/{id}/$value: a simple MIME rendering of the message.
func (s *Server) handleMessageMIME(w http.ResponseWriter, r *http.Request, _ accessToken, mb *mailbox) {
	s.mu.Lock()
	m := messageLocked(r, mb)
	var raw []byte
	if m != nil {
		raw = m.mime()
	}
	s.mu.Unlock()
	if m == nil {
		itemNotFound().write(w)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(raw)
}

func formatAddresses(as []Address) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = (&mail.Address{Name: a.Name, Address: a.Address}).String()
	}
	return strings.Join(parts, ", ")
}

func (m *mailMessage) mime() []byte {
	var b bytes.Buffer
	hdr := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	hdr("From", formatAddresses([]Address{m.from}))
	hdr("To", formatAddresses(m.to))
	hdr("Cc", formatAddresses(m.cc))
	hdr("Reply-To", formatAddresses(m.replyTo))
	hdr("Subject", mime.QEncoding.Encode("utf-8", m.subject))
	hdr("Date", m.received.Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	for _, h := range m.headers {
		if !strings.EqualFold(h.Name, "Subject") {
			hdr(h.Name, h.Value)
		}
	}
	hdr("MIME-Version", "1.0")
	mw := multipart.NewWriter(&b)
	hdr("Content-Type", "multipart/mixed; boundary=\""+mw.Boundary()+"\"")
	b.WriteString("\r\n")
	part := func(h textproto.MIMEHeader, content []byte) {
		h.Set("Content-Transfer-Encoding", "base64")
		pw, _ := mw.CreatePart(h) // writes to a bytes.Buffer: no error
		enc := base64.StdEncoding.EncodeToString(content)
		for len(enc) > 76 {
			_, _ = pw.Write([]byte(enc[:76] + "\r\n"))
			enc = enc[76:]
		}
		_, _ = pw.Write([]byte(enc + "\r\n"))
	}
	part(textproto.MIMEHeader{"Content-Type": {"text/" + map[string]string{"html": "html", "text": "plain"}[m.bodyType] + "; charset=utf-8"}}, []byte(m.body))
	for _, a := range m.attachments {
		if a.Kind != AttachmentFile {
			continue
		}
		disp := "attachment"
		if a.IsInline {
			disp = "inline"
		}
		h := textproto.MIMEHeader{
			"Content-Type":        {mime.FormatMediaType(a.ContentType, map[string]string{"name": a.Name})},
			"Content-Disposition": {mime.FormatMediaType(disp, map[string]string{"filename": a.Name})},
		}
		if a.ContentID != "" {
			h.Set("Content-ID", "<"+strings.Trim(a.ContentID, "<>")+">")
		}
		part(h, a.Content)
	}
	_ = mw.Close()
	return b.Bytes()
}

func (a mailAttachment) json() map[string]any {
	j := map[string]any{
		"@odata.type":          "#microsoft.graph." + a.Kind,
		"id":                   a.id,
		"lastModifiedDateTime": "2026-01-01T00:00:00Z",
		"name":                 a.Name,
		"contentType":          a.ContentType,
		"size":                 a.Size,
		"isInline":             a.IsInline,
	}
	if a.Kind == AttachmentFile {
		j["@odata.mediaContentType"] = a.ContentType
		j["contentId"] = a.ContentID
		j["contentLocation"] = nil
		j["contentBytes"] = base64.StdEncoding.EncodeToString(a.Content)
	}
	return j
}

// handleAttachments serves GET .../messages/{id}/attachments with $select (without it, file
// attachments carry their contentBytes, as Graph's do) and Options.AttachmentPageSize paging by
// $skip.
func (s *Server) handleAttachments(w http.ResponseWriter, r *http.Request, _ accessToken, mb *mailbox) {
	skip := 0
	if v := r.URL.Query().Get("$skip"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			badRequest("Invalid $skip.").write(w)
			return
		}
		skip = n
	}
	keep, e := parseSelect(attachmentType, r.URL.Query().Get("$select"))
	if e != nil {
		e.write(w)
		return
	}
	s.mu.Lock()
	m := messageLocked(r, mb)
	var atts []mailAttachment
	if m != nil {
		atts = m.attachments
	}
	pageSize := s.attachmentPageSize
	s.mu.Unlock()
	if m == nil {
		itemNotFound().write(w)
		return
	}
	atts = atts[min(skip, len(atts)):]
	out := map[string]any{"@odata.context": contextURL(r, "Collection(attachment)")}
	if pageSize > 0 && len(atts) > pageSize {
		atts = atts[:pageSize]
		q := r.URL.Query()
		q.Set("$skip", strconv.Itoa(skip+pageSize))
		out["@odata.nextLink"] = baseURL(r) + r.URL.Path + "?" + q.Encode()
	}
	value := make([]map[string]any, 0, len(atts))
	for _, a := range atts {
		value = append(value, selectFields(a.json(), keep))
	}
	out["value"] = value
	writeJSON(w, http.StatusOK, out)
}

// handleAttachmentValue serves GET .../attachments/{aid}/$value: the raw bytes.
func (s *Server) handleAttachmentValue(w http.ResponseWriter, r *http.Request, _ accessToken, mb *mailbox) {
	s.mu.Lock()
	m := messageLocked(r, mb)
	var att *mailAttachment
	if m != nil {
		for i := range m.attachments {
			if m.attachments[i].id == r.PathValue("aid") {
				a := m.attachments[i]
				att = &a
			}
		}
	}
	s.mu.Unlock()
	switch {
	case att == nil:
		itemNotFound().write(w)
	case att.Kind == AttachmentReference:
		badRequest("A reference attachment has no raw content.").write(w)
	default:
		ct := att.ContentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Length", strconv.Itoa(len(att.Content)))
		_, _ = w.Write(att.Content)
	}
}
