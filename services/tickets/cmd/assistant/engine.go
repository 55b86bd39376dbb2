package main

import (
	"log/slog"

	"supportplatform.dev/ai/mt"
	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/assistant/engines"
)

// newEngine is the assistant's engine: llm.New over the OpenAI-compatible
// server with the offline engine as fallback when AI_BASE_URL and AI_MODEL
// are set, else the offline engine. translator writes replies in languages
// the engine cannot write itself.
//
// LEAD: the real construction goes into engines.New and engines.Offline
// (package internal/assistant/engines), which the tickets binary shares;
// until packages offline and llm are merged they return a marked stand-in
// (engines/standin.go, to delete).
func newEngine(cfg Config, translator mt.Translator, log *slog.Logger) (assistant.Engine, error) {
	return engines.New(cfg.Config, translator, log)
}
