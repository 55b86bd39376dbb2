package engines

import (
	"context"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/ai/openai"
	"supportplatform.dev/ai/openai/openaifake"
	"supportplatform.dev/services/tickets/internal/assistant"
)

func settings(url, model string) openai.Settings {
	return openai.Settings{AIBaseURL: url, AIModel: model, AITimeout: 5 * time.Second, AIServerKind: "llamacpp",
		AITokenParam: "auto", AIReasoningModel: "auto", AIResponseFormat: "auto"}
}

// llama.cpp serves embeddings from a second llama-server started with
// --embeddings: AI_EMBEDDING_URL and AI_EMBEDDING_KEY reach it while chat
// goes to AI_BASE_URL.
func TestEmbeddingsGoToTheirOwnServer(t *testing.T) {
	chat := openaifake.New(t, openaifake.Options{Kind: openaifake.LlamaCpp})
	emb := openaifake.New(t, openaifake.Options{Kind: openaifake.LlamaCpp, APIKey: "embed-key", Embeddings: true})
	cfg := Config{Settings: settings(chat.URL, "qwen2.5"), AIEmbeddingModel: "nomic-embed-text",
		AIEmbeddingURL: emb.URL, AIEmbeddingKey: "embed-key"}
	if err := cfg.Check(time.Minute); err != nil {
		t.Fatalf("Check: %v", err)
	}
	e, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	docs := []assistant.Document{{DocumentID: 1, TopicID: 1, Title: "Password reset", Content: "Reset your password in Settings."},
		{DocumentID: 2, TopicID: 1, Title: "Invoices", Content: "Invoices are in Billing."}}
	ranked, prov, err := e.RankDocuments(context.Background(), "I forgot my password", docs)
	if err != nil || len(ranked) != 2 {
		t.Fatalf("RankDocuments = %v, %v", ranked, err)
	}
	if !strings.HasPrefix(prov.Model, "nomic-embed-text") {
		t.Fatalf("ranking provenance %+v: the embeddings were not used", prov)
	}
	if chat.Embeddings() != 0 || emb.Embeddings() != 1 {
		t.Fatalf("embedding requests: chat server %d, embedding server %d", chat.Embeddings(), emb.Embeddings())
	}
}

func TestCheckNamesTheVariable(t *testing.T) {
	cfg := Config{Settings: settings("", "")}
	cfg.AIServerKind, cfg.AIContextTokens = "tgi", -5
	err := cfg.Check(time.Minute)
	if err == nil || !strings.Contains(err.Error(), "AI_SERVER_KIND") || !strings.Contains(err.Error(), "AI_CONTEXT_TOKENS") {
		t.Fatalf("Check = %v, want errors naming AI_SERVER_KIND and AI_CONTEXT_TOKENS", err)
	}
}
