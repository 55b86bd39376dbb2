// Package engines builds the assistant's engine from configuration: the
// OpenAI-compatible server (package llm, falling back to the offline
// engine) when AI_BASE_URL and AI_MODEL are set, the offline engine
// (package offline) otherwise. Both binaries of the tickets module use it:
// the assistant for its work on messages, the tickets API for summaries
// (and the offline engine for the current prompt-document ranking).
package engines

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"supportplatform.dev/ai/mt"
	"supportplatform.dev/ai/openai"
	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/assistant/llm"
	"supportplatform.dev/services/tickets/internal/assistant/offline"
)

// Config is the AI configuration, embedded in a binary's Config. The
// names and meanings are in the repository README's Configuration.
type Config struct {
	openai.Settings
	AIEmbeddingModel string `env:"AI_EMBEDDING_MODEL" default:"" desc:"embedding model of the OpenAI-compatible server (/v1/embeddings) to re-rank prompt documents (averaged with BM25); empty = the LLM engine ranks with the offline engine's BM25"`
	AIEmbeddingURL   string `env:"AI_EMBEDDING_URL" default:"" desc:"base URL (with /v1) of the server of AI_EMBEDDING_MODEL when it is not AI_BASE_URL (vLLM and llama.cpp serve embeddings from a process of their own); empty = AI_BASE_URL"`
	AIEmbeddingKey   string `env:"AI_EMBEDDING_KEY" default:"" desc:"API key of AI_EMBEDDING_URL (used only with it; AI_BASE_URL's server gets AI_API_KEY)"`
}

// client is the OpenAI-compatible client of the configuration.
func (c Config) client() *openai.Client {
	cfg := c.Settings.Config()
	cfg.EmbeddingURL, cfg.EmbeddingKey = c.AIEmbeddingURL, c.AIEmbeddingKey
	return openai.New(cfg)
}

// Check refuses an attempt timeout that does not fit in the budget of the
// request or handling that makes the call.
func (c Config) Check(budget time.Duration) error {
	var errs []error
	if c.AITimeout <= 0 || c.AITimeout >= budget {
		errs = append(errs, fmt.Errorf("config: AI_TIMEOUT (%v) must be positive and below REQUEST_TIMEOUT (%v)", c.AITimeout, budget))
	}
	if c.AIMaxRetries < 0 {
		errs = append(errs, fmt.Errorf("config: AI_MAX_RETRIES (%d) must not be negative", c.AIMaxRetries))
	}
	if err := c.Settings.Check(); err != nil {
		errs = append(errs, fmt.Errorf("config: AI_*: %w", err))
	}
	return errors.Join(errs...)
}

// New returns the configured engine: the OpenAI-compatible server with
// the offline engine as its fallback when AI_BASE_URL and AI_MODEL are set,
// the offline engine otherwise. translator (may be nil) lets the offline
// engine read and write languages other than its documents'.
func New(cfg Config, translator mt.Translator, log *slog.Logger) (assistant.Engine, error) {
	off, err := Offline(translator)
	if err != nil {
		return nil, err
	}
	client := cfg.client()
	if !client.Configured() {
		return off, nil
	}
	return llm.New(llm.Options{Client: client, EmbeddingModel: cfg.AIEmbeddingModel, Fallback: off, Log: log}), nil
}

// Offline returns the offline engine (deterministic, no network).
func Offline(translator mt.Translator) (assistant.Engine, error) {
	return offline.New(offline.Options{Translator: translator}), nil
}
