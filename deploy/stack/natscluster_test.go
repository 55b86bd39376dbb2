package stack

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// A three-node stack NATS: every node takes the same users with the same
// permissions, the harness's URL lists all three, the account's limits
// count the three copies of each stream, and the cluster survives its meta
// leader's SIGKILL: another is elected, the killed node comes back and the
// cluster is healthy again.
func TestStackNATSCluster(t *testing.T) {
	names := contracts.Names{Prefix: "tc" + randid.Hex(3)}
	s := &Stack{DataDir: t.TempDir(), infra: LocalInfra(testLog(t)), log: testLog(t)}
	if err := s.startNATS(t.Context(), names, 3); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, err := range s.stopNATS() {
			if err != nil {
				t.Errorf("stop: %v", err)
			}
		}
	}()
	if s.NATSReplicas() != 3 {
		t.Fatalf("replicas %d", s.NATSReplicas())
	}
	urls := strings.Split(s.NATSURL, ",")
	nodes := s.NATSNodes()
	if len(urls) != 3 || len(nodes) != 3 {
		t.Fatalf("NATSURL %d URLs, %d nodes", len(urls), len(nodes))
	}
	for i, n := range nodes {
		conf, err := os.ReadFile(filepath.Join(s.DataDir, "nats", n.Name, "nats.conf"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(conf), `server_name: "`+n.Name+`"`) || !strings.Contains(string(conf), "routes: [") {
			t.Fatalf("%s's configuration:\n%s", n.Name, conf)
		}
		u, err := url.Parse(urls[i])
		if err != nil || "nats://"+u.Host != n.ClientURL {
			t.Fatalf("URL %d is %v, node %s", i, u, n.ClientURL)
		}
		// The same permissions on every node.
		topicsEvent := names.Subject(contracts.EventSubject(contracts.EventTopicDeleted))
		for user, want := range map[string]string{"topics": "PONG", "auth": "-ERR 'Permissions Violation for Publish"} {
			pw := s.natsPasswords[user]
			sess, login := dialNATS(t, (&url.URL{Scheme: "nats", User: url.UserPassword(user, pw), Host: u.Host}).String())
			if login != "PONG" {
				t.Fatalf("login as %s on %s: %s", user, n.Name, login)
			}
			if got := sess.send(t, "PUB "+topicsEvent+" 2\r\nhi\r\n"); !strings.HasPrefix(got, want) {
				t.Fatalf("%s publishes on %s: %s, want %s", user, n.Name, got, want)
			}
		}
	}

	sess, login := dialNATS(t, urls[1])
	if login != "PONG" {
		t.Fatalf("harness login: %s", login)
	}
	var info struct {
		Limits struct {
			MaxStorage int64 `json:"max_storage"`
		} `json:"limits"`
	}
	if err := json.Unmarshal([]byte(sess.request(t, "$JS.API.INFO", "")), &info); err != nil {
		t.Fatal(err)
	}
	if want := 3 * DefaultJetStreamLimits.MaxFile; info.Limits.MaxStorage != want {
		t.Fatalf("account storage %d, want %d (three copies)", info.Limits.MaxStorage, want)
	}
	stream := names.Stream("CLUSTERED")
	reply := sess.request(t, "$JS.API.STREAM.CREATE."+stream,
		`{"name":"`+stream+`","subjects":["`+names.Subject("clustered.>")+`"],"storage":"file","num_replicas":3,"max_bytes":1048576}`)
	if strings.Contains(reply, `"error"`) {
		t.Fatalf("a three-replica stream: %s", reply)
	}
	ctx := t.Context()
	if err := s.waitNATS(ctx, 30*time.Second, "healthy", s.NATSClusterHealthy); err != nil {
		t.Fatal(err)
	}
	leader, err := s.NATSMetaLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	streamLeader, err := s.NATSStreamLeader(ctx, stream)
	if err != nil || !strings.HasPrefix(streamLeader, "nats-") {
		t.Fatalf("stream leader %q: %v", streamLeader, err)
	}
	if err := s.KillNATSNode(leader); err != nil {
		t.Fatal(err)
	}
	if err := s.NATSClusterHealthy(ctx); err == nil {
		t.Fatal("healthy with a node killed")
	}
	var next string
	if err := s.waitNATS(ctx, 30*time.Second, "a new meta leader", func(ctx context.Context) error {
		next, err = s.NATSMetaLeader(ctx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("meta leader is still the killed %s", leader)
	}
	if err := s.StartNATSNode(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if err := s.waitNATS(ctx, 60*time.Second, "healthy after the restart", s.NATSClusterHealthy); err != nil {
		t.Fatal(err)
	}
}

// The rendered cluster configuration is one nats-server accepts.
func TestRenderNATSClusterConfigIsValid(t *testing.T) {
	dir := t.TempDir()
	cfg := RenderNATSConfig(NATSConfig{ServerName: "nats-1", Listen: "127.0.0.1:4222", HTTPPort: 8222, StoreDir: dir,
		Users:   []NATSUser{{Name: "auth", Password: "pw", Permissions: contracts.Permissions{Publish: []string{"a.>"}, Subscribe: []string{"b.>"}}}},
		Cluster: &NATSCluster{Name: NATSClusterName, Listen: "127.0.0.1:6222", Routes: []string{"nats-route://127.0.0.1:6222", "nats-route://127.0.0.1:6223"}, Replicas: 3}})
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(NATSServerBin, "-t", "-c", path).CombinedOutput(); err != nil {
		t.Fatalf("nats-server -t: %v\n%s\n%s", err, out, cfg)
	}
}

// Only one server or a cluster of three: two could not elect a leader
// after losing one.
func TestStackNATSNodesMustBeOneOrThree(t *testing.T) {
	s := &Stack{DataDir: t.TempDir(), infra: LocalInfra(testLog(t)), log: testLog(t)}
	for _, n := range []int{2, 4} {
		if err := s.startNATS(t.Context(), contracts.Names{Prefix: "tx"}, n); err == nil || !strings.Contains(err.Error(), "want 1 or 3") {
			t.Errorf("%d nodes: %v", n, err)
		}
	}
}
