package main

import (
	"context"
	"testing"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/servicetest"
)

// SIGTERM while HTTP requests and NATS requests wait on a lock in
// PostgreSQL: every one of them is answered, and run returns nil with nothing
// logged at error level (no pool, Redis or NATS used after it was closed).
func TestShutdownFinishesInFlightCalls(t *testing.T) {
	servicetest.ShutdownTest(t, servicetest.ShutdownCase{
		Name:     "topics",
		Run:      run,
		HTTPLock: "topics.actions",
		RPCLock:  "topics.topics",
		HTTP: func(svc *servicetest.Service) servicetest.Call {
			return servicetest.Call{Method: "GET", Path: "/api/Actions?pageSize=5",
				Token: svc.Token(t, 77, authn.RoleAdmin), Want: 200}
		},
		RPC: func(ctx context.Context, c *servicetest.RPCClient) error {
			return servicetest.Ask[contracts.TopicNamesRequest, contracts.TopicNamesReply](ctx, c,
				contracts.RPCTopicNames, contracts.TopicNamesRequest{CustomerID: 77, TopicIDs: []int64{1, 2}})
		},
	})
}
