package stack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

type processSpec struct {
	name    string // log prefix
	bin     string
	args    []string
	dir     string
	env     []string
	log     io.Writer // prefixed lines; nil: none
	logFile string    // raw output, appended
	// stopSignal asks the process to exit cleanly; default SIGTERM.
	stopSignal syscall.Signal
	// cred runs the process as another user (PostgreSQL refuses root);
	// nil: as the supervisor.
	cred *syscall.Credential
}

// process is one supervised child: its output goes line by line, prefixed,
// to the shared log writer and unprefixed to its own log file.
type process struct {
	spec    processSpec
	cmd     *exec.Cmd
	out     *lineWriter
	done    chan struct{}
	waitErr error
	stopped bool
	mu      sync.Mutex
}

func startProcess(spec processSpec) (*process, error) {
	file, err := os.OpenFile(spec.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	out := &lineWriter{prefix: "[" + spec.name + "] ", log: spec.log, file: file, path: spec.logFile}
	cmd := exec.Command(spec.bin, spec.args...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	if spec.log != nil {
		cmd.Stdout = out
		cmd.Stderr = out
	} else {
		// Nobody reads the output live: the child writes its log file
		// itself, with no copying through this process.
		cmd.Stdout = file
		cmd.Stderr = file
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C in the terminal reaches only the
		// supervisor, which then stops the children in order; and stopping
		// a child also stops whatever it spawned.
		Setpgid: true,
		// If the supervisor dies without stopping them, the children go too.
		// (Go sets it after switching to cred, which would clear it.)
		Pdeathsig:  syscall.SIGTERM,
		Credential: spec.cred,
	}
	if err := cmd.Start(); err != nil {
		file.Close()
		return nil, fmt.Errorf("start %s: %w", spec.name, err)
	}
	if spec.log == nil {
		file.Close() // the child has its own descriptor
		out.file = nil
	}
	p := &process{spec: spec, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		out.flush()
		if out.file != nil {
			file.Close()
		}
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady polls check until it passes, the process exits or timeout ends.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if p.exited() {
			p.mu.Lock()
			err := p.waitErr
			p.mu.Unlock()
			return fmt.Errorf("%s exited (%v) before it was ready; last output:\n%s", p.spec.name, err, p.out.tail())
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last check: %v); last output:\n%s", p.spec.name, ctx.Err(), last, p.out.tail())
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM to the process group, waits up to timeout for a
// graceful exit, then kills the group. A non-zero exit after SIGTERM is
// reported: services must shut down cleanly.
func (p *process) stop(timeout time.Duration) error {
	p.mu.Lock()
	already := p.stopped
	p.stopped = true
	p.mu.Unlock()
	if already {
		<-p.done
		return nil
	}
	if !p.exited() {
		sig := p.spec.stopSignal
		if sig == 0 {
			sig = syscall.SIGTERM
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %s after SIGTERM; killed", p.spec.name, timeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waitErr != nil {
		return fmt.Errorf("%s: %w", p.spec.name, p.waitErr)
	}
	return nil
}

// lineWriter splits a child's output into lines, writes each with its
// prefix to log and as is to file, and keeps the last lines for error
// reports. Without a file (the child writes its log file directly), tail
// reads the end of the file at path.
type lineWriter struct {
	prefix string
	log    io.Writer
	file   io.Writer
	path   string

	mu      sync.Mutex
	partial []byte
	last    []string
}

const tailLines = 40

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.emit(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	return len(b), nil
}

func (w *lineWriter) emit(line string) {
	if w.log != nil {
		_, _ = io.WriteString(w.log, w.prefix+line+"\n")
	}
	if w.file != nil {
		_, _ = io.WriteString(w.file, line+"\n")
	}
	w.last = append(w.last, line)
	if len(w.last) > tailLines {
		w.last = w.last[len(w.last)-tailLines:]
	}
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.emit(string(w.partial))
		w.partial = nil
	}
}

func (w *lineWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil && w.path != "" {
		return tailOfFile(w.path, tailLines)
	}
	return strings.Join(w.last, "\n")
}

func tailOfFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// syncWriter serialises whole writes from several processes onto one
// writer, so prefixed lines never interleave.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// SyncWriter wraps w so that concurrent writers never interleave within a
// write.
func SyncWriter(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	if _, ok := w.(*syncWriter); ok {
		return w
	}
	return &syncWriter{w: w}
}

// baseEnv is the part of the supervisor's environment a child inherits:
// enough to find programs and a home, nothing that could configure a
// service behind the stack's back (services read only their own variables).
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LANG", "TMPDIR", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// freePorts returns one port per entry of want: the entry itself when it is
// not zero, otherwise a port that was free on 127.0.0.1. All listeners stay
// open until every port is chosen, so the free ones are distinct.
func freePorts(want ...int) ([]int, error) {
	ports := make([]int, len(want))
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i, w := range want {
		if w != 0 {
			ports[i] = w
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
