package stack

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"supportplatform.dev/pkg/tcptest"

	"supportplatform.dev/pkg/randid"
)

// These run against the machine's real PostgreSQL, Redis and NATS (make
// test brings them up first).

func TestEnsureInfraAnswers(t *testing.T) {
	in := LocalInfra(testLog(t))
	if err := in.Ensure(t.Context()); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func(context.Context) error{
		"postgres": in.checkPostgres, "redis": in.checkRedis, "nats": in.checkNATS,
	} {
		if err := check(t.Context()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A port held by something that is not the expected server must not pass.
func TestInfraChecksRejectImpostors(t *testing.T) {
	addr := tcptest.Serve(t, func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\n\r\n")
		c.Close()
	})
	in := LocalInfra(nil)
	in.RedisAddr = addr
	in.NATSAddr = addr
	in.PostgresURL = "postgres://postgres@" + addr + "/postgres?sslmode=disable&connect_timeout=2"
	if err := in.checkRedis(t.Context()); err == nil {
		t.Error("redis check passed against a non-Redis server")
	}
	if err := in.checkNATS(t.Context()); err == nil {
		t.Error("nats check passed against a non-NATS server")
	}
	if err := in.checkPostgres(t.Context()); err == nil {
		t.Error("postgres check passed against a non-PostgreSQL server")
	}
}

func TestDatabaseLifecycle(t *testing.T) {
	in := LocalInfra(nil)
	ctx := t.Context()
	name, err := in.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, TestDatabasePrefix) {
		t.Errorf("name %q", name)
	}
	if ok, err := in.DatabaseExists(ctx, name); err != nil || !ok {
		t.Fatalf("created database missing: %v %v", ok, err)
	}
	if err := in.EnsureDatabase(ctx, name); err != nil {
		t.Errorf("EnsureDatabase on an existing database: %v", err)
	}
	if err := in.DropDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	if ok, err := in.DatabaseExists(ctx, name); err != nil || ok {
		t.Errorf("dropped database still exists: %v %v", ok, err)
	}

	ensured := TestDatabasePrefix + "ensure_" + randid.Hex(3)
	if err := in.EnsureDatabase(ctx, ensured); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.DropDatabase(context.Background(), ensured) })
	if ok, _ := in.DatabaseExists(ctx, ensured); !ok {
		t.Error("EnsureDatabase did not create the database")
	}
}

func TestDropDatabaseRefusesForeignNames(t *testing.T) {
	in := LocalInfra(nil)
	for _, name := range []string{"postgres", "support", "sp_e2e_x; DROP DATABASE postgres", "template1"} {
		if err := in.DropDatabase(t.Context(), name); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("DropDatabase(%q) = %v, want a refusal", name, err)
		}
	}
	if ok, err := in.DatabaseExists(t.Context(), "postgres"); err != nil || !ok {
		t.Fatalf("postgres database: %v %v", ok, err)
	}
}

func TestDatabaseURL(t *testing.T) {
	in := LocalInfra(nil)
	got := in.DatabaseURL("sp_e2e_abc")
	want := "postgres://postgres@127.0.0.1:5432/sp_e2e_abc?sslmode=disable"
	if got != want {
		t.Errorf("DatabaseURL = %s, want %s", got, want)
	}
}
