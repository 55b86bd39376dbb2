package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"supportplatform.dev/pkg/contracts"
)

// startNATSCluster starts nodes nats-servers (nats-0, nats-1...) on free
// loopback ports, each with its own configuration, JetStream store and
// monitoring port under dir/<name>, routes to every other, and the same
// account and users; it returns once every server agrees on a JetStream
// meta leader.
func (s *Stack) startNATSCluster(ctx context.Context, dir string, nodes int, users []NATSUser) error {
	ports, err := freePorts(make([]int, 3*nodes)...)
	if err != nil {
		return err
	}
	var routes []string
	for i := range nodes {
		n := &natsNode{name: "nats-" + strconv.Itoa(i),
			clientAddr:  "127.0.0.1:" + strconv.Itoa(ports[3*i]),
			clusterAddr: "127.0.0.1:" + strconv.Itoa(ports[3*i+1]),
			httpPort:    ports[3*i+2]}
		s.natsNodes = append(s.natsNodes, n)
		routes = append(routes, "nats-route://"+n.clusterAddr)
	}
	// Together: a server whose routes do not answer yet keeps trying them.
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i, n := range s.natsNodes {
		nodeDir := filepath.Join(dir, n.name)
		cfg := NATSConfig{ServerName: n.name, Listen: n.clientAddr, HTTPPort: n.httpPort,
			StoreDir: filepath.Join(nodeDir, "jetstream"), Users: users,
			Cluster: &NATSCluster{Name: NATSClusterName, Listen: n.clusterAddr, Routes: routes, Replicas: contracts.ReplicasFor(nodes)}}
		wg.Go(func() { errs[i] = s.startNATSNode(ctx, n, nodeDir, cfg) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return s.waitNATS(ctx, 60*time.Second, "a JetStream meta leader", func(ctx context.Context) error {
		_, err := s.NATSMetaLeader(ctx)
		return err
	})
}

// NATSNode describes one server of the stack's NATS.
type NATSNode struct {
	Name string // server_name (nats-0...; "nats" when single)
	// ClientURL is its client address without credentials.
	ClientURL string
	// MonitorURL is its monitoring endpoint (/jsz, /healthz); empty on a
	// single server.
	MonitorURL string
	Running    bool
	PID        int
}

// NATSNodes lists the stack's NATS servers.
func (s *Stack) NATSNodes() []NATSNode {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []NATSNode
	for _, n := range s.natsNodes {
		nn := NATSNode{Name: n.name, ClientURL: "nats://" + n.clientAddr}
		if n.httpPort != 0 {
			nn.MonitorURL = "http://127.0.0.1:" + strconv.Itoa(n.httpPort)
		}
		if n.proc != nil && !n.proc.exited() {
			nn.Running, nn.PID = true, n.proc.cmd.Process.Pid
		}
		out = append(out, nn)
	}
	return out
}

func (s *Stack) natsNode(name string) (*natsNode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.natsNodes {
		if n.name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("stack: no NATS node %q", name)
}

// KillNATSNode ends a NATS server with SIGKILL, as a crash would, and
// returns once it is gone. StartNATSNode brings it back.
func (s *Stack) KillNATSNode(name string) error {
	n, err := s.natsNode(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	p := n.proc
	s.mu.Unlock()
	if p == nil || p.exited() {
		return fmt.Errorf("stack: NATS node %s is not running", name)
	}
	p.mu.Lock()
	p.stopped = true // Stop does not report the kill
	p.mu.Unlock()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return nil
}

// StartNATSNode starts a killed NATS server again with its configuration
// and JetStream store, and waits until it takes clients and has caught up
// with the cluster (its /healthz answers 200).
func (s *Stack) StartNATSNode(ctx context.Context, name string) error {
	n, err := s.natsNode(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := n.proc
	s.mu.Unlock()
	if old == nil || !old.exited() {
		return fmt.Errorf("stack: NATS node %s is running", name)
	}
	p, err := startProcess(old.spec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	n.proc = p
	if n == s.natsNodes[0] {
		s.natsProc = p
	}
	s.mu.Unlock()
	if err := p.waitReady(ctx, 30*time.Second, func(ctx context.Context) error { return checkNATSAt(ctx, n.clientAddr) }); err != nil {
		return err
	}
	if n.httpPort == 0 {
		return nil
	}
	return s.waitNATS(ctx, 60*time.Second, name+" healthy", func(ctx context.Context) error {
		return checkStatus(ctx, "http://127.0.0.1:"+strconv.Itoa(n.httpPort)+"/healthz", http.StatusOK)
	})
}

// jsz is the part of a server's /jsz the harness reads.
type jsz struct {
	ServerID string `json:"server_id"`
	Meta     *struct {
		Name     string    `json:"name"`
		Leader   string    `json:"leader"`
		Size     int       `json:"cluster_size"`
		Replicas []jszPeer `json:"replicas"`
	} `json:"meta_cluster"`
	Accounts []struct {
		Name    string `json:"name"`
		Streams []struct {
			Name    string `json:"name"`
			Cluster *struct {
				Leader   string    `json:"leader"`
				Replicas []jszPeer `json:"replicas"`
			} `json:"cluster"`
		} `json:"stream_detail"`
	} `json:"account_details"`
}

// jszPeer is a peer of a Raft group other than its leader.
type jszPeer struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Offline bool   `json:"offline"`
}

func (p jszPeer) behind() bool { return !p.Current || p.Offline }

// getJSZ reads a running node's /jsz (with the accounts' streams).
func getJSZ(ctx context.Context, monitor string) (*jsz, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, monitor+"/jsz?accounts=true&streams=true&acc="+url.QueryEscape(NATSAccount), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/jsz: %s", monitor, resp.Status)
	}
	var j jsz
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&j); err != nil {
		return nil, fmt.Errorf("GET %s/jsz: %w", monitor, err)
	}
	return &j, nil
}

func (s *Stack) runningMonitors() []NATSNode {
	var out []NATSNode
	for _, n := range s.NATSNodes() {
		if n.Running && n.MonitorURL != "" {
			out = append(out, n)
		}
	}
	return out
}

// NATSMetaLeader is the name of the cluster's JetStream meta leader, once
// every running server names the same one and it runs.
func (s *Stack) NATSMetaLeader(ctx context.Context) (string, error) {
	nodes := s.runningMonitors()
	if len(nodes) == 0 {
		return "", errors.New("stack: no running NATS node with monitoring (a single server has no meta leader)")
	}
	leader := ""
	for _, n := range nodes {
		j, err := getJSZ(ctx, n.MonitorURL)
		if err != nil {
			return "", err
		}
		if j.Meta == nil || j.Meta.Leader == "" {
			return "", fmt.Errorf("%s knows no meta leader", n.Name)
		}
		if leader != "" && j.Meta.Leader != leader {
			return "", fmt.Errorf("%s names meta leader %s, another %s", n.Name, j.Meta.Leader, leader)
		}
		leader = j.Meta.Leader
	}
	// Right after a kill the others still name the dead leader.
	if !slices.ContainsFunc(nodes, func(n NATSNode) bool { return n.Name == leader }) {
		return "", fmt.Errorf("meta leader %s is not running", leader)
	}
	return leader, nil
}

// NATSStreamLeader is the name of the server leading stream (its full
// name, NATSPrefix included), as the running servers report it.
func (s *Stack) NATSStreamLeader(ctx context.Context, stream string) (string, error) {
	for _, n := range s.runningMonitors() {
		j, err := getJSZ(ctx, n.MonitorURL)
		if err != nil {
			return "", err
		}
		for _, a := range j.Accounts {
			for _, st := range a.Streams {
				if st.Name == stream && st.Cluster != nil && st.Cluster.Leader != "" {
					return st.Cluster.Leader, nil
				}
			}
		}
	}
	return "", fmt.Errorf("stack: no leader of stream %s known", stream)
}

// NATSClusterHealthy is nil when every NATS server runs and answers its
// /healthz (JetStream current), all name the same meta leader, each sees
// every other peer current, and every stream of the account has a leader
// and every one of its replicas current.
func (s *Stack) NATSClusterHealthy(ctx context.Context) error {
	nodes := s.NATSNodes()
	for _, n := range nodes {
		if !n.Running {
			return fmt.Errorf("%s is not running", n.Name)
		}
		if n.MonitorURL == "" {
			return nil // a single server: running is all
		}
		if err := checkStatus(ctx, n.MonitorURL+"/healthz", http.StatusOK); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	if _, err := s.NATSMetaLeader(ctx); err != nil {
		return err
	}
	for _, n := range nodes {
		j, err := getJSZ(ctx, n.MonitorURL)
		if err != nil {
			return err
		}
		if j.Meta.Size != len(nodes) {
			return fmt.Errorf("%s sees a cluster of %d", n.Name, j.Meta.Size)
		}
		// The leader lists the other peers (the others list none).
		if j.Meta.Leader == n.Name {
			if len(j.Meta.Replicas) != len(nodes)-1 || slices.ContainsFunc(j.Meta.Replicas, jszPeer.behind) {
				return fmt.Errorf("meta leader %s sees peers %+v", n.Name, j.Meta.Replicas)
			}
		}
		for _, a := range j.Accounts {
			for _, st := range a.Streams {
				if st.Cluster == nil || st.Cluster.Leader == "" {
					return fmt.Errorf("stream %s has no leader", st.Name)
				}
				if st.Cluster.Leader == n.Name && slices.ContainsFunc(st.Cluster.Replicas, jszPeer.behind) {
					return fmt.Errorf("stream %s: replicas %+v", st.Name, st.Cluster.Replicas)
				}
			}
		}
	}
	return nil
}

// waitNATS polls check until it passes or timeout ends.
func (s *Stack) waitNATS(ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nats: not %s within %s: %v", what, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
