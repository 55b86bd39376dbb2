package stack

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// Every service the stack starts has NATS permissions, except the
// standalone ones, which have none; and every service with permissions is
// one the stack can start.
func TestEveryServiceHasNATSPermissions(t *testing.T) {
	var stackNames, natsNames []string
	for _, s := range Services {
		if s.Standalone {
			if _, ok := contracts.LookupService(s.Name); ok {
				t.Errorf("standalone service %s has a NATS user", s.Name)
			}
			continue
		}
		stackNames = append(stackNames, s.Name)
	}
	for _, s := range contracts.Services {
		natsNames = append(natsNames, s.Name)
	}
	slices.Sort(stackNames)
	slices.Sort(natsNames)
	if !slices.Equal(stackNames, natsNames) {
		t.Fatalf("stack services %v, NATS users %v", stackNames, natsNames)
	}
}

// natsSession speaks the NATS text protocol: enough to log in and publish
// without a client library in this module.
type natsSession struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialNATS(t *testing.T, rawURL string) (*natsSession, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	s := &natsSession{conn: conn, r: bufio.NewReader(conn)}
	if info := s.line(t); !strings.HasPrefix(info, "INFO ") || !strings.Contains(info, `"jetstream":true`) {
		t.Fatalf("greeting %q", info)
	}
	pw, _ := u.User.Password()
	connect, _ := json.Marshal(map[string]any{"user": u.User.Username(), "pass": pw, "verbose": false, "pedantic": false})
	return s, s.send(t, "CONNECT "+string(connect)+"\r\n")
}

func (s *natsSession) line(t *testing.T) string {
	t.Helper()
	l, err := s.r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return strings.TrimSpace(l)
}

// send writes cmd followed by PING and returns the first answer: PONG when
// the server accepted cmd, its -ERR otherwise.
func (s *natsSession) send(t *testing.T, cmd string) string {
	t.Helper()
	if _, err := fmt.Fprint(s.conn, cmd+"PING\r\n"); err != nil {
		t.Fatal(err)
	}
	return s.line(t)
}

func TestStackNATSUsers(t *testing.T) {
	names := contracts.Names{Prefix: "tn" + randid.Hex(3)}
	s := &Stack{DataDir: t.TempDir(), infra: LocalInfra(testLog(t)), log: testLog(t)}
	if err := s.startNATS(t.Context(), names, 1); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = s.natsProc.stop(10 * time.Second)
		}
	}()

	topicsEvent := names.Subject(contracts.EventSubject(contracts.EventTopicDeleted))
	authRPC := names.Subject(contracts.RPCCustomerExists)
	pub := func(subject string) string { return "PUB " + subject + " 2\r\nhi\r\n" }
	// Consumer creation as nats.go asks for it (the filter in the subject,
	// nats-server 2.9+), checked against the real server's permissions.
	events := names.Stream(contracts.StreamEvents)
	createConsumer := func(durable, filter string) string {
		subj := "$JS.API.CONSUMER.CREATE." + events + "." + names.Stream(durable)
		if filter != "" {
			subj += "." + names.Subject(filter)
		}
		return pub(subj)
	}
	cases := []struct {
		name, user, cmd, want string
	}{
		{"topics publishes its event", "topics", pub(topicsEvent), "PONG"},
		{"auth publishes topics' event", "auth", pub(topicsEvent), "-ERR 'Permissions Violation for Publish"},
		{"topics calls auth's RPC", "topics", pub(authRPC), "-ERR 'Permissions Violation for Publish"},
		{"translation calls auth's RPC", "translation", pub(authRPC), "PONG"},
		{"topics serves auth's RPC", "topics", "SUB " + authRPC + " q 1\r\n", "-ERR 'Permissions Violation for Subscription"},
		{"auth serves its RPC", "auth", "SUB " + authRPC + " q 1\r\n", "PONG"},
		{"harness watches every event", contracts.HarnessUser, "SUB " + names.Subject(contracts.EventsSubjects) + " 1\r\n", "PONG"},
		{"tickets creates its own consumer", "tickets", createConsumer(contracts.DurableTicketsTopics, contracts.EventSubject("topic.>")), "PONG"},
		{"tickets narrows its own filter", "tickets", createConsumer(contracts.DurableTicketsTopics, contracts.EventSubject("topic.updated")), "PONG"},
		{"tickets reads auth's events", "tickets", createConsumer(contracts.DurableTicketsTopics, contracts.EventSubject("auth.>")), "-ERR 'Permissions Violation for Publish"},
		{"tickets reads the whole stream", "tickets", createConsumer(contracts.DurableTicketsTopics, ""), "-ERR 'Permissions Violation for Publish"},
		{"tickets names a new consumer", "tickets", createConsumer("SPY", contracts.EventSubject("topic.>")), "-ERR 'Permissions Violation for Publish"},
		{"tickets subscribes to auth's events", "tickets", "SUB " + names.Subject(contracts.EventSubject("auth.>")) + " 1\r\n", "-ERR 'Permissions Violation for Subscription"},
		{"assistant creates its own consumer", "assistant", createConsumer(contracts.DurableAssistantDetect, contracts.EventSubject(contracts.EventTopicDetectionRequested)), "PONG"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sess, login := dialNATS(t, s.natsURL(c.user))
			if login != "PONG" {
				t.Fatalf("login as %s: %s", c.user, login)
			}
			if got := sess.send(t, c.cmd); !strings.HasPrefix(got, c.want) {
				t.Fatalf("%q: %s, want %s", c.cmd, got, c.want)
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		u, _ := url.Parse(s.natsURL("auth"))
		u.User = url.UserPassword("auth", "wrong")
		if _, login := dialNATS(t, u.String()); !strings.HasPrefix(login, "-ERR 'Authorization Violation'") {
			t.Fatalf("login with a wrong password: %s", login)
		}
	})

	if err := s.natsProc.stop(10 * time.Second); err != nil {
		t.Errorf("nats did not stop cleanly: %v", err)
	}
	stopped = true
	if _, err := net.DialTimeout("tcp", s.natsAddr, time.Second); err == nil {
		t.Error("nats still answers after stop")
	}
}

// The compose deployment's configuration (and the Kubernetes one, the same
// but for the routes' host names), with passwords and the server's name
// from the environment, is one the real nats-server accepts.
func TestComposeNATSConfigIsValid(t *testing.T) {
	files, err := GenerateComposeFiles(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, files[ComposeNATSConfig], 0o600); err != nil {
		t.Fatal(err)
	}
	k8s := filepath.Join(t.TempDir(), "k8s-nats.conf")
	if err := os.WriteFile(k8s, RenderNATSConfig(containerNATSConfig(K8sNATSNodes, K8sNATSNode)), 0o600); err != nil {
		t.Fatal(err)
	}
	check := exec.Command(NATSServerBin, "-t", "-c", k8s)
	check.Env = []string{NATSServerNameEnv + "=nats-2"}
	for _, s := range contracts.Services {
		check.Env = append(check.Env, ComposeNATSPasswordEnv(s.Name)+"=pw")
	}
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("nats-server -t (Kubernetes): %v\n%s", err, out)
	}
	cmd := exec.Command(NATSServerBin, "-t", "-c", path)
	cmd.Env = []string{NATSServerNameEnv + "=nats-1"}
	for _, s := range contracts.Services {
		cmd.Env = append(cmd.Env, ComposeNATSPasswordEnv(s.Name)+"=pw")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nats-server -t: %v\n%s", err, out)
	}
	cmd = exec.Command(NATSServerBin, "-t", "-c", path)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("nats-server accepted the configuration without the password variables:\n%s", out)
	}
}

// request sends a request as the harness would and returns the payload of
// the reply.
func (s *natsSession) request(t *testing.T, subject, payload string) string {
	t.Helper()
	if got := s.send(t, "SUB _INBOX.limits 99\r\n"); got != "PONG" {
		t.Fatalf("subscribe for the reply to %s: %s", subject, got)
	}
	// No PING after the PUB: the reply may come before its PONG would.
	if _, err := fmt.Fprint(s.conn, "PUB "+subject+" _INBOX.limits "+strconv.Itoa(len(payload))+"\r\n"+payload+"\r\n"); err != nil {
		t.Fatal(err)
	}
	head := s.line(t)
	for head == "PING" || head == "PONG" {
		head = s.line(t)
	}
	f := strings.Fields(head) // MSG <subject> <sid> <size>
	if len(f) != 4 || f[0] != "MSG" {
		t.Fatalf("reply to %s: %q", subject, head)
	}
	n, _ := strconv.Atoi(f[3])
	body := make([]byte, n+2)
	if _, err := io.ReadFull(s.r, body); err != nil {
		t.Fatal(err)
	}
	if got := s.send(t, "UNSUB 99\r\n"); got != "PONG" {
		t.Fatal(got)
	}
	return string(body[:n])
}

// The generated configuration puts every user in one account whose
// JetStream limits the real server reports and enforces.
func TestStackNATSAccountLimits(t *testing.T) {
	names := contracts.Names{Prefix: "tl" + randid.Hex(3)}
	s := &Stack{DataDir: t.TempDir(), infra: LocalInfra(testLog(t)), log: testLog(t)}
	if err := s.startNATS(t.Context(), names, 1); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.natsProc.stop(10 * time.Second) }()
	sess, login := dialNATS(t, s.natsURL(contracts.HarnessUser))
	if login != "PONG" {
		t.Fatalf("login: %s", login)
	}
	var info struct {
		Limits struct {
			MaxMemory    int64 `json:"max_memory"`
			MaxStorage   int64 `json:"max_storage"`
			MaxStreams   int   `json:"max_streams"`
			MaxConsumers int   `json:"max_consumers"`
		} `json:"limits"`
	}
	if err := json.Unmarshal([]byte(sess.request(t, "$JS.API.INFO", "")), &info); err != nil {
		t.Fatal(err)
	}
	l, want := info.Limits, DefaultJetStreamLimits
	if l.MaxMemory != want.MaxMemory || l.MaxStorage != want.MaxFile || l.MaxStreams != want.MaxStreams || l.MaxConsumers != want.MaxConsumers {
		t.Fatalf("account limits %+v, want %+v", l, want)
	}
	// One stream more than the limit is refused.
	for i := 1; i <= want.MaxStreams+1; i++ {
		name := "LIMIT" + strconv.Itoa(i)
		reply := sess.request(t, "$JS.API.STREAM.CREATE."+name, `{"name":"`+name+`","subjects":["limit.`+strconv.Itoa(i)+`"],"storage":"memory","max_bytes":1024}`)
		refused := strings.Contains(reply, `"error"`)
		if refused != (i > want.MaxStreams) {
			t.Fatalf("stream %d of at most %d: %s", i, want.MaxStreams, reply)
		}
	}
}
