package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"supportplatform.dev/ai/openai"
	"supportplatform.dev/services/tickets/internal/assistant"
)

// unwrapAnswer removes what chat models put around a plain-text answer
// despite the instructions: reasoning (<think>...</think>, or a reply that
// starts inside a block its chat template opened) and a Markdown code fence
// around all of it.
func unwrapAnswer(s string) string {
	s = strings.TrimSpace(openai.StripReasoning(s))
	if strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```") && len(s) >= 6 {
		inner := s[3 : len(s)-3]
		// The opening fence may name a language ("```text").
		if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(strings.TrimSpace(inner[:nl]), " \t{[") {
			inner = inner[nl+1:]
		}
		s = strings.TrimSpace(inner)
	}
	return s
}

// jsonAnswer is the JSON object of an answer: the whole answer, or found
// in a fence, after reasoning or amid text (openai.JSONText).
func jsonAnswer(s string) (string, error) {
	obj, ok := openai.JSONText(s)
	if !ok {
		return "", errors.New("the answer holds no JSON object")
	}
	return obj, nil
}

// decodeStrict decodes exactly one JSON value of v's shape, with no unknown
// fields and nothing after it.
func decodeStrict(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not the JSON object asked for: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("text after the JSON object")
	}
	return nil
}

type topicsAnswer struct {
	Topics []struct {
		TopicID *int64   `json:"topicID"`
		Score   *float64 `json:"score"`
	} `json:"topics"`
}

// parseTopics reads a detection answer: every entry needs an integer topicID
// and a numeric score; entries for topics that were not asked about are
// dropped, scores are clamped to [0, 1], topics the answer leaves out score
// 0. The result has one entry per topic, best first (ties in the given
// order).
func parseTopics(answer string, topics []assistant.Topic) ([]assistant.TopicScore, error) {
	obj, err := jsonAnswer(answer)
	if err != nil {
		return nil, err
	}
	var a topicsAnswer
	if err := decodeStrict(obj, &a); err != nil {
		return nil, err
	}
	if a.Topics == nil {
		return nil, errors.New(`the object has no "topics" array`)
	}
	index := make(map[int64]int, len(topics))
	for i, t := range topics {
		index[t.TopicID] = i
	}
	out := make([]assistant.TopicScore, len(topics))
	for i, t := range topics {
		out[i] = assistant.TopicScore{TopicID: t.TopicID}
	}
	seen := make(map[int64]bool, len(a.Topics))
	for n, e := range a.Topics {
		if e.TopicID == nil || e.Score == nil {
			return nil, fmt.Errorf("topics[%d] lacks a topicID or a score", n)
		}
		i, ok := index[*e.TopicID]
		if !ok {
			// A topic that was not asked about (invented, or planted in the message).
			continue
		}
		if seen[*e.TopicID] {
			return nil, fmt.Errorf("topicID %d is scored twice", *e.TopicID)
		}
		seen[*e.TopicID] = true
		out[i].Score = clamp01(*e.Score)
	}
	slices.SortStableFunc(out, func(x, y assistant.TopicScore) int {
		switch {
		case x.Score > y.Score:
			return -1
		case x.Score < y.Score:
			return 1
		}
		return 0
	})
	return out, nil
}

type replyAnswer struct {
	Reply       json.RawMessage `json:"reply"`
	DocumentIDs []int64         `json:"documentIDs"`
}

// parseReply reads a reply answer: {"reply":null} means the documents do
// not answer the message (Reply{}); otherwise the reply needs text and the
// IDs of the documents it uses, all of them among the given documents.
func parseReply(answer string, r assistant.ReplyRequest) (assistant.Reply, error) {
	obj, err := jsonAnswer(answer)
	if err != nil {
		return assistant.Reply{}, err
	}
	var a replyAnswer
	if err := decodeStrict(obj, &a); err != nil {
		return assistant.Reply{}, err
	}
	if len(a.Reply) == 0 {
		return assistant.Reply{}, errors.New(`the object has no "reply"`)
	}
	if bytes.Equal(a.Reply, []byte("null")) {
		return assistant.Reply{}, nil
	}
	var text string
	if err := json.Unmarshal(a.Reply, &text); err != nil {
		return assistant.Reply{}, errors.New(`"reply" is neither a string nor null`)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return assistant.Reply{}, nil
	}
	if len(a.DocumentIDs) == 0 {
		return assistant.Reply{}, errors.New(`"documentIDs" must name the documents the reply uses`)
	}
	given := make(map[int64]bool, len(r.Documents))
	for _, d := range r.Documents {
		given[d.DocumentID] = true
	}
	ids := make([]int64, 0, len(a.DocumentIDs))
	for _, id := range a.DocumentIDs {
		if !given[id] {
			return assistant.Reply{}, fmt.Errorf("documentID %d is not one of the given documents", id)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return assistant.Reply{Text: text, Language: r.Language, DocumentIDs: ids}, nil
}

// correction is the user message that asks again after an invalid answer.
// Its reason is the parser's own text (at most naming a field or an ID of
// the answer), never customer data.
func correction(reason error) string {
	return "Your previous answer could not be used: " + reason.Error() + ". " +
		"Answer again following the instructions exactly: one JSON object of the form given there, and nothing else."
}
