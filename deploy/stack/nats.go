package stack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// NATSServerBin is the nats-server of Debian's package nats-server.
const NATSServerBin = "/usr/sbin/nats-server"

// natsNode is one nats-server of the stack: the only one, or one of a
// cluster's (natscluster.go).
type natsNode struct {
	name        string // server_name: nats-0, nats-1...
	clientAddr  string // host:port of clients
	clusterAddr string // host:port of routes; "" on a single server
	httpPort    int    // monitoring; 0 on a single server
	proc        *process
}

// startNATS runs the stack's own NATS on free loopback ports: one
// nats-server, or a cluster of nodes (three) with routes between them,
// JetStream on each, storing under DataDir/nats, and one user per service
// (plus the harness) whose random password lives only in the generated
// configuration and in that service's NATS_URL. A cluster is ready once its
// JetStream has a meta leader.
func (s *Stack) startNATS(ctx context.Context, names contracts.Names, nodes int) error {
	if nodes < 1 {
		nodes = 1
	}
	if nodes != 1 && nodes != contracts.ClusterReplicas {
		return fmt.Errorf("NATS nodes %d: want 1 or %d", nodes, contracts.ClusterReplicas)
	}
	if _, err := os.Stat(NATSServerBin); err != nil {
		if err := AptInstall(ctx, s.infra.Log, "nats-server"); err != nil {
			return err
		}
	}
	dir := filepath.Join(s.DataDir, "nats")
	for _, d := range []string{dir, filepath.Dir(s.LogFile("nats"))} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	s.natsPasswords = map[string]string{}
	users := ServiceNATSUsers(names, false, func(user string) string {
		s.natsPasswords[user] = randid.Hex(16)
		return s.natsPasswords[user]
	})
	s.natsPasswords[contracts.HarnessUser] = randid.Hex(16)
	users = append(users, NATSUser{Name: contracts.HarnessUser, Password: s.natsPasswords[contracts.HarnessUser],
		Permissions: names.HarnessPermissions()})

	if nodes == 1 {
		ports, err := freePorts(0)
		if err != nil {
			return err
		}
		n := &natsNode{name: "nats", clientAddr: "127.0.0.1:" + strconv.Itoa(ports[0])}
		cfg := NATSConfig{Listen: n.clientAddr, StoreDir: filepath.Join(dir, "jetstream"), Users: users}
		if err := s.startNATSNode(ctx, n, dir, cfg); err != nil {
			return err
		}
		s.natsNodes = []*natsNode{n}
	} else if err := s.startNATSCluster(ctx, dir, nodes, users); err != nil {
		return err
	}
	s.natsProc = s.natsNodes[0].proc
	s.natsAddr = s.natsNodes[0].clientAddr
	s.NATSURL = s.natsURL(contracts.HarnessUser)
	return nil
}

// startNATSNode writes n's configuration under dir and starts it; it
// returns once the server takes clients.
func (s *Stack) startNATSNode(ctx context.Context, n *natsNode, dir string, cfg NATSConfig) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, RenderNATSConfig(cfg), 0o600); err != nil {
		return err
	}
	p, err := startProcess(processSpec{
		name:    n.name,
		bin:     NATSServerBin,
		args:    []string{"-c", conf},
		dir:     dir,
		env:     baseEnv(),
		log:     s.log,
		logFile: s.LogFile(n.name),
		// nats-server exits 1 on SIGTERM and 0 on SIGINT.
		stopSignal: syscall.SIGINT,
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	n.proc = p
	s.mu.Unlock()
	return p.waitReady(ctx, 30*time.Second, func(ctx context.Context) error { return checkNATSAt(ctx, n.clientAddr) })
}

// stopNATS stops every node (Stop).
func (s *Stack) stopNATS() []error {
	s.mu.Lock()
	nodes := append([]*natsNode(nil), s.natsNodes...)
	single := s.natsProc
	s.mu.Unlock()
	if len(nodes) == 0 && single != nil {
		return []error{single.stop(15 * time.Second)}
	}
	var errs []error
	for _, n := range nodes {
		s.mu.Lock()
		p := n.proc
		if n.name == nodes[0].name && s.natsProc != nil {
			p = s.natsProc // restarted by StartNATS
		}
		s.mu.Unlock()
		if p != nil {
			errs = append(errs, p.stop(15*time.Second))
		}
	}
	return errs
}

// natsURL is the URL of the stack's NATS with user's credentials: every
// node's, comma-separated, on a cluster (nats.go tries them all and moves
// to another when its server goes away).
func (s *Stack) natsURL(user string) string {
	pw, ok := s.natsPasswords[user]
	if !ok {
		return ""
	}
	addrs := []string{s.natsAddr}
	if len(s.natsNodes) > 1 {
		addrs = addrs[:0]
		for _, n := range s.natsNodes {
			addrs = append(addrs, n.clientAddr)
		}
	}
	var urls []string
	for _, a := range addrs {
		u := url.URL{Scheme: "nats", User: url.UserPassword(user, pw), Host: a}
		urls = append(urls, u.String())
	}
	return strings.Join(urls, ",")
}

// NATSReplicas is the replica count the stack's services give their
// streams (NATS_REPLICAS): 3 on a cluster, 1 on one server.
func (s *Stack) NATSReplicas() int { return contracts.ReplicasFor(len(s.natsNodes)) }

// serviceNATSURL is the NATS_URL of a service: its own user.
func (s *Stack) serviceNATSURL(svc Service) (string, error) {
	if _, ok := contracts.LookupService(svc.Name); !ok {
		return "", fmt.Errorf("service %s has no NATS permissions: add it to contracts.Services", svc.Name)
	}
	if u := s.natsURL(svc.Name); u != "" {
		return u, nil
	}
	return "", errors.New("stack: NATS is not started")
}
