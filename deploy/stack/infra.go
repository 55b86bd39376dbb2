package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Infra is the local PostgreSQL, Redis and NATS JetStream the stack runs
// against. The zero value is not useful; use LocalInfra.
type Infra struct {
	PostgresURL string // admin connection (database postgres)
	RedisAddr   string
	NATSAddr    string
	// Log receives one line per action taken (starting or installing).
	Log io.Writer
}

// LocalInfra is the infrastructure of a development or CI machine: the
// servers on their standard loopback ports, PostgreSQL with trust auth for
// the postgres user.
func LocalInfra(log io.Writer) Infra {
	if log == nil {
		log = io.Discard
	}
	return Infra{
		PostgresURL: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		RedisAddr:   "127.0.0.1:6379",
		NATSAddr:    "127.0.0.1:4222",
		Log:         log,
	}
}

// EnsureInfra makes sure the local PostgreSQL, Redis and NATS JetStream
// answer, starting them when they are stopped and installing them from
// Debian's packages when their binaries are missing. Actions are reported on
// stderr.
func EnsureInfra(ctx context.Context) error {
	return LocalInfra(os.Stderr).Ensure(ctx)
}

// RedisURL is the Redis URL services are given.
func (in Infra) RedisURL() string { return "redis://" + in.RedisAddr + "/0" }

// NATSURL is the NATS URL services are given.
func (in Infra) NATSURL() string { return "nats://" + in.NATSAddr }

// DatabaseURL is the URL of database name on the same PostgreSQL server.
func (in Infra) DatabaseURL(name string) string {
	return replaceDatabase(in.PostgresURL, name)
}

// Ensure checks each server and starts or installs the ones that do not
// answer. It returns once all three answer or one cannot be brought up.
func (in Infra) Ensure(ctx context.Context) error {
	checks := []struct {
		name  string
		check func(context.Context) error
		start func(context.Context) error
	}{
		{"postgres", in.checkPostgres, in.startPostgres},
		{"redis", in.checkRedis, in.startRedis},
		{"nats", in.checkNATS, in.startNATS},
	}
	for _, c := range checks {
		if err := c.check(ctx); err == nil {
			continue
		} else {
			fmt.Fprintf(in.Log, "infra: %s does not answer (%v); starting it\n", c.name, err)
		}
		if err := c.start(ctx); err != nil {
			return fmt.Errorf("start %s: %w", c.name, err)
		}
		if err := waitFor(ctx, 30*time.Second, c.check); err != nil {
			return fmt.Errorf("%s still does not answer after start: %w", c.name, err)
		}
		fmt.Fprintf(in.Log, "infra: %s is up\n", c.name)
	}
	return nil
}

func (in Infra) checkPostgres(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, in.PostgresURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// checkRedis sends an inline PING and expects +PONG, so a port held by
// something else does not pass for Redis.
func (in Infra) checkRedis(ctx context.Context) error {
	line, err := exchangeLine(ctx, in.RedisAddr, "PING\r\n")
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected PING answer %q", line)
	}
	return nil
}

// checkNATS reads the INFO line a NATS server sends on connect and requires
// JetStream to be enabled.
func (in Infra) checkNATS(ctx context.Context) error { return checkNATSAt(ctx, in.NATSAddr) }

func checkNATSAt(ctx context.Context, addr string) error {
	line, err := exchangeLine(ctx, addr, "")
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "INFO ") {
		return fmt.Errorf("unexpected greeting %q", line)
	}
	if !strings.Contains(line, `"jetstream":true`) {
		return errors.New("NATS server runs without JetStream (-js)")
	}
	return nil
}

func exchangeLine(ctx context.Context, addr, send string) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
		return "", err
	}
	if send != "" {
		if _, err := io.WriteString(conn, send); err != nil {
			return "", err
		}
	}
	return bufio.NewReader(conn).ReadString('\n')
}

func (in Infra) startPostgres(ctx context.Context) error {
	fresh := false
	if _, err := exec.LookPath("pg_ctlcluster"); err != nil {
		if err := AptInstall(ctx, in.Log, "postgresql"); err != nil {
			return err
		}
		fresh = true
	}
	versions, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(versions) == 0 {
		return fmt.Errorf("no PostgreSQL cluster under /etc/postgresql: %v", err)
	}
	version := versions[len(versions)-1].Name()
	if fresh {
		// Debian's default pg_hba asks for a password on TCP; the local
		// stack connects without one, as on the CI machines: as postgres to
		// migrate, as each service's role (sp_auth, ...) and, in tests, as
		// the roles they create.
		if err := trustLoopback(filepath.Join("/etc/postgresql", version, "main", "pg_hba.conf")); err != nil {
			return err
		}
	}
	return in.run(ctx, "pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "start")
}

func trustLoopback(hbaPath string) error {
	old, err := os.ReadFile(hbaPath)
	if err != nil {
		return err
	}
	lines := "host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n"
	return os.WriteFile(hbaPath, append([]byte(lines), old...), 0o640)
}

func (in Infra) startRedis(ctx context.Context) error {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if err := AptInstall(ctx, in.Log, "redis-server"); err != nil {
			return err
		}
	}
	host, port, err := net.SplitHostPort(in.RedisAddr)
	if err != nil {
		return err
	}
	return in.run(ctx, "redis-server", "--daemonize", "yes", "--bind", host, "-::1", "--port", port,
		"--save", "", "--appendonly", "no")
}

func (in Infra) startNATS(ctx context.Context) error {
	const bin = NATSServerBin
	if _, err := os.Stat(bin); err != nil {
		if err := AptInstall(ctx, in.Log, "nats-server"); err != nil {
			return err
		}
	}
	host, port, err := net.SplitHostPort(in.NATSAddr)
	if err != nil {
		return err
	}
	const storeDir = "/var/lib/nats-server"
	if err := os.MkdirAll(storeDir, 0o755); err != nil {
		return err
	}
	return in.run(ctx, "start-stop-daemon", "--start", "--oknodo", "--background", "--exec", bin, "--",
		"-a", host, "-p", port, "-js", "-sd", storeDir)
}

func (in Infra) run(ctx context.Context, name string, args ...string) error {
	fmt.Fprintf(in.Log, "infra: %s %s\n", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout = in.Log
	cmd.Stderr = in.Log
	return cmd.Run()
}

// AptInstall installs the Debian packages among pkgs that are not installed
// yet; it does nothing (and needs no network) when all are present.
//
// Test packages run in parallel and may install at the same time (two
// browser suites on a fresh machine): the installs take turns on a lock
// file, each looking again at what is missing once it has the lock, and
// apt-get waits for dpkg's own lock (another apt, such as unattended
// upgrades) instead of failing at once.
func AptInstall(ctx context.Context, log io.Writer, pkgs ...string) error {
	missingOf := func() []string {
		var missing []string
		for _, p := range pkgs {
			if !debInstalled(ctx, p) {
				missing = append(missing, p)
			}
		}
		return missing
	}
	if len(missingOf()) == 0 {
		return nil
	}
	unlock, err := lockFile(filepath.Join(os.TempDir(), "supportplatform-apt.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	missing := missingOf()
	if len(missing) == 0 {
		return nil // installed by whoever held the lock
	}
	fmt.Fprintf(log, "apt: installing %s\n", strings.Join(missing, " "))
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{
		{"-o", "DPkg::Lock::Timeout=600", "update"},
		append([]string{"-o", "DPkg::Lock::Timeout=600", "install", "-y", "--no-install-recommends"}, missing...),
	} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = env
		cmd.Stdout = log
		cmd.Stderr = log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %w", args[2], err)
		}
	}
	for _, p := range missing {
		if !debInstalled(ctx, p) {
			return fmt.Errorf("package %s still not installed after apt-get install", p)
		}
	}
	return nil
}

func debInstalled(ctx context.Context, pkg string) bool {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return err == nil && strings.TrimSpace(string(out)) == "install ok installed"
}

// waitFor polls check until it succeeds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}
