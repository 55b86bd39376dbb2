package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
)

// The hand-written list JSON is byte for byte what encoding/json writes.
func TestTicketPageJSON(t *testing.T) {
	rep := int64(42)
	cursor := "abc<&>\u2028"
	at := time.Date(2026, 11, 27, 19, 37, 4, 287340000, time.UTC)
	pages := []ticketPage{
		{Envelope: paging.Envelope[ticketResponse]{Items: []ticketResponse{}}},
		{Envelope: paging.Envelope[ticketResponse]{Items: []ticketResponse{
			{TicketID: 1, DateCreated: at, DateUpdated: at.Add(time.Second), Status: "Open", Subject: "Order 1: broken invoice",
				ChannelID: 3, EndUserID: 4, Topics: []string{}, AIFeedbackComments: []feedbackCommentResponse{},
				CustomFieldsData: json.RawMessage(`{}`), TicketToken: "tok"},
			{TicketID: 2, DateCreated: at.Truncate(time.Second), DateUpdated: at.Add(time.Nanosecond), Status: "Closed",
				Subject:   "quotes \" back\\slash \n\t\r\b\f \x01 <b>&amp;</b> ünïcödé 日本 \u2028\u2029 bad \xff\xfe end",
				ChannelID: 1 << 40, EndUserID: -1, CustomerRepID: &rep, IsClosed: true, Topics: []string{"Billing", "Ärger <x>"},
				AIFeedbackComments: []feedbackCommentResponse{{MessageID: 9, Comment: "wrong \"answer\"", Email: "a@b.c", DateCreated: at},
					{MessageID: 10, Comment: "", Email: "", DateCreated: time.Time{}.UTC()}},
				CustomFieldsData: json.RawMessage(`{"a": 1, "b": [1, 2, {"c": "<x> & y"}], "d": "\u00e9"}`), TicketToken: "t\u2029"},
			{TicketID: 3, DateCreated: at, DateUpdated: at, CustomFieldsData: nil},
		}, TotalCount: 1001, TotalPages: 51}, NextCursor: &cursor},
	}
	for i, p := range pages {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendTicketPage(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("page %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// Any string (and custom fields object) encodes as encoding/json encodes it.
func FuzzTicketJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<>&\"\\", "\x00\x1f\x7f", "\u2028\u2029", "\xff", "日本語", `{"a": [1, "<b>"]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := httpserver.AppendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s want %s", s, got, want)
		}
		if !json.Valid([]byte(s)) || len(s) == 0 {
			return
		}
		tr := ticketResponse{CustomFieldsData: json.RawMessage(s)}
		want, err := json.Marshal(tr)
		if err != nil {
			return
		}
		got, err := appendTicket(nil, tr)
		if err != nil || string(got) != string(want) {
			t.Fatalf("%q: got %s (%v) want %s", s, got, err, want)
		}
	})
}
