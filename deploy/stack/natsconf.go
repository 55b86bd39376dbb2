package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"supportplatform.dev/pkg/contracts"
)

// NATSUser is one user of a NATS server configuration.
type NATSUser struct {
	Name string
	// Password is the literal password; PasswordEnv, when set, names the
	// environment variable the server reads it from instead (compose).
	Password    string
	PasswordEnv string
	Permissions contracts.Permissions
}

// NATSConfig is what RenderNATSConfig writes.
type NATSConfig struct {
	Listen   string // host:port
	HTTPPort int    // monitoring port; 0: none
	StoreDir string // JetStream storage
	Users    []NATSUser
	// Limits bound what the users' account may hold in JetStream; zero:
	// DefaultJetStreamLimits.
	Limits JetStreamLimits
	// ServerName names the server (a cluster's must be unique); empty:
	// the server picks its id.
	ServerName string
	// ServerNameEnv, when set, names the environment variable the server
	// reads its name from instead (one configuration for every node of a
	// compose or Kubernetes cluster).
	ServerNameEnv string
	// Cluster, when set, makes the server one of a JetStream cluster.
	Cluster *NATSCluster
}

// NATSCluster is a server's part of a cluster: the cluster's name, the
// address the server takes routes on, and every server's route URL
// (nats-route://host:port; its own is ignored by the server). Each server
// stores a copy of every stream with Replicas (contracts.ReplicasFor).
type NATSCluster struct {
	Name   string
	Listen string
	Routes []string
	// Replicas is the copies the streams keep (contracts.ReplicasFor of
	// the servers): the account's JetStream limits count each copy.
	Replicas int
}

// NATSClusterName is the cluster name of every generated configuration.
const NATSClusterName = "support"

// NATSAccount is the account every user of the generated configuration
// belongs to (services and the harness share the streams).
const NATSAccount = "SUPPORT"

// JetStreamLimits are an account's JetStream limits: bytes in memory and on
// disk over all its streams, and how many streams and consumers it may
// have. The server refuses a stream or consumer, or a message, that would
// go over them (the platform's streams and buckets have their own limits
// below these).
type JetStreamLimits struct {
	MaxMemory    int64
	MaxFile      int64
	MaxStreams   int
	MaxConsumers int
}

// DefaultJetStreamLimits bound the account of a deployment: a handful of
// streams and buckets (EVENTS, MAIL_IMPORT, MAIL_INBOUND, two object
// stores), a few durable consumers per service, and the ordered consumers
// that object reads open for a moment. Its file storage is what the
// platform's streams and buckets reserve with their own limits
// (contracts.StorageReserved) and fileHeadroom for the rest, so the
// limits of pkg/contracts decide the disk a deployment needs.
var DefaultJetStreamLimits = JetStreamLimits{
	MaxMemory:    256 << 20,
	MaxFile:      contracts.StorageReserved() + fileHeadroom,
	MaxStreams:   32,
	MaxConsumers: 1000,
}

// fileHeadroom is the account's file storage beyond the limited streams'
// reservations (streams without limits, such as a test harness's).
const fileHeadroom = 4 << 30

// ServiceNATSUsers returns one user per service of contracts.Services, with
// the permissions the table gives it under names' prefix; password gives
// each user's password (literal, or the name of an environment variable when
// env is set).
func ServiceNATSUsers(names contracts.Names, env bool, password func(user string) string) []NATSUser {
	var users []NATSUser
	for _, s := range contracts.Services {
		u := NATSUser{Name: s.Name, Permissions: names.Permissions(s)}
		if env {
			u.PasswordEnv = password(s.Name)
		} else {
			u.Password = password(s.Name)
		}
		users = append(users, u)
	}
	return users
}

// RenderNATSConfig renders a nats-server configuration file: JetStream on,
// and only the given users, each limited to its subjects.
func RenderNATSConfig(c NATSConfig) []byte {
	var b bytes.Buffer
	q := func(s string) string {
		// Quoted strings are taken literally: "$JS.API.INFO" is a subject,
		// not a variable reference. The parser knows no \u escapes: ">"
		// must stay as it is.
		var out bytes.Buffer
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		return strings.TrimSpace(out.String())
	}
	list := func(ss []string) string {
		qs := make([]string, len(ss))
		for i, s := range ss {
			qs[i] = q(s)
		}
		return "[" + strings.Join(qs, ", ") + "]"
	}
	fmt.Fprintf(&b, "# Generated from the table in pkg/contracts (permissions.go); do not edit.\n")
	if c.ServerNameEnv != "" {
		fmt.Fprintf(&b, "server_name: $%s\n", c.ServerNameEnv)
	} else if c.ServerName != "" {
		fmt.Fprintf(&b, "server_name: %s\n", q(c.ServerName))
	}
	fmt.Fprintf(&b, "listen: %s\n", q(c.Listen))
	if c.HTTPPort != 0 {
		fmt.Fprintf(&b, "http_port: %d\n", c.HTTPPort)
	}
	lim := c.Limits
	if lim == (JetStreamLimits{}) {
		lim = DefaultJetStreamLimits
	}
	// The account's limits count every copy of a replicated stream (its
	// max_bytes times its replicas, across the cluster); each server's
	// own store holds one copy.
	account := lim
	if c.Cluster != nil {
		fmt.Fprintf(&b, "cluster {\n  name: %s\n  listen: %s\n  routes: %s\n}\n", q(c.Cluster.Name), q(c.Cluster.Listen), list(c.Cluster.Routes))
		if c.Cluster.Replicas > 1 {
			account.MaxMemory *= int64(c.Cluster.Replicas)
			account.MaxFile *= int64(c.Cluster.Replicas)
		}
	}
	// The server's own file store is the account's: JetStream checks every
	// stream's reservation (its max_bytes) against it, and by default it is
	// 75% of the disk free at start, so the same streams would start on one
	// machine and be refused on a smaller one. Size the disk to max_file.
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %s\n  max_file_store: %d\n}\n", q(c.StoreDir), lim.MaxFile)
	fmt.Fprintf(&b, "accounts {\n  %s: {\n", NATSAccount)
	fmt.Fprintf(&b, "    jetstream: {\n      max_memory: %d\n      max_file: %d\n      max_streams: %d\n      max_consumers: %d\n    }\n",
		account.MaxMemory, account.MaxFile, account.MaxStreams, account.MaxConsumers)
	fmt.Fprintf(&b, "    users: [\n")
	for _, u := range c.Users {
		pw := q(u.Password)
		if u.PasswordEnv != "" {
			pw = "$" + u.PasswordEnv // read from the environment
		}
		fmt.Fprintf(&b, "    {\n      user: %s\n      password: %s\n      permissions: {\n", q(u.Name), pw)
		if len(u.Permissions.PublishDeny) > 0 {
			fmt.Fprintf(&b, "        publish: { allow: %s, deny: %s }\n", list(u.Permissions.Publish), list(u.Permissions.PublishDeny))
		} else {
			fmt.Fprintf(&b, "        publish: { allow: %s }\n", list(u.Permissions.Publish))
		}
		fmt.Fprintf(&b, "        subscribe: { allow: %s }\n", list(u.Permissions.Subscribe))
		if u.Permissions.AllowResponses {
			fmt.Fprintf(&b, "        allow_responses: true\n")
		}
		fmt.Fprintf(&b, "      }\n    }\n")
	}
	fmt.Fprintf(&b, "    ]\n  }\n}\n")
	return b.Bytes()
}
