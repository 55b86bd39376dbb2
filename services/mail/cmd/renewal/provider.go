package main

import (
	"errors"
	"time"

	"supportplatform.dev/services/mail/internal/mail"
)

// newProvider builds the Microsoft Graph subscription API from the config:
// the adapter from the graph client (services/mail/internal/graph) to
// mail.Provider goes here. Until it is wired, run refuses to start rather
// than renew nothing.
func newProvider(cfg Config, now func() time.Time) (mail.Provider, error) {
	_ = cfg
	_ = now
	return nil, errors.New("no Microsoft Graph client is wired into this build yet")
}
