package openai

import (
	"bytes"
	"encoding/json"
	"strings"
)

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// StripReasoning removes the reasoning some models write before their
// answer: a <think>...</think> block, or everything up to a </think> whose
// opening tag was part of the prompt (DeepSeek-R1's and Qwen3's chat
// templates open the block themselves, so the reply starts inside it). A
// reply that opens a block and never closes it is all reasoning (cut at
// the token limit): nothing is left.
func StripReasoning(s string) string {
	t := strings.TrimLeft(s, " \t\r\n")
	if strings.HasPrefix(t, thinkOpen) {
		end := strings.Index(t, thinkClose)
		if end < 0 {
			return ""
		}
		return strings.TrimLeft(t[end+len(thinkClose):], " \t\r\n")
	}
	if end := strings.Index(t, thinkClose); end >= 0 && !strings.Contains(t[:end], thinkOpen) {
		return strings.TrimLeft(t[end+len(thinkClose):], " \t\r\n")
	}
	return s
}

// maxJSONCandidates bounds how many '{' positions JSONText tries to decode
// from, so a long answer full of braces costs linear time.
const maxJSONCandidates = 32

// JSONText finds the JSON object in a model's answer: the whole answer, or
// the object inside a Markdown code fence, after a reasoning block (see
// StripReasoning), or amid text ("Here is the result: {...} Hope this
// helps"). It returns the first complete object and whether there was one;
// the caller still checks its shape.
func JSONText(answer string) (string, bool) {
	s := strings.TrimSpace(StripReasoning(answer))
	if inner, ok := fenced(s); ok {
		s = inner
	}
	if json.Valid([]byte(s)) && strings.HasPrefix(s, "{") {
		return s, true
	}
	from := 0
	for range maxJSONCandidates {
		i := strings.IndexByte(s[from:], '{')
		if i < 0 {
			return "", false
		}
		start := from + i
		dec := json.NewDecoder(strings.NewReader(s[start:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == nil && bytes.HasPrefix(raw, []byte("{")) {
			return string(raw), true
		}
		from = start + 1
	}
	return "", false
}

// fenced returns the content of the first Markdown code fence in s whose
// content holds a '{', without the fence's language tag.
func fenced(s string) (string, bool) {
	rest := s
	for {
		open := strings.Index(rest, "```")
		if open < 0 {
			return "", false
		}
		body := rest[open+3:]
		closeAt := strings.Index(body, "```")
		if closeAt < 0 {
			return "", false
		}
		inner := body[:closeAt]
		// The opening fence may name a language ("```json").
		if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(strings.TrimSpace(inner[:nl]), " \t{[") {
			inner = inner[nl+1:]
		}
		if strings.Contains(inner, "{") {
			return strings.TrimSpace(inner), true
		}
		rest = body[closeAt+3:]
	}
}
