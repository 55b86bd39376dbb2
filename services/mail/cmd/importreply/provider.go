package main

import (
	"net/http"
	"time"

	"supportplatform.dev/services/mail/internal/graph"
)

// newGraph is Microsoft Graph through the app of GRAPH_*: one client, so
// one token cache and one mailbox limit, for the imports and the replies.
// Without an app, graph.Unconfigured (imports and replies fail and are
// retried).
func newGraph(cfg Config, now func() time.Time, limiter graph.MailboxLimiter) (MailGraph, error) {
	if !cfg.Configured() {
		return graph.Unconfigured{}, nil
	}
	// No client-wide timeout: an attachment's bytes stream for as long as
	// they take; each call is bounded by its context (the import's, the
	// reply's send timeout) and the transport's dial and header timeouts.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = graph.DefaultTimeout
	c, err := graph.New(graph.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.TokenURL,
		BaseURL: cfg.BaseURL, HTTPClient: &http.Client{Transport: transport}, Now: now, Limiter: limiter})
	if err != nil {
		return nil, err
	}
	return mailGraph{graph.NewImportSource(c), graph.NewReplySender(c)}, nil
}

// mailGraph is both sides of one client.
type mailGraph struct {
	graph.ImportSource
	graph.ReplySender
}
