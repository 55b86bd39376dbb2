package auth

import (
	"context"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// BusEvents publishes the domain's events on the EVENTS stream.
type BusEvents struct{ Bus *natsbus.Bus }

// PasswordResetRequested publishes what a mail sender needs.
func (e BusEvents) PasswordResetRequested(ctx context.Context, customerID int64, a Account, token string, expires time.Time) error {
	return natsbus.PublishEvent(ctx, e.Bus, contracts.EventPasswordResetRequested, customerID, contracts.PasswordResetRequested{
		AccountID: a.ID, Email: a.Email, Name: a.Name, Token: token, ExpiresAt: expires.UTC(),
	})
}

// PasswordChanged announces that earlier tokens are void.
func (e BusEvents) PasswordChanged(ctx context.Context, customerID, accountID int64) error {
	return natsbus.PublishEvent(ctx, e.Bus, contracts.EventPasswordChanged, customerID, contracts.PasswordChanged{AccountID: accountID})
}
