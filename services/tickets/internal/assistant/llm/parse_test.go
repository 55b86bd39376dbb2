package llm

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"supportplatform.dev/services/tickets/internal/assistant"
)

// ts is a TopicScore literal.
func ts(id int64, score float64) assistant.TopicScore {
	return assistant.TopicScore{TopicID: id, Score: score}
}

func TestParseTopics(t *testing.T) {
	topics := []assistant.Topic{{TopicID: 1}, {TopicID: 2}}
	tests := []struct {
		name    string
		answer  string
		want    []assistant.TopicScore
		wantErr string
	}{
		{"all topics", `{"topics":[{"topicID":1,"score":0.25},{"topicID":2,"score":0.75}]}`, []assistant.TopicScore{ts(2, 0.75), ts(1, 0.25)}, ""},
		{"ties keep the given order", `{"topics":[{"topicID":2,"score":0.5},{"topicID":1,"score":0.5}]}`, []assistant.TopicScore{ts(1, 0.5), ts(2, 0.5)}, ""},
		{"empty list scores zero", `{"topics":[]}`, []assistant.TopicScore{ts(1, 0), ts(2, 0)}, ""},
		{"unknown ID dropped", `{"topics":[{"topicID":3,"score":1},{"topicID":1,"score":0.1}]}`, []assistant.TopicScore{ts(1, 0.1), ts(2, 0)}, ""},
		{"fence without language", "```\n{\"topics\":[{\"topicID\":1,\"score\":1}]}\n```", []assistant.TopicScore{ts(1, 1), ts(2, 0)}, ""},
		{"null", `null`, nil, "no JSON object"},
		{"no topics key", `{"scores":[]}`, nil, `unknown field "scores"`},
		{"closing think tag without its opening", "The message is about logins.\n</think>\n{\"topics\":[{\"topicID\":2,\"score\":0.5}]}", []assistant.TopicScore{ts(2, 0.5), ts(1, 0)}, ""},
		{"array", `[{"topicID":1,"score":1}]`, nil, "not the JSON object"},
		{"missing score", `{"topics":[{"topicID":1}]}`, nil, "lacks a topicID or a score"},
		{"fractional ID", `{"topics":[{"topicID":1.5,"score":1}]}`, nil, "not the JSON object"},
		{"string score", `{"topics":[{"topicID":1,"score":"high"}]}`, nil, "not the JSON object"},
		{"unknown field", `{"topics":[{"topicID":1,"score":1,"reason":"x"}]}`, nil, `unknown field "reason"`},
		{"two objects: the first counts", `{"topics":[{"topicID":1,"score":1}]} {"topics":[]}`, []assistant.TopicScore{ts(1, 1), ts(2, 0)}, ""},
		{"prose around", "Here you go: {\"topics\":[{\"topicID\":1,\"score\":1}]}\nHope this helps!", []assistant.TopicScore{ts(1, 1), ts(2, 0)}, ""},
		{"duplicate", `{"topics":[{"topicID":2,"score":1},{"topicID":2,"score":1}]}`, nil, "scored twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTopics(tt.answer, topics)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseTopics = %v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("parseTopics = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestParseReply(t *testing.T) {
	r := assistant.ReplyRequest{Language: "fr", Documents: []assistant.RankedDocument{
		{Document: assistant.Document{DocumentID: 4}}, {Document: assistant.Document{DocumentID: 9}}}}
	tests := []struct {
		name    string
		answer  string
		want    assistant.Reply
		wantErr string
	}{
		{"reply", `{"reply":" Bonjour ","documentIDs":[9,4,9]}`, assistant.Reply{Text: "Bonjour", Language: "fr", DocumentIDs: []int64{9, 4}}, ""},
		{"null", `{"reply":null}`, assistant.Reply{}, ""},
		{"empty text is no reply", `{"reply":"","documentIDs":[]}`, assistant.Reply{}, ""},
		{"no reply key", `{}`, assistant.Reply{}, `no "reply"`},
		{"number", `{"reply":5,"documentIDs":[4]}`, assistant.Reply{}, "neither a string nor null"},
		{"not given", `{"reply":"x","documentIDs":[4,5]}`, assistant.Reply{}, "documentID 5 is not one of the given documents"},
		{"ungrounded", `{"reply":"x"}`, assistant.Reply{}, "must name the documents"},
		{"string IDs", `{"reply":"x","documentIDs":["4"]}`, assistant.Reply{}, "not the JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseReply(tt.answer, r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseReply = %+v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Text != tt.want.Text || got.Language != tt.want.Language || !slices.Equal(got.DocumentIDs, tt.want.DocumentIDs) {
				t.Fatalf("parseReply = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestFitTurns(t *testing.T) {
	turns := make([]assistant.Turn, 10)
	for i := range turns {
		turns[i] = assistant.Turn{SenderType: "EndUser", Text: fmt.Sprintf("turn %d %s", i, strings.Repeat("x", 91))} // 99 bytes
	}
	kept, omitted := fitTurns(turns, 450)
	if omitted != 6 || len(kept) != 4 || kept[0].Text != turns[0].Text || kept[1].Text != turns[7].Text || kept[3].Text != turns[9].Text {
		t.Fatalf("fitTurns kept %d (first %q), omitted %d; want the first and the last 3, 6 omitted", len(kept), kept[0].Text[:6], omitted)
	}
	if kept, omitted := fitTurns(turns, 100000); len(kept) != 10 || omitted != 0 {
		t.Fatalf("fitTurns with room kept %d, omitted %d", len(kept), omitted)
	}
	if kept, omitted := fitTurns(nil, 10); kept == nil || len(kept) != 0 || omitted != 0 {
		t.Fatalf("fitTurns(nil) = %v, %d", kept, omitted)
	}
}

func TestTruncateKeepsRunes(t *testing.T) {
	s := strings.Repeat("é", 10) // 20 bytes
	got := truncate(s, 5)
	if !utf8.ValidString(got) || got != "éé…" {
		t.Fatalf("truncate = %q, want \"éé…\"", got)
	}
	if truncate("short", 10) != "short" {
		t.Fatal("truncate changed a short string")
	}
}

func TestSimilarity(t *testing.T) {
	for _, tt := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 0}, []float64{2, 0}, 1},
		{[]float64{1, 0}, []float64{0, 3}, 0.5},
		{[]float64{1, 0}, []float64{-1, 0}, 0},
		{[]float64{0, 0}, []float64{1, 0}, 0},
	} {
		got, err := similarity(tt.a, tt.b)
		if err != nil || got != tt.want {
			t.Errorf("similarity(%v, %v) = %v, %v; want %v", tt.a, tt.b, got, err, tt.want)
		}
	}
	if _, err := similarity([]float64{1}, []float64{1, 2}); err == nil {
		t.Error("similarity of different dimensions gave no error")
	}
}
