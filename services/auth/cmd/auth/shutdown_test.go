package main

import (
	"context"
	"testing"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/servicetest"
)

// SIGTERM while account listings wait on auth.accounts and customer lookups
// (RPC) on auth.customers: every call is answered, run returns only after the
// RPCs, and nothing is logged at error level.
func TestShutdownFinishesInFlightCalls(t *testing.T) {
	servicetest.ShutdownTest(t, servicetest.ShutdownCase{
		Name: "auth",
		Run:  run,
		Options: servicetest.Options{Env: map[string]string{
			"AUTH_DEV_KEYGEN":       "true",
			"AUTH_SIGNING_KEY_FILE": t.TempDir() + "/key.pem",
		}},
		HTTPLock: "auth.accounts",
		RPCLock:  "auth.customers",
		HTTP: func(svc *servicetest.Service) servicetest.Call {
			return servicetest.Call{Method: "GET", Path: "/api/Accounts", Token: svc.Token(t, 77, authn.RoleAdmin), Want: 200}
		},
		RPC: func(ctx context.Context, c *servicetest.RPCClient) error {
			return servicetest.Ask[contracts.CustomerExistsRequest, contracts.CustomerExistsReply](ctx, c,
				contracts.RPCCustomerExists, contracts.CustomerExistsRequest{CustomerID: 77})
		},
	})
}
