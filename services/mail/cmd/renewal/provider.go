package main

import (
	"net/http"
	"time"

	"supportplatform.dev/services/mail/internal/graph"
	"supportplatform.dev/services/mail/internal/mail"
)

// newProvider is Microsoft Graph through the app of GRAPH_*; without one,
// a provider that refuses every call (the job runs and reports the folders
// it cannot serve).
func newProvider(cfg Config, now func() time.Time) (mail.Provider, error) {
	return graph.NewMailProvider(cfg.Settings, &http.Client{}, now)
}
