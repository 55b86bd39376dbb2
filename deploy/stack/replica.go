package stack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Replica is one process of a started service: one of those Start started
// (Options.Replicas; Stack.Replicas lists them), or one more started by
// StartReplica (a second import worker, or one restarted after a kill), on
// an HTTP port of its own, with the service's environment. Stack.Stop
// stops it with the rest.
type Replica struct {
	// Name is the service name, with the replica's number after the
	// first ("importreply-2"); its log file is LogFile(Name).
	Name    string
	Service string
	// URL is its own plain-HTTP address (/healthz, /readyz, /metrics, and
	// the routes of a routed service, as the gateway's server).
	URL string
	p   *process
	s   *Stack
}

// Replicas returns the processes Start started for service, in order (the
// first is ServiceURLs' one); nil for a service not started.
func (s *Stack) Replicas(service string) []*Replica {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sets[service])
}

// Restart stops the replica with SIGTERM, waiting for its clean exit (a
// routed replica drains first: DRAIN_DELAY), starts it again on the same
// port with the same environment, and returns once its /readyz answers 200
// and, for a replicated routed service, the gateway's health check has put
// it back in the rotation. A rolling restart calls it for one replica after
// another: the service never has fewer than all but one in the rotation.
func (r *Replica) Restart(ctx context.Context) error {
	if err := r.Stop(); err != nil {
		return err
	}
	p, err := startProcess(r.p.spec)
	if err != nil {
		return err
	}
	r.s.mu.Lock()
	r.s.procs = append(r.s.procs, p)
	r.p = p
	routed := r.s.routed[r.Service]
	r.s.mu.Unlock()
	if err := p.waitReady(ctx, 90*time.Second, func(ctx context.Context) error { return checkStatus(ctx, r.URL+"/readyz", http.StatusOK) }); err != nil {
		return err
	}
	if routed && r.s.Gateway != nil {
		return r.s.Gateway.WaitServerUp(ctx, r.Service, r.URL)
	}
	return nil
}

// PID is the process id of the replica's current process.
func (r *Replica) PID() int { return r.p.cmd.Process.Pid }

// serviceOf is the service of a process name ("tickets-2": tickets).
func serviceOf(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

// StartReplica starts another process of service with the environment the
// stack gave it, plus env (KEY=VALUE, overriding), and waits until its
// /readyz answers 200.
func (s *Stack) StartReplica(ctx context.Context, service string, env ...string) (*Replica, error) {
	base, ok := s.env[service]
	if !ok {
		return nil, fmt.Errorf("stack: %s is not a started service", service)
	}
	ports, err := freePorts(0)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.replicas[service]++
	name := service + "-" + strconv.Itoa(s.replicas[service]+1)
	s.mu.Unlock()
	full, err := replicaEnv(base, ports[0])
	if err != nil {
		return nil, err
	}
	full = append(full, env...)
	p, err := startProcess(processSpec{name: name, bin: s.bins[service], dir: s.DataDir, env: full, log: s.log, logFile: s.LogFile(name)})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	r := &Replica{Name: name, Service: service, URL: "http://127.0.0.1:" + strconv.Itoa(ports[0]), p: p, s: s}
	if err := p.waitReady(ctx, 90*time.Second, func(ctx context.Context) error { return checkStatus(ctx, r.URL+"/readyz", http.StatusOK) }); err != nil {
		r.Kill()
		return nil, err
	}
	return r, nil
}

// Kill ends the replica with SIGKILL, as a crash would: no shutdown code
// runs. It returns once the process is gone.
func (r *Replica) Kill() {
	r.p.mu.Lock()
	r.p.stopped = true
	r.p.mu.Unlock()
	_ = syscall.Kill(-r.p.cmd.Process.Pid, syscall.SIGKILL)
	<-r.p.done
}

// Stop asks the replica to exit with SIGTERM and waits; a non-zero exit is
// an error.
func (r *Replica) Stop() error { return r.p.stop(15 * time.Second) }

// StopService stops the stack's own process of service with SIGTERM (its
// replicas keep running); Stack.Stop does not stop it again.
func (s *Stack) StopService(service string) error {
	s.mu.Lock()
	i := slices.IndexFunc(s.procs, func(p *process) bool { return p.spec.name == service })
	s.mu.Unlock()
	if i < 0 {
		return fmt.Errorf("stack: %s is not a started service", service)
	}
	return s.procs[i].stop(15 * time.Second)
}

// RestartNATS stops the stack's NATS server and starts it again on the same
// address with the same configuration and JetStream store, after down has
// passed: every client's connection drops and must come back by itself.
func (s *Stack) RestartNATS(ctx context.Context, down time.Duration) error {
	if err := s.StopNATS(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	return s.StartNATS(ctx)
}

// StopNATS stops the stack's NATS server (an outage until StartNATS).
func (s *Stack) StopNATS() error {
	s.mu.Lock()
	p := s.natsProc
	s.mu.Unlock()
	if p == nil {
		return fmt.Errorf("stack: NATS is not started")
	}
	return p.stop(15 * time.Second)
}

// StartNATS starts the stack's NATS server again after StopNATS, on the
// same address with the same configuration and JetStream store, and waits
// until it answers.
func (s *Stack) StartNATS(ctx context.Context) error {
	s.mu.Lock()
	old := s.natsProc
	s.mu.Unlock()
	if old == nil {
		return fmt.Errorf("stack: NATS is not started")
	}
	if !old.exited() {
		return fmt.Errorf("stack: NATS is running")
	}
	p, err := startProcess(old.spec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.natsProc = p
	s.mu.Unlock()
	return p.waitReady(ctx, 30*time.Second, func(ctx context.Context) error { return checkNATSAt(ctx, s.natsAddr) })
}

// replicaEnv is the environment of a further process of a service whose
// first process has env base: its own HTTP port and, when base serves a
// debug listener (DEBUG_ADDR), its own free loopback port for it; on the
// first process's address it would not start ("address already in use":
// make bench -profile, the mail-to-ticket case's second import worker).
func replicaEnv(base []string, httpPort int) ([]string, error) {
	env := append(slices.Clone(base), "HTTP_ADDR=127.0.0.1:"+strconv.Itoa(httpPort))
	debug := ""
	for _, kv := range base {
		if v, ok := strings.CutPrefix(kv, "DEBUG_ADDR="); ok {
			debug = v
		}
	}
	if debug == "" {
		return env, nil
	}
	ports, err := freePorts(0)
	if err != nil {
		return nil, err
	}
	return append(env, "DEBUG_ADDR=127.0.0.1:"+strconv.Itoa(ports[0])), nil
}
