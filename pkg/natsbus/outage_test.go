package natsbus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
)

// While NATS is down a request and a JetStream publish fail at once with
// Unavailable (not after the caller's whole deadline, sitting in the
// reconnect buffer), with a message that says nothing about NATS; once the
// server is back the same bus serves, answers and publishes again.
func TestOutageFailsFastAndHeals(t *testing.T) {
	srv := natstest.StartServer(t, nil)
	server, client := bus(t, srv.URL(), "out"), bus(t, srv.URL(), "out")
	if _, err := natsbus.Serve(server, "rpc.echo", "q", func(ctx context.Context, r echoReq) (echoResp, error) {
		return echoResp{Double: 2 * r.N}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := client.EnsureEventsStream(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	waitFor(t, "the client notices", func() bool { return !client.NC.IsConnected() })

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := natsbus.Request[echoReq, echoResp](ctx, client, "rpc.echo", echoReq{N: 1})
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("request while down: %v", err)
	}
	if msg := err.(*apperr.Error).Message; strings.Contains(strings.ToLower(msg), "nats") {
		t.Fatalf("client message names the internals: %q", msg)
	}
	err = client.PublishRaw(ctx, "events.x.y", "id-1", []byte(`{}`))
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("publish while down: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("failing took %s", d)
	}
	if err := client.Check(ctx); err == nil {
		t.Fatal("readiness passes while NATS is down")
	}

	srv.Start()
	waitFor(t, "both reconnect", func() bool { return client.NC.IsConnected() && server.NC.IsConnected() })
	// The responder's subscription is sent again on reconnect; a round trip
	// makes sure the server has it before the request (otherwise "no
	// responders", which a caller would retry).
	if err := server.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := natsbus.Request[echoReq, echoResp](ctx, client, "rpc.echo", echoReq{N: 21})
	if err != nil || got.Double != 42 {
		t.Fatalf("after the restart: %+v %v", got, err)
	}
	if err := client.PublishRaw(ctx, "events.x.y", "id-2", []byte(`{}`)); err != nil {
		t.Fatalf("publish after the restart: %v", err)
	}
	if err := client.Check(ctx); err != nil {
		t.Fatalf("readiness after the restart: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 15s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
