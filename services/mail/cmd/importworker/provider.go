package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"supportplatform.dev/services/mail/internal/graph"
	"supportplatform.dev/services/mail/internal/importer"
)

// newGraph is Microsoft Graph through the app of GRAPH_*; without one,
// a Graph that refuses every call (imports fail and are retried).
//
// The mail calls of *graph.Client (messages.go) are being written in
// parallel: until they land, the client is checked at start for the
// methods importer.Graph needs. Once they have, this becomes the plain
// assignment `var g importer.Graph = c`, checked when compiling.
func newGraph(cfg Config, now func() time.Time) (importer.Graph, error) {
	if !cfg.Configured() {
		return unconfigured{}, nil
	}
	c, err := graph.New(graph.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.TokenURL,
		BaseURL: cfg.BaseURL, HTTPClient: &http.Client{Timeout: graph.DefaultTimeout}, Now: now})
	if err != nil {
		return nil, err
	}
	g, ok := any(c).(importer.Graph)
	if !ok {
		return nil, errors.New("this build's Graph client lacks the mail calls (MessagesDelta, Message, Attachments, AttachmentContent)")
	}
	return g, nil
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
