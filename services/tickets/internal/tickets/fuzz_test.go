package tickets

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/httpserver"
)

// isInvalid tells whether err is a 400 apperr naming field (any field when
// field is "").
func isInvalid(err error, field string) bool {
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.Invalid {
		return false
	}
	return field == "" || ae.Fields[field] != ""
}

// FuzzParseListTime: a createdFrom/createdTo value covers a non-empty range
// [from, after) in UTC at PostgreSQL's microsecond precision, one day for a
// bare date, and the canonical spelling of from reads back to it.
func FuzzParseListTime(f *testing.F) {
	for _, s := range []string{"2026-01-31", "2026-01-31T10:00:00Z", "2026-01-31T10:00:00.123456789+05:30",
		"2026-01-31T10:00:00", "2026-02-30", "2026-1-31", "0000-01-01T00:00:00-23:59", "9999-12-31T23:59:59+00:00",
		"9999-12-31T23:59:59.9999999-23:59", "2026-01-31 10:00:00", "2026-01-31T24:00:00Z", "", "now"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		from, after, ok := ParseListTime(raw)
		if !ok {
			if !from.IsZero() || !after.IsZero() {
				t.Fatalf("refused %q with %v, %v", raw, from, after)
			}
			return
		}
		if !after.After(from) || from.Location() != time.UTC || after.Location() != time.UTC ||
			from.Nanosecond()%1000 != 0 {
			t.Fatalf("ParseListTime(%q) = %v, %v", raw, from, after)
		}
		if d := after.Sub(from); d != time.Microsecond && d != 24*time.Hour {
			t.Fatalf("ParseListTime(%q) covers %v", raw, d)
		}
		if y := from.Year(); y >= 1 && y <= 9999 {
			canonical := from.Format(time.RFC3339Nano)
			if f2, a2, ok := ParseListTime(canonical); !ok || !f2.Equal(from) || (after.Sub(from) == time.Microsecond && !a2.Equal(after)) {
				t.Fatalf("%q -> %v; its spelling %q -> %v, %v, %v", raw, from, canonical, f2, a2, ok)
			}
		}
	})
}

// FuzzParseSorts: the list sorts and the status and sender-type names are
// one of their values, read back from their own spelling, or refused (a
// 400 naming sort for the sorts).
func FuzzParseSorts(f *testing.F) {
	for _, s := range []string{"", "dateCreated", "-dateUpdated", "TICKETID", "--ticketID", "-", " dateCreated",
		"name", "-endUserID", "DateCreated", "open", "CLOSED", "Escalated ", "agent", "EndUser", "ai", "system", "K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if s, err := ParseTicketSort(raw); err != nil {
			if !isInvalid(err, "sort") {
				t.Fatalf("ParseTicketSort(%q): %v", raw, err)
			}
		} else {
			spelled := map[bool]string{false: "", true: "-"}[s.Desc] + s.By
			if back, err := ParseTicketSort(spelled); err != nil || back != s || (raw != "" && !strings.EqualFold(raw, spelled)) {
				t.Fatalf("ticket sort %q -> %+v; %q -> %+v, %v", raw, s, spelled, back, err)
			}
		}
		if s, err := ParseEndUserSort(raw); err != nil {
			if !isInvalid(err, "sort") {
				t.Fatalf("ParseEndUserSort(%q): %v", raw, err)
			}
		} else {
			spelled := map[bool]string{false: "", true: "-"}[s.Desc] + s.By
			if back, err := ParseEndUserSort(spelled); err != nil || back != s || (raw != "" && !strings.EqualFold(raw, spelled)) {
				t.Fatalf("end-user sort %q -> %+v; %q -> %+v, %v", raw, s, spelled, back, err)
			}
		}
		if st, ok := ParseStatus(raw); ok {
			if back, ok := ParseStatus(string(st)); !ok || back != st || !strings.EqualFold(raw, string(st)) {
				t.Fatalf("status %q -> %q", raw, st)
			}
		}
		if st, ok := ParseSenderType(raw); ok {
			if back, ok := ParseSenderType(string(st)); !ok || back != st || !strings.EqualFold(raw, string(st)) {
				t.Fatalf("sender type %q -> %q", raw, st)
			}
		}
	})
}

// FuzzParseMessagePatch: a PATCH body that passed the JSON binding either
// is a 400, or patches only what may change, with storable text and
// customFieldsData null or an object.
func FuzzParseMessagePatch(f *testing.F) {
	for _, s := range []string{`{"message":"new text"}`, `{"Message":" padded \n text "}`, `{"message":null}`,
		`{"message":""}`, `{"message":1}`, `{"aiReply":null}`, `{"aiReply":{"text":"draft"}}`, `{"aiReply":{"TEXT":null}}`,
		`{"aiReply":{"text":" "}}`, `{"aiReply":{"text":"a","text":"b"}}`, `{"aiReply":{"status":"x"}}`, `{"aiReply":[]}`,
		`{"customFieldsData":{"a":1,"b":null}}`, `{"customFieldsData":null}`, `{"customFieldsData":[1]}`,
		`{"message":"a","MESSAGE":"b"}`, `{"ticketId":5}`, `{}`, `[]`, `"x"`, `null`, `{"message":"\u0007"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var raw json.RawMessage
		if httpserver.DecodeJSON(body, &raw) != nil {
			return
		}
		p, err := ParseMessagePatch(raw)
		if err != nil {
			if !isInvalid(err, "") {
				t.Fatalf("ParseMessagePatch(%s): %v is not a 400", body, err)
			}
			return
		}
		for _, s := range []*string{p.Text, p.AIReplyText} {
			if s == nil {
				continue
			}
			if *s == "" || *s != strings.TrimSpace(*s) || !utf8.ValidString(*s) || utf8.RuneCountInString(*s) > MaxMessageLen ||
				strings.ContainsFunc(*s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' }) {
				t.Fatalf("%s: text %q accepted", body, *s)
			}
		}
		if p.AIReplyText != nil && !p.SetAIReply {
			t.Fatalf("%s: reply text without SetAIReply", body)
		}
		if p.CustomFields != nil {
			var obj map[string]any
			if string(p.CustomFields) != "null" && (json.Unmarshal(p.CustomFields, &obj) != nil || obj == nil) {
				t.Fatalf("%s: customFieldsData %s", body, p.CustomFields)
			}
		}
	})
}
