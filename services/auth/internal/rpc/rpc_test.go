package rpc_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/ratelimit"
	"supportplatform.dev/pkg/redisconn"
	"supportplatform.dev/pkg/redistest"
	"supportplatform.dev/services/auth/internal/auth"
	"supportplatform.dev/services/auth/internal/postgres"
	"supportplatform.dev/services/auth/internal/rpc"
)

type env struct {
	bus *natsbus.Bus // the caller's connection (another service)
	svc *auth.Service
}

// setup runs the auth service's responders on an in-process NATS server,
// over a fresh database and a unique Redis prefix.
func setup(t *testing.T) env {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	url := natstest.Start(t)
	names := contracts.Names{Prefix: "rpctest"}

	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	rdb, err := redisconn.Open(ctx, redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	prefix := "authrpctest:" + randid.Hex(6) + ":"
	t.Cleanup(func() {
		if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		_ = rdb.Close()
	})
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := auth.NewService(auth.Deps{
		Store:   postgres.New(pool),
		Signer:  auth.NewSigner(key, "test-issuer", "test-audience", time.Hour),
		Revoker: authn.NewRevocations(rdb, prefix),
		Limits: auth.Limits{
			LoginByEmailIP: ratelimit.NewAttempts(rdb, prefix, 5, time.Minute, auth.LoginPending),
			LoginByIP:      ratelimit.NewAttempts(rdb, prefix, 50, time.Minute, auth.LoginPending),
			LoginBackoff:   ratelimit.NewBackoff(rdb, prefix, 5, time.Second, time.Minute, time.Minute),
			CreateAccount:  ratelimit.New(rdb, prefix, 20, time.Minute),
			ResetByEmail:   ratelimit.New(rdb, prefix, 5, time.Minute),
		},
		Log: log,
		Now: time.Now,
	})
	if err != nil {
		t.Fatal(err)
	}

	server, err := natsbus.Connect(url, "auth", names, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.NC.Close() })
	if err := rpc.Serve(server, svc); err != nil {
		t.Fatal(err)
	}
	client, err := natsbus.Connect(url, "caller", names, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.NC.Close() })
	return env{bus: client, svc: svc}
}

// customer bootstraps a customer and returns its admin's principal.
func (e env) customer(t *testing.T, name string) authn.Principal {
	t.Helper()
	c, a, err := e.svc.Bootstrap(context.Background(), name, "admin-"+randid.Hex(4)+"@example.test", "Admin "+name, "correct horse battery", "")
	if err != nil {
		t.Fatal(err)
	}
	return authn.Principal{CustomerID: c.ID, AccountID: a.ID, Role: authn.RoleAdmin}
}

// account adds an account of role to admin's customer and returns it with
// its principal.
func (e env) account(t *testing.T, admin authn.Principal, name, role string) (auth.Account, authn.Principal) {
	t.Helper()
	a, err := e.svc.CreateAccount(context.Background(), admin, auth.NewAccount{
		Email: name + "-" + randid.Hex(4) + "@example.test", Name: name, Role: role, Password: "correct horse battery"})
	if err != nil {
		t.Fatal(err)
	}
	return a, authn.Principal{CustomerID: a.CustomerID, AccountID: a.ID, Role: role}
}

func (e env) accounts(t *testing.T, req contracts.AccountsRequest) ([]contracts.AccountSummary, error) {
	t.Helper()
	r, err := natsbus.Request[contracts.AccountsRequest, contracts.AccountsReply](context.Background(), e.bus, contracts.RPCAccounts, req)
	return r.Accounts, err
}

func TestAccounts(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	admin := e.customer(t, "Acme")
	other := e.customer(t, "Beta")
	agent, agentP := e.account(t, admin, "Agent", authn.RoleAgent)
	bot, botP := e.account(t, admin, "Bot", authn.RoleIntegration)
	foreignAgent, _ := e.account(t, other, "Foreign", authn.RoleAgent)
	for _, p := range []authn.Principal{agentP, botP} {
		if err := e.svc.SetAvailability(ctx, p, true); err != nil {
			t.Fatal(err)
		}
	}
	_, adminA, err := e.svc.Me(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}

	summary := func(a auth.Account, available bool) contracts.AccountSummary {
		return contracts.AccountSummary{AccountID: a.ID, Name: a.Name, Email: a.Email, Role: a.Role, Available: available}
	}
	cases := []struct {
		name string
		req  contracts.AccountsRequest
		want []contracts.AccountSummary
	}{
		{"no ids: the admins and agents", contracts.AccountsRequest{CustomerID: admin.CustomerID},
			[]contracts.AccountSummary{summary(adminA, false), summary(agent, true)}},
		{"ids of any role", contracts.AccountsRequest{CustomerID: admin.CustomerID, AccountIDs: []int64{bot.ID, agent.ID}},
			[]contracts.AccountSummary{summary(agent, true), summary(bot, true)}},
		{"another customer's and unknown ids are absent", contracts.AccountsRequest{CustomerID: admin.CustomerID,
			AccountIDs: []int64{foreignAgent.ID, other.AccountID, 1 << 60, agent.ID}},
			[]contracts.AccountSummary{summary(agent, true)}},
		{"the other customer asking for ours", contracts.AccountsRequest{CustomerID: other.CustomerID,
			AccountIDs: []int64{agent.ID, admin.AccountID}}, []contracts.AccountSummary{}},
		{"an unknown customer", contracts.AccountsRequest{CustomerID: 1 << 60}, []contracts.AccountSummary{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.accounts(t, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || len(got) != len(tc.want) {
				t.Fatalf("accounts = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("accounts = %+v, want %+v", got, tc.want)
				}
			}
		})
	}

	t.Run("availability changes are seen", func(t *testing.T) {
		if err := e.svc.SetAvailability(ctx, agentP, false); err != nil {
			t.Fatal(err)
		}
		got, err := e.accounts(t, contracts.AccountsRequest{CustomerID: admin.CustomerID, AccountIDs: []int64{agent.ID}})
		if err != nil || len(got) != 1 || got[0].Available {
			t.Fatalf("accounts = %+v, %v", got, err)
		}
	})

	t.Run("invalid requests are application errors", func(t *testing.T) {
		for name, req := range map[string]contracts.AccountsRequest{
			"no customer":  {},
			"too many ids": {CustomerID: admin.CustomerID, AccountIDs: make([]int64, contracts.MaxAccountIDs+1)},
		} {
			if _, err := e.accounts(t, req); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("%s: err = %v", name, err)
			}
		}
		// A malformed payload is answered, not dropped.
		msg, err := e.bus.NC.Request(e.bus.Names.Subject(contracts.RPCAccounts), []byte("{not json"), 5*time.Second)
		if err != nil || !json.Valid(msg.Data) {
			t.Fatalf("reply = %v, %v", msg, err)
		}
	})

	t.Run("customer exists", func(t *testing.T) {
		for id, want := range map[int64]bool{admin.CustomerID: true, 1 << 60: false} {
			r, err := natsbus.Request[contracts.CustomerExistsRequest, contracts.CustomerExistsReply](ctx, e.bus,
				contracts.RPCCustomerExists, contracts.CustomerExistsRequest{CustomerID: id})
			if err != nil || r.Exists != want {
				t.Fatalf("customer %d exists = %+v, %v; want %v", id, r, err, want)
			}
		}
	})
}

// TestQueueGroup shows two replicas share the subject: each request is
// answered once.
func TestQueueGroup(t *testing.T) {
	e := setup(t)
	if err := rpc.Serve(e.bus, e.svc); err != nil {
		t.Fatal(err)
	}
	inbox := nats.NewInbox()
	replies, err := e.bus.NC.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(contracts.AccountsRequest{CustomerID: 1})
	if err := e.bus.NC.PublishRequest(e.bus.Names.Subject(contracts.RPCAccounts), inbox, body); err != nil {
		t.Fatal(err)
	}
	if _, err := replies.NextMsg(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := replies.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatal("a request was answered twice")
	}
}
