package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgBouncerBin is the pgbouncer of Debian's package pgbouncer.
const PgBouncerBin = "/usr/sbin/pgbouncer"

// TestPackages are the Debian packages the test suites need besides the
// services' own (DebPackages): `make infra` installs them.
var TestPackages = []string{"pgbouncer"}

// EnsurePgBouncer installs Debian's pgbouncer when its binary is missing.
func EnsurePgBouncer(ctx context.Context, log io.Writer) error {
	if _, err := os.Stat(PgBouncerBin); err == nil {
		return nil
	}
	if log == nil {
		log = io.Discard
	}
	return AptInstall(ctx, log, "pgbouncer")
}

// PgBouncerOptions configure StartPgBouncer.
type PgBouncerOptions struct {
	// Database is the PostgreSQL database behind it, served under its own
	// name in transaction mode and as Database+"_session" in session mode.
	Database string
	// Users are the roles that may connect (trust, as the local server).
	Users []string
	// PoolSize is the server connections per database and user
	// (default_pool_size); 0: 10.
	PoolSize int
	// Log receives pgbouncer's output as "[pgbouncer] " lines; nil: none.
	Log io.Writer
}

// PgBouncer is a pgbouncer process on a free loopback port in front of the
// local PostgreSQL: one pool per database and user, in transaction mode
// (and a session-mode alias of the database for what needs a session).
type PgBouncer struct {
	Addr     string // 127.0.0.1:port
	database string
	// dir holds the configuration, the auth file and the output
	// (pgbouncer.out); readable to the postgres user, whom pgbouncer runs
	// as when started by root (it refuses root). Stop removes it.
	dir  string
	proc *process
}

// StartPgBouncer writes the configuration and starts pgbouncer (installing
// it when missing) in front of infra's PostgreSQL, and returns once it
// answers as one of o.Users.
func StartPgBouncer(ctx context.Context, infra Infra, o PgBouncerOptions) (*PgBouncer, error) {
	if err := EnsurePgBouncer(ctx, infra.Log); err != nil {
		return nil, err
	}
	if !databaseName.MatchString(o.Database) || len(o.Users) == 0 {
		return nil, fmt.Errorf("pgbouncer: database %q, users %v", o.Database, o.Users)
	}
	pg, err := url.Parse(infra.PostgresURL)
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(0)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sp-pgbouncer-")
	if err != nil {
		return nil, err
	}
	p := &PgBouncer{Addr: "127.0.0.1:" + strconv.Itoa(ports[0]), database: o.Database, dir: dir}
	if err := p.start(ctx, o, pg, ports[0]); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

func (p *PgBouncer) start(ctx context.Context, o PgBouncerOptions, pg *url.URL, port int) error {
	pool := o.PoolSize
	if pool == 0 {
		pool = 10
	}
	var users strings.Builder
	for _, u := range o.Users {
		if strings.ContainsAny(u, "\" \n") {
			return fmt.Errorf("pgbouncer: user name %q", u)
		}
		fmt.Fprintf(&users, "%q \"\"\n", u)
	}
	users.WriteString("\"pgbouncer\" \"\"\n")
	server := fmt.Sprintf("host=%s port=%s dbname=%s", pg.Hostname(), pg.Port(), o.Database)
	conf := fmt.Sprintf(`[databases]
%[1]s = %[2]s
%[1]s_session = %[2]s pool_mode=session

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %[3]d
unix_socket_dir =
auth_type = trust
auth_file = %[4]s
admin_users = pgbouncer
pool_mode = transaction
default_pool_size = %[5]d
max_client_conn = 2000
server_check_delay = 1
ignore_startup_parameters = extra_float_digits
log_connections = 0
log_disconnections = 0
`, o.Database, server, port, filepath.Join(p.dir, "userlist.txt"), pool)
	files := map[string]string{"userlist.txt": users.String(), "pgbouncer.ini": conf}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(p.dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	if err := os.Chmod(p.dir, 0o755); err != nil {
		return err
	}
	cred, err := postgresCredential()
	if err != nil {
		return err
	}
	p.proc, err = startProcess(processSpec{
		name:    "pgbouncer",
		bin:     PgBouncerBin,
		args:    []string{filepath.Join(p.dir, "pgbouncer.ini")},
		dir:     p.dir,
		env:     baseEnv(),
		log:     o.Log,
		logFile: filepath.Join(p.dir, "pgbouncer.out"),
		cred:    cred,
		// SIGTERM is pgbouncer's fast exit (status 1); SIGINT its safe
		// shutdown, once the clients are gone (the services have stopped).
		stopSignal: syscall.SIGINT,
	})
	if err != nil {
		return err
	}
	// Ready when the admin console answers: a check as one of the users
	// would open a server connection for it, which keeps the session
	// defaults (search_path) the role had then.
	return p.proc.waitReady(ctx, 30*time.Second, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := p.Pools(ctx)
		return err
	})
}

// URL is the transaction-mode pool of the database as user.
func (p *PgBouncer) URL(user string) string { return p.url(user, p.database) }

// SessionURL is the session-mode pool of the database as user.
func (p *PgBouncer) SessionURL(user string) string { return p.url(user, p.database+"_session") }

func (p *PgBouncer) url(user, db string) string {
	u := url.URL{Scheme: "postgres", User: url.User(user), Host: p.Addr, Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// PgBouncerPool is a line of SHOW POOLS.
type PgBouncerPool struct {
	Database, User, Mode string
	// ClientActive and ClientWaiting are client connections linked to a
	// server or waiting for one; ServerActive, ServerIdle and ServerUsed
	// are server connections (PostgreSQL sessions) in use, idle and
	// released.
	ClientActive, ClientWaiting          int
	ServerActive, ServerIdle, ServerUsed int
	// MaxWait is the longest wait of a client now, in seconds.
	MaxWait int
}

// Servers is the number of server connections the pool holds.
func (p PgBouncerPool) Servers() int { return p.ServerActive + p.ServerIdle + p.ServerUsed }

// Pools reads SHOW POOLS from the admin console (simple protocol only).
func (p *PgBouncer) Pools(ctx context.Context) ([]PgBouncerPool, error) {
	conn, err := pgx.Connect(ctx, p.url("pgbouncer", "pgbouncer")+"&default_query_exec_mode=simple_protocol")
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, "SHOW POOLS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	col := map[string]int{}
	for i, f := range rows.FieldDescriptions() {
		col[f.Name] = i
	}
	var out []PgBouncerPool
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		str := func(name string) string {
			i, ok := col[name]
			if !ok || vals[i] == nil {
				return ""
			}
			return fmt.Sprint(vals[i])
		}
		num := func(name string) int { n, _ := strconv.Atoi(str(name)); return n }
		out = append(out, PgBouncerPool{Database: str("database"), User: str("user"), Mode: str("pool_mode"),
			ClientActive: num("cl_active"), ClientWaiting: num("cl_waiting"),
			ServerActive: num("sv_active"), ServerIdle: num("sv_idle"), ServerUsed: num("sv_used"), MaxWait: num("maxwait")})
	}
	return out, rows.Err()
}

// Stop stops pgbouncer and removes its directory.
func (p *PgBouncer) Stop() error {
	var err error
	if p.proc != nil {
		err = p.proc.stop(15 * time.Second)
	}
	return errors.Join(err, os.RemoveAll(p.dir))
}
