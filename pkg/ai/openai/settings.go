package openai

import (
	"errors"
	"fmt"
	"time"
)

// Settings are the AI_* variables of a binary that talks to an
// OpenAI-compatible server (embed them in its config; pkg/config reads the
// tags). The binary checks AI_TIMEOUT against the budget of the work that
// makes the calls, and the other values with Check.
type Settings struct {
	AIBaseURL         string        `env:"AI_BASE_URL" default:"" desc:"OpenAI-compatible API base URL (e.g. http://127.0.0.1:11434/v1 for Ollama); empty = LLM engine off"`
	AIAPIKey          string        `env:"AI_API_KEY" default:"" desc:"API key of the OpenAI-compatible server (optional for local servers)"`
	AIModel           string        `env:"AI_MODEL" default:"" desc:"chat model name; empty = LLM engine off"`
	AITimeout         time.Duration `env:"AI_TIMEOUT" default:"15s" desc:"timeout of one LLM request attempt; must be below REQUEST_TIMEOUT"`
	AIMaxRetries      int           `env:"AI_MAX_RETRIES" default:"2" desc:"retries on 429/5xx/timeouts, honouring Retry-After; a retry that cannot get 2s before the request's deadline is not made; never for a context overflow or 429 insufficient_quota"`
	AIServerKind      string        `env:"AI_SERVER_KIND" default:"auto" desc:"openai, vllm, llamacpp, ollama or auto (openai for api.openai.com and Azure OpenAI, ollama for port 11434, else a generic server): decides the defaults of AI_TOKEN_PARAM, AI_RESPONSE_FORMAT and AI_CONTEXT_TOKENS"`
	AITokenParam      string        `env:"AI_TOKEN_PARAM" default:"auto" desc:"max_completion_tokens, max_tokens or auto (max_completion_tokens for openai, vllm and reasoning models, max_tokens for llamacpp, ollama and generic servers, which ignore the other)"`
	AIReasoningModel  string        `env:"AI_REASONING_MODEL" default:"auto" desc:"true, false or auto (true for OpenAI's o1, o3, o4 and gpt-5 families): a reasoning model gets max_completion_tokens, no temperature, and AI_REASONING_TOKENS more output"`
	AIReasoningTokens int           `env:"AI_REASONING_TOKENS" default:"4096" desc:"tokens a reasoning model may spend on hidden reasoning on top of each call's visible output"`
	AIResponseFormat  string        `env:"AI_RESPONSE_FORMAT" default:"auto" desc:"how JSON answers are asked for: json_schema (strict structured output), json_object, none, or auto (json_schema, json_object for generic servers)"`
	AIContextTokens   int           `env:"AI_CONTEXT_TOKENS" default:"0" desc:"context length of the model as the server runs it (Ollama: OLLAMA_CONTEXT_LENGTH, llama.cpp: -c, vLLM: --max-model-len); prompts are trimmed to fit with their output; 0 = the kind's default (openai 128000, vllm 8192, llamacpp 4096, ollama 4096, generic 8192)"`
}

// Config is the client configuration of these settings.
func (s Settings) Config() Config {
	return Config{BaseURL: s.AIBaseURL, APIKey: s.AIAPIKey, Model: s.AIModel, Timeout: s.AITimeout, MaxRetries: s.AIMaxRetries,
		Server: s.AIServerKind, TokenParam: s.AITokenParam, Reasoning: s.AIReasoningModel, ReasoningTokens: s.AIReasoningTokens,
		ResponseFormat: s.AIResponseFormat, ContextTokens: s.AIContextTokens}
}

// Check refuses values that are not among the documented ones, naming the
// variable.
func (s Settings) Check() error {
	var errs []error
	for _, v := range []struct {
		name string
		cfg  Config
	}{
		{"AI_SERVER_KIND", Config{Server: s.AIServerKind}},
		{"AI_TOKEN_PARAM", Config{TokenParam: s.AITokenParam}},
		{"AI_REASONING_MODEL", Config{Reasoning: s.AIReasoningModel}},
		{"AI_REASONING_TOKENS", Config{ReasoningTokens: s.AIReasoningTokens}},
		{"AI_RESPONSE_FORMAT", Config{ResponseFormat: s.AIResponseFormat}},
		{"AI_CONTEXT_TOKENS", Config{ContextTokens: s.AIContextTokens}},
	} {
		if err := v.cfg.Check(); err != nil {
			errs = append(errs, fmt.Errorf("config: %s: %w", v.name, err))
		}
	}
	return errors.Join(errs...)
}

// Client is the client of these settings; its Configured is false without
// AI_BASE_URL and AI_MODEL.
func (s Settings) Client(opts ...Option) *Client { return New(s.Config(), opts...) }
