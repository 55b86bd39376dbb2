package natsbus_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// NATS_URL carries the service's password; a failed connect must not put it
// into the error that ends up in the log.
func TestConnectErrorHidesPassword(t *testing.T) {
	_, err := natsbus.Connect("nats://auth:s3cret-pw@127.0.0.1:1", "test", contracts.Names{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		t.Fatal("connect to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("error %q", err)
	}
}

// A cluster's NATS_URL lists every server with its credentials.
func TestConnectErrorHidesEveryServersPassword(t *testing.T) {
	_, err := natsbus.Connect("nats://auth:s3cret-one@127.0.0.1:1,nats://auth:s3cret-two@127.0.0.1:2", "test", contracts.Names{},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		t.Fatal("connect to closed ports succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %q", err)
	}
}
