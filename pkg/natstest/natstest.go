// Package natstest runs an in-process NATS server with JetStream for tests.
package natstest

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// Start runs a JetStream-enabled server on a free port, without
// authentication, and returns its URL.
func Start(t testing.TB) string {
	t.Helper()
	return start(t, &server.Options{})
}

// StartWithUsers runs a JetStream-enabled server that accepts only the
// users of contracts.Services, each with the permissions the table gives it
// under names' prefix, and contracts.HarnessUser. It returns each user's URL,
// credentials included, by user name.
func StartWithUsers(t testing.TB, names contracts.Names) map[string]string {
	t.Helper()
	opts := &server.Options{}
	passwords := map[string]string{}
	add := func(user string, p contracts.Permissions) {
		passwords[user] = randomPassword()
		opts.Users = append(opts.Users, &server.User{Username: user, Password: passwords[user], Permissions: ServerPermissions(p)})
	}
	for _, s := range contracts.Services {
		add(s.Name, names.Permissions(s))
	}
	add(contracts.HarnessUser, names.HarnessPermissions())
	base, err := url.Parse(start(t, opts))
	if err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{}
	for user, pw := range passwords {
		u := *base
		u.User = url.UserPassword(user, pw)
		urls[user] = u.String()
	}
	return urls
}

// ServerPermissions converts the table's permissions to nats-server's.
func ServerPermissions(p contracts.Permissions) *server.Permissions {
	sp := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: p.Publish, Deny: p.PublishDeny},
		Subscribe: &server.SubjectPermission{Allow: p.Subscribe},
	}
	if p.AllowResponses {
		sp.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	}
	return sp
}

func start(t testing.TB, opts *server.Options) string {
	t.Helper()
	return StartServer(t, opts).URL()
}

// Server is an in-process JetStream server a test can stop and start again
// on the same port with the same storage (NATS going down and coming back).
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
}

// StartServer runs a JetStream-enabled server on a free port with opts
// (users, permissions) and stops it when the test ends.
func StartServer(t testing.TB, opts *server.Options) *Server {
	t.Helper()
	if opts == nil {
		opts = &server.Options{}
	}
	o := *opts
	o.Host, o.Port = "127.0.0.1", -1
	o.JetStream, o.StoreDir = true, t.TempDir()
	if o.JetStreamMaxStore == 0 {
		// The streams' max_bytes (contracts.Limits) are reserved against
		// this, by default 75% of the free disk: a test should not depend
		// on the machine's disk. Nothing is allocated up front.
		o.JetStreamMaxStore = 1 << 40
	}
	o.NoLog, o.NoSigs = true, true
	s := &Server{t: t, opts: o}
	s.Start()
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's client URL (the same across restarts).
func (s *Server) URL() string {
	return "nats://" + net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port))
}

// Start starts the server again after Stop (the first start is StartServer's).
func (s *Server) Start() {
	s.t.Helper()
	opts := s.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		s.t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		s.t.Fatal("nats server did not start")
	}
	s.srv = srv
}

// Stop shuts the server down and waits until it is gone; a second Stop does
// nothing.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

func randomPassword() string { return randid.Hex(16) }

// Cluster is an in-process JetStream cluster of servers with routes between
// them, each with its own storage; a test stops and starts its servers (a
// node lost and back).
type Cluster struct {
	Servers []*Server
}

// StartCluster runs n JetStream servers in a cluster on free ports, with
// opts (users, permissions) on each, and waits until the cluster has a
// JetStream meta leader. They stop when the test ends.
func StartCluster(t testing.TB, n int, opts *server.Options) *Cluster {
	t.Helper()
	if opts == nil {
		opts = &server.Options{}
	}
	// The ports are free when chosen, not when the servers bind them: a
	// test running beside this one may take one in between. A cluster
	// whose server does not come up is stopped and started again on other
	// ports.
	for attempt := 1; ; attempt++ {
		c, ok := startCluster(t, n, opts)
		if ok {
			c.WaitLeader(t)
			return c
		}
		for _, s := range c.Servers {
			s.Stop()
		}
		if attempt == 3 {
			t.Fatal("nats cluster server did not start (three attempts)")
		}
	}
}

// startCluster starts n servers on free ports and reports whether each is
// ready for connections within 10 s.
func startCluster(t testing.TB, n int, opts *server.Options) (*Cluster, bool) {
	t.Helper()
	// One call, so that no port is both a client's and a route's.
	ports := freePorts(t, 2*n)
	clientPorts, routePorts := ports[:n], ports[n:]
	var routes []*url.URL
	for _, p := range routePorts {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p))})
	}
	c := &Cluster{}
	for i := range n {
		o := *opts
		o.ServerName = "n" + strconv.Itoa(i)
		o.Host, o.Port = "127.0.0.1", clientPorts[i]
		o.Cluster = server.ClusterOpts{Name: "test", Host: "127.0.0.1", Port: routePorts[i]}
		o.Routes = routes
		o.JetStream, o.StoreDir = true, t.TempDir()
		o.JetStreamMaxStore = 1 << 40
		o.NoLog, o.NoSigs = true, true
		s := &Server{t: t, opts: o}
		srv, err := server.NewServer(&s.opts)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Start()
		s.srv = srv
		t.Cleanup(s.Stop)
		c.Servers = append(c.Servers, s)
	}
	for _, s := range c.Servers {
		if !s.srv.ReadyForConnections(10 * time.Second) {
			return c, false
		}
	}
	return c, true
}

// URLs is every server's client URL, comma-separated (a NATS_URL).
func (c *Cluster) URLs() string {
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.URL())
	}
	return strings.Join(out, ",")
}

// WaitLeader waits until a running server knows a JetStream meta leader.
func (c *Cluster) WaitLeader(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range c.Servers {
			if s.srv != nil && s.srv.JetStreamIsLeader() {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("nats cluster: no meta leader within 30s")
}

// Running reports whether the server runs (Stop not called since Start).
func (s *Server) Running() bool { return s.srv != nil }

// Name is the server's name (server_name).
func (s *Server) Name() string { return s.opts.ServerName }

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
