package main

import (
	"context"
	"net/http"
	"strings"

	"supportplatform.dev/deploy/loadgen"
	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/randid"
)

// caseCustomers gives each case the environment of its customer: the demo
// customer's, or, for a case with a Customer, that of a customer made for
// it on first use (auth bootstrap) and signed in as its admin.
type caseCustomers struct {
	demo  *benchEnv
	http  *http.Client
	base  string
	stack *stack.Stack
	envs  map[string]*benchEnv // by Customer
}

func (cc *caseCustomers) env(ctx context.Context, customer string) (*benchEnv, error) {
	if customer == "" {
		return cc.demo, nil
	}
	if e, ok := cc.envs[customer]; ok {
		return e, nil
	}
	slug := strings.ToLower(strings.ReplaceAll(customer, " ", "-"))
	a := stack.Account{
		Customer: customer + " " + randid.Hex(3),
		Email:    "admin@" + slug + "-" + randid.Hex(3) + ".bench.test",
		Password: "pw-" + randid.Hex(12),
		Name:     customer + " admin",
	}
	if err := cc.stack.Bootstrap(ctx, a); err != nil {
		return nil, err
	}
	api := loadgen.NewClient(cc.http, cc.base)
	if err := api.Login(ctx, a.Email, a.Password); err != nil {
		return nil, err
	}
	e := *cc.demo
	e.API = api
	cc.envs[customer] = &e
	return &e, nil
}
