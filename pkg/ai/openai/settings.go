package openai

import "time"

// Settings are the AI_* variables of a binary that talks to an
// OpenAI-compatible server (embed them in its config; pkg/config reads the
// tags). The binary checks AI_TIMEOUT against the budget of the work that
// makes the calls.
type Settings struct {
	AIBaseURL    string        `env:"AI_BASE_URL" default:"" desc:"OpenAI-compatible API base URL (e.g. http://127.0.0.1:11434/v1 for Ollama); empty = LLM engine off"`
	AIAPIKey     string        `env:"AI_API_KEY" default:"" desc:"API key of the OpenAI-compatible server (optional for local servers)"`
	AIModel      string        `env:"AI_MODEL" default:"" desc:"chat model name; empty = LLM engine off"`
	AITimeout    time.Duration `env:"AI_TIMEOUT" default:"15s" desc:"timeout of one LLM request attempt; must be below REQUEST_TIMEOUT"`
	AIMaxRetries int           `env:"AI_MAX_RETRIES" default:"2" desc:"retries on 429/5xx/timeouts, honouring Retry-After; a retry that cannot get 2s before the request's deadline is not made"`
}

// Client is the client of these settings; its Configured is false without
// AI_BASE_URL and AI_MODEL.
func (s Settings) Client(opts ...Option) *Client {
	return New(Config{BaseURL: s.AIBaseURL, APIKey: s.AIAPIKey, Model: s.AIModel, Timeout: s.AITimeout, MaxRetries: s.AIMaxRetries}, opts...)
}
