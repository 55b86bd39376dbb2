package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The private servers are PostgreSQL and Redis processes of one test's own,
// on free loopback ports, which the test may stop and start again (outage
// tests) without touching the machine's shared servers. Stop and Start keep
// the data: what a server acknowledged before a Stop is there after the
// Start. Close stops the server for good and removes its directory.

// PostgresBinDir holds initdb, pg_ctl and postgres of Debian's PostgreSQL.
const PostgresBinDir = "/usr/lib/postgresql/15/bin"

// privateServer is a stoppable, restartable child process.
type privateServer struct {
	name  string
	dir   string
	spec  processSpec
	ready func(ctx context.Context) error

	mu sync.Mutex
	p  *process
}

// Stop stops the server the way an operator would (PostgreSQL: fast
// shutdown, which ends the open sessions; Redis: SIGTERM, which writes its
// append-only file) and waits until it has exited.
func (s *privateServer) Stop() error {
	s.mu.Lock()
	p := s.p
	s.p = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.stop(30 * time.Second)
}

// Start starts the server again on the same port with the same data and
// waits until it answers.
func (s *privateServer) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil {
		return fmt.Errorf("stack: private %s is running", s.name)
	}
	p, err := startProcess(s.spec)
	if err != nil {
		return err
	}
	s.p = p
	return p.waitReady(ctx, 60*time.Second, s.ready)
}

// Running reports whether the server process is up (started and not
// stopped).
func (s *privateServer) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p != nil && !s.p.exited()
}

// Close stops the server and removes its directory.
func (s *privateServer) Close() error {
	return errors.Join(s.Stop(), os.RemoveAll(s.dir))
}

// PrivatePostgres is a PostgreSQL cluster of its own (initdb in a temporary
// directory), trusting every loopback connection, as the postgres
// superuser's and the services' roles need.
type PrivatePostgres struct {
	privateServer
	Port int
}

// URL is the administrator's connection to database name.
func (pg *PrivatePostgres) URL(name string) string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(pg.Port) + "/" + name + "?sslmode=disable"
}

// StartPrivatePostgres creates a cluster in a fresh temporary directory and
// starts it on a free port. As root, the cluster belongs to (and the server
// runs as) the postgres user: PostgreSQL refuses to run as root. log
// receives the server's output (nil: only its log file in the directory).
func StartPrivatePostgres(ctx context.Context, log io.Writer) (_ *PrivatePostgres, err error) {
	for _, bin := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(PostgresBinDir, bin)); err != nil {
			return nil, fmt.Errorf("stack: private PostgreSQL needs %s: %w", bin, err)
		}
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sp-private-pg-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return nil, err
	}
	if cred != nil {
		for _, d := range []string{dir, data} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(PostgresBinDir, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync")
	initdb.Env = baseEnv()
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("stack: initdb: %w: %s", err, out)
	}
	ports, err := freePorts(0)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	pg := &PrivatePostgres{Port: port}
	pg.privateServer = privateServer{
		name: "postgres",
		dir:  dir,
		spec: processSpec{
			name: "postgres-" + strconv.Itoa(port),
			bin:  filepath.Join(PostgresBinDir, "postgres"),
			args: []string{"-D", data, "-p", strconv.Itoa(port),
				"-c", "listen_addresses=127.0.0.1",
				"-c", "unix_socket_directories=",
				"-c", "max_connections=200",
				// A test cluster: durability against a crash of the
				// machine is not needed, a clean stop writes everything.
				"-c", "fsync=off", "-c", "full_page_writes=off"},
			dir:     dir,
			env:     baseEnv(),
			log:     log,
			logFile: filepath.Join(dir, "postgres.log"),
			// SIGINT is PostgreSQL's fast shutdown: open sessions end at
			// once (SIGTERM would wait for every client to leave).
			stopSignal: syscall.SIGINT,
			cred:       cred,
		},
		ready: LocalInfraAt(pg.URL("postgres"), "", "").checkPostgres,
	}
	if err := pg.Start(ctx); err != nil {
		return nil, err
	}
	return pg, nil
}

// postgresCredential is the postgres user's when running as root, nil
// otherwise (the server then runs as the current user).
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("stack: private PostgreSQL as root needs the postgres user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// PrivateRedis is a Redis server of its own. It keeps its data in an
// append-only file written on every command, so a Stop and Start keeps
// what it acknowledged (the revocation list must survive a restart).
type PrivateRedis struct {
	privateServer
	Addr string
}

// StartPrivateRedis starts redis-server on a free port in a fresh
// temporary directory.
func StartPrivateRedis(ctx context.Context, log io.Writer) (_ *PrivateRedis, err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("stack: private Redis: %w", err)
	}
	dir, err := os.MkdirTemp("", "sp-private-redis-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	ports, err := freePorts(0)
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(ports[0])
	r := &PrivateRedis{Addr: "127.0.0.1:" + port}
	r.privateServer = privateServer{
		name: "redis",
		dir:  dir,
		spec: processSpec{
			name: "redis-" + port,
			bin:  bin,
			args: []string{"--port", port, "--bind", "127.0.0.1", "--dir", dir, "--save", "",
				"--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no"},
			dir:     dir,
			env:     baseEnv(),
			log:     log,
			logFile: filepath.Join(dir, "redis.log"),
		},
		ready: LocalInfraAt("", r.Addr, "").checkRedis,
	}
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// LocalInfraAt is an Infra of the given servers (empty: the local default
// of LocalInfra), e.g. a stack on private servers:
//
//	stack.LocalInfraAt(pg.URL("postgres"), redis.Addr, "")
func LocalInfraAt(postgresURL, redisAddr, natsAddr string) Infra {
	in := LocalInfra(nil)
	if postgresURL != "" {
		in.PostgresURL = postgresURL
	}
	if redisAddr != "" {
		in.RedisAddr = redisAddr
	}
	if natsAddr != "" {
		in.NATSAddr = natsAddr
	}
	return in
}
