package tickets

// A message's JSON merge patch (PATCH /api/TicketMessages/{id}): parsed
// and validated here, applied to the locked message by MessagePatch.Apply.

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/textfield"
)

// MessagePatch is a validated JSON merge patch (RFC 7396) of a message.
type MessagePatch struct {
	// Text replaces the message's text when not nil.
	Text *string
	// SetAIReply: AIReplyText replaces the reply's text (the reply becomes
	// prepared), or with nil clears it (status none).
	SetAIReply  bool
	AIReplyText *string
	// CustomFields is merged into customFieldsData when not nil (RFC 7396:
	// null members remove keys; a null patch empties it).
	CustomFields json.RawMessage
}

// ParseMessagePatch reads a merge patch of a message. Member names match
// case-insensitively; only message, aiReply.text and customFieldsData may
// be patched: any other member is a 400 naming it.
func ParseMessagePatch(body []byte) (MessagePatch, error) {
	var p MessagePatch
	members, ok := objectMembers(body)
	if !ok {
		return p, apperr.E(apperr.Invalid, "a merge patch of a message must be a JSON object")
	}
	var v apperr.Validation
	seen := map[string]bool{}
	for _, mb := range members {
		name := strings.ToLower(mb.name)
		if seen[name] {
			v.Add(mb.name, "is given more than once")
			continue
		}
		seen[name] = true
		switch name {
		case "message":
			var s *string
			if json.Unmarshal(mb.value, &s) != nil || s == nil {
				v.Add("message", "must be a string (it cannot be removed)")
				continue
			}
			text := strings.TrimSpace(*s)
			textfield.Multiline(&v, "message", text, true, MaxMessageLen)
			p.Text = &text
		case "aireply":
			parseAIReplyPatch(&v, &p, mb.value)
		case "customfieldsdata":
			if isNull(mb.value) {
				p.CustomFields = json.RawMessage(`null`)
				continue
			}
			if _, ok := objectMembers(mb.value); !ok {
				v.Add("customFieldsData", "must be a JSON object or null")
				continue
			}
			p.CustomFields = append(json.RawMessage(nil), mb.value...)
		default:
			v.Add(mb.name, "cannot be changed (only message, aiReply.text and customFieldsData)")
		}
	}
	return p, v.Err()
}

func parseAIReplyPatch(v *apperr.Validation, p *MessagePatch, raw json.RawMessage) {
	if isNull(raw) {
		p.SetAIReply = true
		return
	}
	members, ok := objectMembers(raw)
	if !ok {
		v.Add("aiReply", "must be an object ({\"text\": ...}) or null")
		return
	}
	seen := false
	for _, mb := range members {
		if !strings.EqualFold(mb.name, "text") {
			v.Add("aiReply."+mb.name, "cannot be changed (only aiReply.text)")
			continue
		}
		if seen {
			v.Add("aiReply.text", "is given more than once")
			continue
		}
		seen = true
		p.SetAIReply = true
		if isNull(mb.value) {
			continue
		}
		var s string
		if json.Unmarshal(mb.value, &s) != nil {
			v.Add("aiReply.text", "must be a string or null")
			continue
		}
		s = strings.TrimSpace(s)
		if s == "" {
			v.Add("aiReply.text", "must not be empty (null clears the reply)")
			continue
		}
		textfield.Multiline(v, "aiReply.text", s, true, MaxMessageLen)
		p.AIReplyText = &s
	}
}

type member struct {
	name  string
	value json.RawMessage
}

// objectMembers returns the members of a JSON object in order (duplicates
// kept), or false when raw is not an object.
func objectMembers(raw json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		out = append(out, member{name: name, value: value})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	return out, true
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// MessageChange is what a patch leaves of a message.
type MessageChange struct {
	Text          string
	TextChanged   bool
	AIReplyText   string
	AIReplyStatus AIReplyStatus
	AIReplyAt     *time.Time
	CustomFields  json.RawMessage
	// Changed is false when the patch changes nothing.
	Changed bool
	// SearchConfig and Language are the text's (TextLanguage): a new text
	// is indexed again in SearchConfig, and ticket.message.updated carries
	// Language.
	SearchConfig, Language string
	// ReplyByHand: an agent wrote or cleared the reply, so it is no
	// engine's any more (its provenance goes).
	ReplyByHand bool
}

// Apply applies the patch to m (now dates a newly prepared reply). A
// reply that was already sent or modified cannot be changed (409).
func (p MessagePatch) Apply(m Message, now time.Time) (MessageChange, error) {
	c := MessageChange{Text: m.Text, AIReplyText: m.AIReply.Text, AIReplyStatus: m.AIReply.Status, AIReplyAt: m.AIReply.CreatedAt,
		CustomFields: m.CustomFields}
	if p.Text != nil && *p.Text != m.Text {
		c.Text, c.TextChanged, c.Changed = *p.Text, true, true
	}
	if p.SetAIReply {
		if m.AIReply.Status == AIReplySent || m.AIReply.Status == AIReplyModified {
			return c, &apperr.Error{Code: apperr.Conflict, Message: "the reply to this message was already sent",
				Fields: map[string]string{"aiReply.text": "cannot change after the reply was sent"}}
		}
		if p.AIReplyText == nil {
			if m.AIReply.Status != AIReplyNone || m.AIReply.Text != "" {
				c.AIReplyText, c.AIReplyStatus, c.AIReplyAt, c.Changed = "", AIReplyNone, nil, true
			}
		} else if *p.AIReplyText != m.AIReply.Text || m.AIReply.Status != AIReplyPrepared {
			at := now
			c.AIReplyText, c.AIReplyStatus, c.AIReplyAt, c.Changed = *p.AIReplyText, AIReplyPrepared, &at, true
		}
	}
	if p.CustomFields != nil {
		merged, err := MergePatch(m.CustomFields, p.CustomFields)
		if err != nil {
			return c, apperr.Field("customFieldsData", "must be a JSON object or null", "invalid customFieldsData")
		}
		fields, msg := normalizeCustomFields(merged)
		if msg != "" {
			return c, apperr.Field("customFieldsData", msg, "invalid customFieldsData")
		}
		if !jsonEqual(fields, m.CustomFields) {
			c.CustomFields, c.Changed = fields, true
		}
	}
	if c.Changed {
		c.Language, c.SearchConfig = TextLanguage(c.Text)
		c.ReplyByHand = c.AIReplyText != m.AIReply.Text || c.AIReplyStatus != m.AIReply.Status
	}
	return c, nil
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// MergePatch applies an RFC 7396 merge patch to target (absent or invalid
// target counts as null): an object patch sets its members recursively and
// removes those that are null; any other patch replaces the target. The
// result is compact JSON; numbers keep their text.
func MergePatch(target, patch json.RawMessage) (json.RawMessage, error) {
	var t, p any
	if len(bytes.TrimSpace(target)) > 0 {
		if err := decodeNumbers(target, &t); err != nil {
			t = nil
		}
	}
	if err := decodeNumbers(patch, &p); err != nil {
		return nil, err
	}
	return json.Marshal(mergeValue(t, p))
}

func decodeNumbers(raw json.RawMessage, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

func mergeValue(target, patch any) any {
	po, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	to, ok := target.(map[string]any)
	if !ok {
		to = map[string]any{}
	}
	keys := make([]string, 0, len(po))
	for k := range po {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if po[k] == nil {
			delete(to, k)
			continue
		}
		to[k] = mergeValue(to[k], po[k])
	}
	return to
}
