// Package natstest runs an in-process NATS server with JetStream for tests.
package natstest

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"supportplatform.dev/pkg/contracts"
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
		Publish:   &server.SubjectPermission{Allow: p.Publish},
		Subscribe: &server.SubjectPermission{Allow: p.Subscribe},
	}
	if p.AllowResponses {
		sp.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	}
	return sp
}

func start(t testing.TB, opts *server.Options) string {
	t.Helper()
	opts.Host, opts.Port = "127.0.0.1", -1
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL()
}

func randomPassword() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
