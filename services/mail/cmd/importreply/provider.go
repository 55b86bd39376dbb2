package main

import (
	"context"
	"io"
	"net/http"
	"time"

	"supportplatform.dev/services/mail/internal/graph"
)

// newGraph is Microsoft Graph through the app of GRAPH_*; without one,
// a Graph that refuses every call (imports and replies fail and are
// retried).
func newGraph(cfg Config, now func() time.Time, limiter graph.MailboxLimiter) (MailGraph, error) {
	if !cfg.Configured() {
		return unconfigured{}, nil
	}
	// No client-wide timeout: an attachment's bytes stream for as long as
	// they take; each call is bounded by its context (the import's, the
	// reply's send timeout) and the transport's dial and header timeouts.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = graph.DefaultTimeout
	return graph.New(graph.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.TokenURL,
		BaseURL: cfg.BaseURL, HTTPClient: &http.Client{Transport: transport}, Now: now, Limiter: limiter})
}

// unconfigured refuses every call with graph.ErrNotConfigured.
type unconfigured struct{}

func (unconfigured) MessagesDelta(context.Context, string, graph.DeltaQuery, string) (graph.DeltaPage, error) {
	return graph.DeltaPage{}, graph.ErrNotConfigured
}

func (unconfigured) Message(context.Context, string, string, string) (graph.Message, error) {
	return graph.Message{}, graph.ErrNotConfigured
}

func (unconfigured) Attachments(context.Context, string, string, string) ([]graph.Attachment, error) {
	return nil, graph.ErrNotConfigured
}

func (unconfigured) AttachmentContent(context.Context, string, string, string, string) (io.ReadCloser, error) {
	return nil, graph.ErrNotConfigured
}

func (unconfigured) Reply(context.Context, string, string, string, graph.OutgoingMail) error {
	return graph.ErrNotConfigured
}

func (unconfigured) SendMail(context.Context, string, string, graph.OutgoingMail) error {
	return graph.ErrNotConfigured
}
