package tickets

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/tickets/internal/assistant"
)

func wantFields(t *testing.T, err error, code apperr.Code, fields ...string) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
	for _, f := range fields {
		if ae.Fields[f] == "" {
			t.Fatalf("error %v does not name %s", err, f)
		}
	}
}

// RFC 7396, appendix A, and what customFieldsData needs of it.
func TestMergePatch(t *testing.T) {
	tests := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{``, `{"a":1}`, `{"a":1}`},
		// Numbers keep their text (no float64 rounding).
		{`{"n":12345678901234567890}`, `{"m":0.10}`, `{"m":0.10,"n":12345678901234567890}`},
	}
	for _, tt := range tests {
		got, err := MergePatch(json.RawMessage(tt.target), json.RawMessage(tt.patch))
		if err != nil || string(got) != tt.want {
			t.Errorf("merge %s with %s = %s, %v; want %s", tt.target, tt.patch, got, err, tt.want)
		}
	}
}

func TestParseMessagePatch(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		fields []string // the 400 names these; none: valid
		check  func(t *testing.T, p MessagePatch)
	}{
		{name: "empty object", body: `{}`, check: func(t *testing.T, p MessagePatch) {
			if p.Text != nil || p.SetAIReply || p.CustomFields != nil {
				t.Fatalf("%+v", p)
			}
		}},
		{name: "message trimmed, any case", body: `{"MESSAGE":"  new text "}`, check: func(t *testing.T, p MessagePatch) {
			if p.Text == nil || *p.Text != "new text" {
				t.Fatalf("%+v", p)
			}
		}},
		{name: "reply text", body: `{"aiReply":{"Text":"Hello"}}`, check: func(t *testing.T, p MessagePatch) {
			if !p.SetAIReply || p.AIReplyText == nil || *p.AIReplyText != "Hello" {
				t.Fatalf("%+v", p)
			}
		}},
		{name: "reply text null clears", body: `{"aiReply":{"text":null}}`, check: func(t *testing.T, p MessagePatch) {
			if !p.SetAIReply || p.AIReplyText != nil {
				t.Fatalf("%+v", p)
			}
		}},
		{name: "reply null clears", body: `{"aiReply":null}`, check: func(t *testing.T, p MessagePatch) {
			if !p.SetAIReply || p.AIReplyText != nil {
				t.Fatalf("%+v", p)
			}
		}},
		{name: "reply without text changes nothing", body: `{"aiReply":{}}`, check: func(t *testing.T, p MessagePatch) {
			if p.SetAIReply {
				t.Fatalf("%+v", p)
			}
		}},
		{name: "custom fields", body: `{"customFieldsData":{"a":1,"b":null}}`, check: func(t *testing.T, p MessagePatch) {
			if string(p.CustomFields) != `{"a":1,"b":null}` {
				t.Fatalf("%s", p.CustomFields)
			}
		}},
		{name: "custom fields null", body: `{"customFieldsData":null}`, check: func(t *testing.T, p MessagePatch) {
			if string(p.CustomFields) != `null` {
				t.Fatalf("%s", p.CustomFields)
			}
		}},
		{name: "not an object", body: `["message"]`, fields: []string{}},
		{name: "other fields", body: `{"ticketID":3,"senderType":"Agent","message":"ok"}`, fields: []string{"ticketID", "senderType"}},
		{name: "reply status", body: `{"aiReply":{"status":"sent","text":"x"}}`, fields: []string{"aiReply.status"}},
		{name: "message null", body: `{"message":null}`, fields: []string{"message"}},
		{name: "message blank", body: `{"message":"   "}`, fields: []string{"message"}},
		{name: "message number", body: `{"message":5}`, fields: []string{"message"}},
		{name: "message control character", body: `{"message":"a\u0007b"}`, fields: []string{"message"}},
		{name: "message twice", body: `{"message":"a","Message":"b"}`, fields: []string{"Message"}},
		{name: "reply text blank", body: `{"aiReply":{"text":" "}}`, fields: []string{"aiReply.text"}},
		{name: "reply text number", body: `{"aiReply":{"text":1}}`, fields: []string{"aiReply.text"}},
		{name: "reply a string", body: `{"aiReply":"x"}`, fields: []string{"aiReply"}},
		{name: "custom fields array", body: `{"customFieldsData":[1]}`, fields: []string{"customFieldsData"}},
		{name: "too long", body: `{"message":"` + strings.Repeat("a", MaxMessageLen+1) + `"}`, fields: []string{"message"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseMessagePatch([]byte(tt.body))
			if tt.fields != nil {
				wantFields(t, err, apperr.Invalid, tt.fields...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, p)
		})
	}
}

func TestPatchApply(t *testing.T) {
	now := time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
	earlier := now.Add(-time.Hour)
	base := Message{Text: "hello", AIReply: AIReply{Status: AIReplyNone}, CustomFields: json.RawMessage(`{"a":1,"b":2}`)}
	prepared := base
	prepared.AIReply = AIReply{Text: "draft", Status: AIReplyPrepared, CreatedAt: &earlier}
	tests := []struct {
		name    string
		m       Message
		patch   string
		code    apperr.Code // "" = ok
		changed bool
		check   func(t *testing.T, c MessageChange)
	}{
		{name: "nothing", m: base, patch: `{}`},
		{name: "same text", m: base, patch: `{"message":"hello"}`},
		{name: "new text", m: base, patch: `{"message":"bye"}`, changed: true, check: func(t *testing.T, c MessageChange) {
			if c.Text != "bye" || !c.TextChanged || c.ReplyByHand || c.SearchConfig != "simple" {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "new text in a language", m: base, patch: `{"message":"Hola, mi pedido no ha llegado todavía y necesito saber dónde está el paquete."}`,
			changed: true, check: func(t *testing.T, c MessageChange) {
				if c.SearchConfig != "spanish" || c.Language != "es" {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "prepare a reply", m: base, patch: `{"aiReply":{"text":"answer"}}`, changed: true, check: func(t *testing.T, c MessageChange) {
			if c.AIReplyText != "answer" || c.AIReplyStatus != AIReplyPrepared || c.AIReplyAt == nil || !c.AIReplyAt.Equal(now) ||
				c.TextChanged || !c.ReplyByHand {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "custom fields keep the reply's provenance", m: prepared, patch: `{"customFieldsData":{"c":3}}`, changed: true,
			check: func(t *testing.T, c MessageChange) {
				if c.ReplyByHand {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "same prepared reply", m: prepared, patch: `{"aiReply":{"text":"draft"}}`},
		{name: "clear a reply", m: prepared, patch: `{"aiReply":{"text":null}}`, changed: true, check: func(t *testing.T, c MessageChange) {
			if c.AIReplyText != "" || c.AIReplyStatus != AIReplyNone || c.AIReplyAt != nil || !c.ReplyByHand {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "clear no reply", m: base, patch: `{"aiReply":null}`},
		{name: "pending reply prepared", m: Message{AIReply: AIReply{Status: AIReplyPending}, CustomFields: json.RawMessage(`{}`)},
			patch: `{"aiReply":{"text":"x"}}`, changed: true},
		{name: "sent reply", m: Message{AIReply: AIReply{Text: "x", Status: AIReplySent}}, patch: `{"aiReply":{"text":"y"}}`, code: apperr.Conflict},
		{name: "modified reply cleared", m: Message{AIReply: AIReply{Text: "x", Status: AIReplyModified}}, patch: `{"aiReply":null}`, code: apperr.Conflict},
		{name: "merge custom fields", m: base, patch: `{"customFieldsData":{"b":null,"c":{"d":true}}}`, changed: true,
			check: func(t *testing.T, c MessageChange) {
				if string(c.CustomFields) != `{"a":1,"c":{"d":true}}` {
					t.Fatalf("%s", c.CustomFields)
				}
			}},
		{name: "empty custom fields", m: base, patch: `{"customFieldsData":null}`, changed: true, check: func(t *testing.T, c MessageChange) {
			if string(c.CustomFields) != `{}` {
				t.Fatalf("%s", c.CustomFields)
			}
		}},
		{name: "same custom fields", m: base, patch: `{"customFieldsData":{"a":1}}`},
		{name: "custom fields over the key limit", m: base, patch: `{"customFieldsData":` + manyKeys(MaxCustomFields) + `}`, code: apperr.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseMessagePatch([]byte(tt.patch))
			if err != nil {
				t.Fatal(err)
			}
			c, err := p.Apply(tt.m, now)
			if tt.code != "" {
				wantFields(t, err, tt.code)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Changed != tt.changed {
				t.Fatalf("changed %v, want %v: %+v", c.Changed, tt.changed, c)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

// manyKeys is an object of n keys k0..k(n-1), which with "a" and "b" of
// the target is over MaxCustomFields.
func manyKeys(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + `":1`)
	}
	b.WriteString("}")
	return b.String()
}

func TestReplyToSend(t *testing.T) {
	tests := []struct {
		name       string
		m          Message
		modified   string
		wantText   string
		wantStatus AIReplyStatus
		conflict   string // the field the 409 names
	}{
		{"prepared", Message{AIReply: AIReply{Text: "draft", Status: AIReplyPrepared}}, "", "draft", AIReplySent, ""},
		{"prepared, modified", Message{AIReply: AIReply{Text: "draft", Status: AIReplyPrepared}}, "mine", "mine", AIReplyModified, ""},
		{"none, modified", Message{AIReply: AIReply{Status: AIReplyNone}}, "mine", "mine", AIReplyModified, ""},
		{"none", Message{AIReply: AIReply{Status: AIReplyNone}}, "", "", "", "modifiedAnswer"},
		{"pending", Message{AIReply: AIReply{Status: AIReplyPending}}, "", "", "", "modifiedAnswer"},
		{"sent", Message{AIReply: AIReply{Text: "draft", Status: AIReplySent}}, "", "", "", "aiReply"},
		{"sent, modified", Message{AIReply: AIReply{Text: "draft", Status: AIReplySent}}, "mine", "", "", "aiReply"},
		{"modified", Message{AIReply: AIReply{Text: "mine", Status: AIReplyModified}}, "", "", "", "aiReply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, status, err := ReplyToSend(tt.m, tt.modified)
			if tt.conflict != "" {
				wantFields(t, err, apperr.Conflict, tt.conflict)
				return
			}
			if err != nil || text != tt.wantText || status != tt.wantStatus {
				t.Fatalf("%q %q %v", text, status, err)
			}
		})
	}
}

func TestValidateEscalation(t *testing.T) {
	tests := []struct {
		name, comment, email string
		fields               []string
	}{
		{"valid", " Wrong answer ", "Lead@Example.com", nil},
		{"missing both", "", "", []string{"feedbackComment", "email"}},
		{"display name", "x", "Lead <lead@example.com>", []string{"email"}},
		{"two addresses", "x", "a@example.com, b@example.com", []string{"email"}},
		{"not an address", "x", "lead", []string{"email"}},
		{"comment too long", strings.Repeat("é", MaxFeedbackCommentLen+1), "a@example.com", []string{"feedbackComment"}},
		{"comment at the limit", strings.Repeat("é", MaxFeedbackCommentLen), "a@example.com", nil},
		{"control character", "a\x00b", "a@example.com", []string{"feedbackComment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ValidateEscalation(tt.comment, tt.email)
			if tt.fields != nil {
				wantFields(t, err, apperr.Invalid, tt.fields...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.name == "valid" && (e.Comment != "Wrong answer" || e.Email != "lead@example.com") {
				t.Fatalf("%+v", e)
			}
		})
	}
}

// recordingStore records what reaches the store.
type recordingStore struct {
	MessageStore
	opened  *NewTicket
	added   int64
	message Message
}

func (s *recordingStore) Message(context.Context, int64, int64) (Message, error) {
	return s.message, nil
}

func (s *recordingStore) AddMessage(_ context.Context, _, ticketID int64, add func(Ticket) MessagePlan) (Message, error) {
	s.added = ticketID
	in := add(Ticket{ID: ticketID}).Message
	return Message{TicketID: ticketID, Text: in.Text}, nil
}

func (s *recordingStore) OpenTicketWithMessage(_ context.Context, _ int64, t NewTicket, add func(Ticket) MessagePlan) (Message, error) {
	s.opened = &t
	m := add(Ticket{}).Message
	return Message{Text: m.Text, SenderAccountID: m.SenderAccountID}, nil
}

func (s *recordingStore) ListMessages(context.Context, int64, int64, paging.Page) ([]Message, int, error) {
	return nil, 0, nil
}

func TestCreateMessageValidation(t *testing.T) {
	look := &fakeLookups{channels: map[int64]contracts.ChannelReply{4: {Exists: true}, 5: {Exists: true, IsDeleted: true}}}
	ticket := func(id int64) *int64 { return &id }
	tests := []struct {
		name   string
		in     CreateMessageInput
		fields []string
		opened bool
		added  int64
	}{
		{name: "into a ticket", in: CreateMessageInput{TicketID: ticket(3), Message: MessageInput{Text: "hi"}}, added: 3},
		{name: "into a ticket with ticket fields", in: CreateMessageInput{TicketID: ticket(3), Message: MessageInput{Text: "hi"},
			TicketFields: []string{"subject", "channelID"}}, fields: []string{"subject", "channelID"}},
		{name: "into ticket 0", in: CreateMessageInput{TicketID: ticket(0), Message: MessageInput{Text: "hi"}}, fields: []string{"ticketID"}},
		{name: "into a ticket without text", in: CreateMessageInput{TicketID: ticket(3), Message: MessageInput{SenderType: "Bot"}},
			fields: []string{"message", "senderType"}},
		{name: "opens a ticket", in: CreateMessageInput{Message: MessageInput{Text: "hi", SenderType: "agent"},
			Ticket: TicketInput{Subject: "Help", ChannelID: 4, EndUserID: 2}}, opened: true},
		{name: "every field problem at once", in: CreateMessageInput{Message: MessageInput{Text: " ", CustomFields: json.RawMessage(`[1]`)}},
			fields: []string{"message", "subject", "channelID", "endUserID", "customFieldsData"}},
		{name: "deleted channel", in: CreateMessageInput{Message: MessageInput{Text: "hi"},
			Ticket: TicketInput{Subject: "Help", ChannelID: 5, EndUserID: 2}}, fields: []string{"channelID"}},
		{name: "bad message and unknown channel", in: CreateMessageInput{Message: MessageInput{Text: ""},
			Ticket: TicketInput{Subject: "Help", ChannelID: 6, EndUserID: 2}}, fields: []string{"message", "channelID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &recordingStore{}
			m, err := NewMessages(st, look, time.Now).CreateMessage(context.Background(), 1, 77, tt.in)
			if tt.fields != nil {
				wantFields(t, err, apperr.Invalid, tt.fields...)
				if st.opened != nil || st.added != 0 {
					t.Fatal("an invalid message reached the store")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (st.opened != nil) != tt.opened || st.added != tt.added {
				t.Fatalf("opened %v, added to %d", st.opened, st.added)
			}
			if tt.opened && (m.SenderAccountID == nil || *m.SenderAccountID != 77 || st.opened.Status != StatusOpen) {
				t.Fatalf("agent message %+v, ticket %+v", m, st.opened)
			}
		})
	}
}

// reverseRanker ranks documents in reverse order of id, scoring them by
// position, deterministically.
type reverseRanker struct{ calls int }

func (r *reverseRanker) RankDocuments(_ context.Context, text string, docs []assistant.Document) ([]assistant.RankedDocument, assistant.Provenance, error) {
	r.calls++
	out := make([]assistant.RankedDocument, len(docs))
	for i, d := range docs {
		out[i] = assistant.RankedDocument{Document: d}
	}
	slices.SortFunc(out, func(a, b assistant.RankedDocument) int { return cmp.Compare(b.DocumentID, a.DocumentID) })
	for i := range out {
		out[i].Score = 1 / float64(i+1)
	}
	return out, assistant.Provenance{Engine: "offline", Model: "test"}, nil
}

func TestPromptDocuments(t *testing.T) {
	doc := func(id int64) contracts.LinkedDocument {
		return contracts.LinkedDocument{DocumentID: id, Title: "T", Content: "C"}
	}
	look := &fakeLookups{docs: []contracts.LinkedDocument{doc(5), doc(3), doc(5), doc(8), doc(1), doc(2), doc(9)}}
	ids := func(res PromptDocumentsResult) []int64 {
		var out []int64
		for _, d := range res.Documents {
			out = append(out, d.DocumentID)
		}
		return out
	}
	withTopics := Message{Topics: []MessageTopic{{TopicID: 1}, {TopicID: 2}}, Text: "question"}
	tests := []struct {
		name    string
		message Message
		ranker  *reverseRanker
		want    []int64
		stored  bool
	}{
		{name: "no topics", message: Message{}, want: nil},
		{name: "by relevance without a ranker, each once, at most PromptDocuments", message: withTopics, want: []int64{5, 3, 8}},
		{name: "re-ranked", message: withTopics, ranker: &reverseRanker{}, want: []int64{9, 8, 5}},
		{name: "what the prepared reply used", ranker: &reverseRanker{}, stored: true, want: []int64{7},
			message: Message{Topics: withTopics.Topics, AIReply: AIReply{Provenance: &assistant.Provenance{Engine: "offline", Model: "m"},
				Documents: []PromptDocument{{DocumentID: 7, Title: "used", Score: 0.5}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewMessages(&recordingStore{message: tt.message}, look, time.Now)
			if tt.ranker != nil {
				s.WithRanker(tt.ranker)
			}
			res, err := s.PromptDocuments(context.Background(), 1, 1)
			if err != nil || res.Documents == nil {
				t.Fatalf("%+v %v", res, err)
			}
			if got := ids(res); !slices.Equal(got, tt.want) || res.Stored != tt.stored {
				t.Fatalf("documents %v stored %v, want %v %v", got, res.Stored, tt.want, tt.stored)
			}
			if tt.stored && tt.ranker.calls != 0 {
				t.Fatal("a prepared reply's documents were ranked again")
			}
		})
	}
}

func TestSelectPromptDocumentsBudget(t *testing.T) {
	budget := assistant.PromptTokenBudget * 4
	d := func(id int64, size int) assistant.RankedDocument {
		return assistant.RankedDocument{Document: assistant.Document{DocumentID: id, Content: strings.Repeat("é", size)}}
	}
	got := SelectPromptDocuments([]assistant.RankedDocument{d(1, budget+100), d(2, 10), d(3, 5)})
	if len(got) != 1 || got[0].DocumentID != 1 || len([]rune(got[0].Content)) != budget {
		t.Fatalf("an oversized best document: %d documents, %d characters", len(got), len([]rune(got[0].Content)))
	}
	got = SelectPromptDocuments([]assistant.RankedDocument{d(1, budget/2), d(2, budget), d(3, budget/4), d(4, 1), d(5, 1)})
	var ids []int64
	for _, g := range got {
		ids = append(ids, g.DocumentID)
	}
	if !slices.Equal(ids, []int64{1, 3, 4}) {
		t.Fatalf("documents %v, want 1, 3, 4 (2 does not fit; at most %d)", ids, assistant.PromptDocuments)
	}
}
