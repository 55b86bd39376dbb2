package redisconn_test

import (
	"context"
	"io"
	"net"
	"os/exec"
	"testing"
	"time"

	"supportplatform.dev/pkg/tcptest"

	"supportplatform.dev/pkg/redisconn"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startRedis runs a redis-server of the test's own on addr (the shared one
// must never be stopped) and returns a function that stops it.
func startRedis(t *testing.T, addr string) func() {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not start", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// While Redis is down a command fails within a second or so (not after
// go-redis's default dial and read timeouts, each retried), and once Redis
// is back the same client works again without being reopened.
func TestCommandsFailFastAndRecover(t *testing.T) {
	addr := freeAddr(t)
	stop := startRedis(t, addr)
	ctx := context.Background()
	c, err := redisconn.Open(ctx, "redis://"+addr+"/0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	stop()
	for i := range 5 {
		start := time.Now()
		err := c.Get(ctx, "k").Err()
		if err == nil {
			t.Fatal("a stopped Redis answered")
		}
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Fatalf("command %d failed after %s: %v", i, d, err)
		}
	}
	startRedis(t, addr)
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the client did not reconnect")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A server that accepts and never answers costs a command its read
// timeout (with one retry), not the defaults' 4 x 3 s.
func TestHangingServerTimesOut(t *testing.T) {
	addr := tcptest.Serve(t, func(c net.Conn) {
		_, _ = io.Copy(io.Discard, c) // reads, never answers
		c.Close()
	})
	start := time.Now()
	_, err := redisconn.Open(context.Background(), "redis://"+addr+"/0")
	if err == nil {
		t.Fatal("Open succeeded against a silent server")
	}
	if d := time.Since(start); d > 2*redisconn.ReadTimeout+time.Second {
		t.Fatalf("took %s: %v", d, err)
	}
}
