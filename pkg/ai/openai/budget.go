package openai

import (
	"errors"
	"fmt"
)

// Token estimates. No tokenizer of the configured model is at hand, so the
// estimate is deliberately high: one token per three bytes of UTF-8 (BPE
// vocabularies average about four characters of English a token, and
// about one token per character of Chinese or Japanese, three bytes each),
// plus the chat template's framing of every message.
const (
	bytesPerToken      = 3
	tokensPerMessage   = 8
	tokensPerExchange  = 16
	contextSafetyRatio = 0.95
)

// EstimateText is the estimated number of tokens of s.
func EstimateText(s string) int { return (len(s) + bytesPerToken - 1) / bytesPerToken }

// EstimateTokens is the estimated number of prompt tokens of msgs.
func EstimateTokens(msgs []Message) int {
	n := tokensPerExchange
	for _, m := range msgs {
		n += tokensPerMessage + EstimateText(m.Content)
	}
	return n
}

// ErrContextExceeded is wrapped by every error about a prompt too long for
// the model's context: the client's own check before sending (*ContextError)
// and a server's refusal (llama.cpp's 500 exceed_context_size_error,
// OpenAI's and vLLM's 400). Such a request is never retried.
var ErrContextExceeded = errors.New("openai: the prompt does not fit in the model's context")

// ErrQuota is wrapped by the error for a 429 insufficient_quota: the account
// has no credit left, which no retry changes.
var ErrQuota = errors.New("openai: the API account's quota is exhausted")

// ErrTruncated is returned when the answer stopped at the token limit
// (finish_reason "length"): a cut-off summary, translation or JSON object is
// not an answer.
var ErrTruncated = errors.New("openai: the answer was cut off at the token limit (finish_reason length)")

// ContextError is a prompt the client did not send because, with the
// output it may produce, it exceeds the configured context (AI_CONTEXT_TOKENS).
type ContextError struct {
	PromptTokens, OutputTokens, ContextTokens int
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("openai: a prompt of about %d tokens and %d tokens of output exceed the context of %d tokens (AI_CONTEXT_TOKENS)",
		e.PromptTokens, e.OutputTokens, e.ContextTokens)
}

func (e *ContextError) Is(target error) bool { return target == ErrContextExceeded }

// RefusalError is an answer the model declined to give: the message's
// refusal field (structured outputs) or finish_reason content_filter.
type RefusalError struct {
	Refusal string
}

func (e *RefusalError) Error() string {
	if e.Refusal == "" {
		return "openai: the model refused to answer"
	}
	return "openai: the model refused to answer: " + e.Refusal
}

// ContextTokens is the context length prompts must fit in (AI_CONTEXT_TOKENS,
// or the server kind's default); 0 when unknown.
func (c *Client) ContextTokens() int { return c.p.contextTokens }

// outputReserve is what a call with visible-output bound maxTokens may
// generate: the bound, plus the reasoning allowance of a reasoning model.
func (c *Client) outputReserve(maxTokens int) int {
	if c.p.reasoning {
		return maxTokens + c.p.reasoningTok
	}
	return maxTokens
}

// PromptBudget is how many prompt tokens (as EstimateTokens counts them) a
// call with visible-output bound maxTokens may send: the context less the
// output and a safety margin. Callers trim what they put into the prompt to
// it; Complete refuses a prompt over it without sending. A negative budget
// means nothing fits.
func (c *Client) PromptBudget(maxTokens int) int {
	ctx := int(float64(c.p.contextTokens) * contextSafetyRatio)
	return ctx - c.outputReserve(maxTokens)
}
