// Package assistant is the AI assistant of the tickets context: topic
// detection, prompt documents, prepared replies and ticket summaries behind
// one Engine interface with two real implementations, the offline engine
// (package offline: BM25, extractive, deterministic, no network) and any
// OpenAI-compatible server (package llm, falling back to the offline engine).
// The assistant binary (cmd/assistant) runs them on new messages; the
// tickets API uses them for the summary and the current prompt-document
// ranking.
package assistant

import "context"

// Provenance names what produced a result; every stored AI result keeps it.
type Provenance struct {
	// Engine is "offline" or "openai-compatible".
	Engine string `json:"engine"`
	// Model is the model ("bm25-v1" for the offline engine, the server's
	// model name otherwise).
	Model string `json:"model"`
}

// Document is a knowledge document linked to a topic (topics' TopicDocuments).
type Document struct {
	DocumentID int64
	TopicID    int64
	Title      string
	Content    string
	// Relevance is the link's relevance score from TopicDocuments (higher
	// is more relevant).
	Relevance int
}

// Topic is one live topic of the customer, with the documents linked to it
// (their text helps recognise it).
type Topic struct {
	TopicID     int64
	Name        string
	Description string
	Documents   []Document
}

// TopicScore is a topic's score for a text, in [0, 1], comparable across
// calls of one engine (the assignment threshold applies to it).
type TopicScore struct {
	TopicID int64
	Score   float64
}

// RankedDocument is a document with its similarity to a text, in [0, 1].
type RankedDocument struct {
	Document
	Score float64
}

// Turn is one message of a conversation.
type Turn struct {
	// SenderType is EndUser, Agent, AI or System.
	SenderType string
	Text       string
}

// ReplyRequest is what a prepared reply is written from.
type ReplyRequest struct {
	// Message is the end user's message being answered; History the
	// ticket's earlier messages, oldest first.
	Message string
	Subject string
	History []Turn
	// EndUserName addresses the reply; Language is the end user's language
	// (ISO 639-1), which the reply is written in.
	EndUserName string
	Language    string
	// Documents are the prompt documents, best first, already cut to the
	// token budget.
	Documents []RankedDocument
}

// Reply is a prepared reply. Text "" means no reply is prepared (the
// engine could not ground one in the documents: it invents nothing).
type Reply struct {
	Text     string
	Language string
	// DocumentIDs are the documents the reply draws on.
	DocumentIDs []int64
}

// Engine is one implementation of the assistant's work. Every method
// reports what produced its result (a fallback engine reports itself).
type Engine interface {
	// DetectTopics scores every topic for text (the message's text); the
	// result has one entry per topic, best first.
	DetectTopics(ctx context.Context, text string, topics []Topic) ([]TopicScore, Provenance, error)
	// RankDocuments orders docs by similarity to text, best first.
	RankDocuments(ctx context.Context, text string, docs []Document) ([]RankedDocument, Provenance, error)
	// PrepareReply writes the reply to the end user's message.
	PrepareReply(ctx context.Context, r ReplyRequest) (Reply, Provenance, error)
	// Summarize tells a ticket's conversation in a few sentences.
	Summarize(ctx context.Context, subject, status string, turns []Turn) (string, Provenance, error)
}

// Policy of the assistant (documented in services/tickets/README.md).
const (
	// TopicThreshold is the score a topic needs to be assigned automatically.
	TopicThreshold = 0.35
	// MaxAutoTopics is how many topics detection assigns at most.
	MaxAutoTopics = 3
	// PromptDocuments is how many documents a reply is grounded in at most.
	PromptDocuments = 3
	// PromptTokenBudget bounds the prompt documents' text (about 4
	// characters a token).
	PromptTokenBudget = 1500
)
