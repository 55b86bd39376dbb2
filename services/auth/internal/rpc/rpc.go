// Package rpc answers the auth lookups other services make over NATS
// request/reply (queue group contracts.QueueAuth).
package rpc

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/auth/internal/auth"
)

// Lookups is what the responders call of the auth service.
type Lookups interface {
	CustomerExists(ctx context.Context, customerID int64) (bool, error)
	AccountsOf(ctx context.Context, customerID int64, accountIDs []int64) ([]auth.Account, error)
}

// Serve subscribes the responders. The bus keeps the subscriptions and
// drains them at shutdown (also after an error here).
func Serve(bus *natsbus.Bus, svc Lookups) error {
	var errs []error
	add := func(_ *nats.Subscription, err error) { errs = append(errs, err) }
	add(natsbus.Serve(bus, contracts.RPCCustomerExists, contracts.QueueAuth,
		func(ctx context.Context, req contracts.CustomerExistsRequest) (contracts.CustomerExistsReply, error) {
			ok, err := svc.CustomerExists(ctx, req.CustomerID)
			return contracts.CustomerExistsReply{Exists: ok}, err
		}))
	add(natsbus.Serve(bus, contracts.RPCAccounts, contracts.QueueAuth,
		func(ctx context.Context, req contracts.AccountsRequest) (contracts.AccountsReply, error) {
			as, err := svc.AccountsOf(ctx, req.CustomerID, req.AccountIDs)
			// paging.Map gives an empty list, not null, when nothing matched.
			return contracts.AccountsReply{Accounts: paging.Map(as, func(a auth.Account) contracts.AccountSummary {
				return contracts.AccountSummary{AccountID: a.ID, Name: a.Name, Email: a.Email, Role: a.Role, Available: a.Available}
			})}, err
		}))
	return errors.Join(errs...)
}
