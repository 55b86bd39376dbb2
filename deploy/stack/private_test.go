package stack

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A private PostgreSQL keeps what it committed across a stop and a start,
// and refuses connections while it is stopped.
func TestPrivatePostgresStopStartKeepsData(t *testing.T) {
	pg, err := StartPrivatePostgres(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pg.Close(); err != nil {
			t.Error(err)
		}
	}()
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, pg.URL("postgres"))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('acknowledged')"); err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if pg.Running() {
		t.Fatal("Running after Stop")
	}
	if err := exec("SELECT 1"); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := pg.Start(t.Context()); err != nil {
		t.Fatalf("start again: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != "acknowledged" {
		t.Fatalf("after restart: %q, %v", v, err)
	}
	// The stack's infrastructure can be this server.
	in := LocalInfraAt(pg.URL("postgres"), "", "")
	name, err := in.CreateDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := in.DropDatabase(t.Context(), name); err != nil {
		t.Fatal(err)
	}
}

// A private Redis keeps what it acknowledged across a stop and a start.
func TestPrivateRedisStopStartKeepsData(t *testing.T) {
	r, err := StartPrivateRedis(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	if got := redisCommand(t, r.Addr, "SET revoked yes"); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if c, err := net.DialTimeout("tcp", r.Addr, time.Second); err == nil {
		c.Close()
		t.Fatal("a stopped server accepted a connection")
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatalf("start again: %v", err)
	}
	if got := redisCommand(t, r.Addr, "GET revoked"); got != "yes" {
		t.Fatalf("GET after restart: %q", got)
	}
}

// redisCommand sends an inline command and returns its answer: a status
// line, or the value of a bulk string.
func redisCommand(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "$") && line != "$-1" {
		v, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimRight(v, "\r\n")
	}
	return line
}
