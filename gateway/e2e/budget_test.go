package e2e

import (
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/httpserver"
)

// The gateway's timeouts (deploy/stack, which does not import pkg) and the
// services' (pkg/httpserver, pkg/config) are one budget: each waiter waits
// longer than what it waits for, so a client gets the service's own answer.
func TestTimeoutBudgetAgrees(t *testing.T) {
	var common config.Common
	if err := config.Load(func(string) string { return "" }, &common); err != nil {
		t.Fatal(err)
	}
	if common.RequestTimeout != httpserver.DefaultRequestTimeout {
		t.Fatalf("REQUEST_TIMEOUT default %v, httpserver's %v", common.RequestTimeout, httpserver.DefaultRequestTimeout)
	}
	if stack.DefaultRequestTimeout != httpserver.DefaultRequestTimeout {
		t.Fatalf("stack's default budget %v, httpserver's %v", stack.DefaultRequestTimeout, httpserver.DefaultRequestTimeout)
	}
	for _, budget := range []time.Duration{time.Second, 30 * time.Second, common.RequestTimeout, 10 * time.Minute} {
		gw := stack.TimeoutsFor(budget)
		service := httpserver.WriteTimeout(budget)
		if gw.RequestTimeout() != budget || !(budget < service && service < gw.ResponseHeader && gw.ResponseHeader < gw.EntryRead && gw.ResponseHeader < gw.EntryWrite) {
			t.Errorf("budget %v: service write %v, gateway %+v", budget, service, gw)
		}
		if service-budget != httpserver.ResponseMargin {
			t.Errorf("budget %v: service write timeout %v, want budget + %v", budget, service, httpserver.ResponseMargin)
		}
	}
}
