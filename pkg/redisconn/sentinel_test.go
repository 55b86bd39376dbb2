package redisconn_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/redisconn"
)

// startSentinel runs a Redis Sentinel of the test's own on addr watching
// the master "sp" at masterAddr (quorum 1, down after 500 ms).
func startSentinel(t *testing.T, addr, masterAddr string) {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	mhost, mport, _ := net.SplitHostPort(masterAddr)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	// Sentinel rewrites its file: it must be writable.
	if err := os.WriteFile(conf, fmt.Appendf(nil, "port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor sp %s %s 1\n"+
		"sentinel down-after-milliseconds sp 500\nsentinel failover-timeout sp 5000\n", port, dir, mhost, mport), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis sentinel: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel on %s did not start", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A REDIS_URL with master_name goes through Redis Sentinel: the client
// finds the master, and after the master dies and the sentinel promotes
// the replica, the same client writes to the new master.
func TestSentinelFailover(t *testing.T) {
	master, replica, sentinel := freeAddr(t), freeAddr(t), freeAddr(t)
	stopMaster := startRedis(t, master)
	startRedis(t, replica)
	_, mport, _ := net.SplitHostPort(master)
	if out, err := exec.Command("redis-cli", "-p", strings.Split(replica, ":")[1], "REPLICAOF", "127.0.0.1", mport).CombinedOutput(); err != nil {
		t.Fatalf("replicaof: %v %s", err, out)
	}
	startSentinel(t, sentinel, master)

	c, err := redisconn.Open(t.Context(), "redis://"+sentinel+"/0?master_name=sp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	port := func() string {
		info, err := c.Info(t.Context(), "server").Result()
		if err != nil {
			return "error: " + err.Error()
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tcp_port:"); ok {
				return v
			}
		}
		return ""
	}
	if got := port(); got != mport {
		t.Fatalf("the client talks to port %s, want the master's %s", got, mport)
	}
	if err := c.Set(t.Context(), "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}

	stopMaster()
	_, rport, _ := net.SplitHostPort(replica)
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.Set(t.Context(), "k", "after", 0).Err()
		if err == nil && port() == rport {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write to the promoted replica within 60 s: %v (port %s)", err, port())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v, err := c.Get(t.Context(), "k").Result(); err != nil || v != "after" {
		t.Fatalf("get after failover: %q %v", v, err)
	}
}

func TestFailoverURLErrors(t *testing.T) {
	for _, u := range []string{"redis://127.0.0.1:1/0?master_name=sp&bogus=1", "redis://127.0.0.1:1/0?master_name=sp&addr=nohostport"} {
		if _, err := redisconn.Open(t.Context(), u); err == nil || !strings.Contains(err.Error(), "parse url") {
			t.Errorf("Open(%q) = %v, want a parse error", u, err)
		}
	}
}
