package stack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// NATSServerBin is the nats-server of Debian's package nats-server.
const NATSServerBin = "/usr/sbin/nats-server"

// startNATS runs the stack's own nats-server on a free loopback port, with
// JetStream storing under DataDir/nats and one user per service (plus the
// harness) whose random password lives only in the generated configuration
// and in that service's NATS_URL.
func (s *Stack) startNATS(ctx context.Context, names contracts.Names) error {
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
	ports, err := freePorts(0)
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	s.natsPasswords = map[string]string{}
	users := ServiceNATSUsers(names, false, func(user string) string {
		s.natsPasswords[user] = randid.Hex(16)
		return s.natsPasswords[user]
	})
	s.natsPasswords[contracts.HarnessUser] = randid.Hex(16)
	users = append(users, NATSUser{Name: contracts.HarnessUser, Password: s.natsPasswords[contracts.HarnessUser],
		Permissions: names.HarnessPermissions()})
	conf := filepath.Join(dir, "nats.conf")
	cfg := RenderNATSConfig(NATSConfig{Listen: addr, StoreDir: filepath.Join(dir, "jetstream"), Users: users})
	if err := os.WriteFile(conf, cfg, 0o600); err != nil {
		return err
	}
	p, err := startProcess(processSpec{
		name:    "nats",
		bin:     NATSServerBin,
		args:    []string{"-c", conf},
		dir:     dir,
		env:     baseEnv(),
		log:     s.log,
		logFile: s.LogFile("nats"),
		// nats-server exits 1 on SIGTERM and 0 on SIGINT.
		stopSignal: syscall.SIGINT,
	})
	if err != nil {
		return err
	}
	s.natsProc = p
	s.natsAddr = addr
	s.NATSURL = s.natsURL(contracts.HarnessUser)
	return p.waitReady(ctx, 30*time.Second, func(ctx context.Context) error { return checkNATSAt(ctx, addr) })
}

// natsURL is the URL of the stack's NATS server with user's credentials.
func (s *Stack) natsURL(user string) string {
	pw, ok := s.natsPasswords[user]
	if !ok {
		return ""
	}
	u := url.URL{Scheme: "nats", User: url.UserPassword(user, pw), Host: s.natsAddr}
	return u.String()
}

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
