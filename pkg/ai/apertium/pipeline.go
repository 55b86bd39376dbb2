package apertium

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// utf8Locale is the locale the programs run in; the apertium command picks a UTF-8 one as well.
const utf8Locale = "C.UTF-8"

// errGarbage is a pipeline answer that cannot be a translation: not UTF-8, or without the
// superblank "[]" that ends every deformatted input (the programs after one that died flush
// empty answers on their way out).
var errGarbage = errors.New("pipeline answer is not a translation")

// pipeline is one running chain of a mode's programs in null-flush mode: each NUL-terminated
// input written to in comes out of out terminated by a NUL. The programs share one process
// group, so that killing the group stops them all.
type pipeline struct {
	procs  []*exec.Cmd
	pgid   int
	in     *os.File // the first program's stdin
	out    *os.File // the last program's stdout
	rd     *bufio.Reader
	stderr *tailBuffer
	done   chan struct{} // closed once every program has exited
	errEOF chan struct{} // closed once stderr is drained (every program's copy closed)

	lastUsed time.Time // guarded by the pool's mutex while idle
	killOnce sync.Once
}

// startPipeline starts the programs connected by pipes.
func startPipeline(cmds [][]string) (_ *pipeline, err error) {
	p := &pipeline{stderr: &tailBuffer{max: maxStderr}, done: make(chan struct{}), errEOF: make(chan struct{})}
	var toClose []*os.File // the parent's copies of the children's ends
	defer func() {
		for _, f := range toClose {
			_ = f.Close()
		}
		if procs := p.procs; len(procs) > 0 {
			go func() {
				for _, c := range procs {
					_ = c.Wait()
				}
				close(p.done)
			}()
		}
		if err != nil {
			p.kill()
		}
	}()
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	toClose = append(toClose, errW)
	go func() {
		p.stderr.drain(errR)
		close(p.errEOF)
	}()

	stdin, in, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.in = in
	toClose = append(toClose, stdin)
	env := append(os.Environ(), "LC_CTYPE="+utf8Locale)
	for i, argv := range cmds {
		r, w, perr := os.Pipe()
		if perr != nil {
			return nil, perr
		}
		toClose = append(toClose, w)
		if i == len(cmds)-1 {
			p.out = r
		} else {
			toClose = append(toClose, r)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, w, errW
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: p.pgid}
		if err := cmd.Start(); err != nil {
			if i == len(cmds)-1 {
				_ = r.Close()
				p.out = nil
			}
			return nil, fmt.Errorf("start %s: %w", argv[0], err)
		}
		if i == 0 {
			p.pgid = cmd.Process.Pid
		}
		p.procs = append(p.procs, cmd)
		stdin = r
	}
	p.rd = bufio.NewReaderSize(p.out, 64<<10)
	return p, nil
}

// kill stops every program of the pipeline and waits (briefly) for them to go.
func (p *pipeline) kill() {
	p.killOnce.Do(func() {
		if p.pgid > 0 {
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		}
		if p.in != nil {
			_ = p.in.Close()
		}
		if p.out != nil {
			_ = p.out.Close()
		}
		if len(p.procs) == 0 {
			return
		}
		// Wait for the programs, and for their last words on stderr (for the error message).
		timeout := time.After(5 * time.Second)
		for _, ch := range []chan struct{}{p.done, p.errEOF} {
			select {
			case <-ch:
			case <-timeout:
				return
			}
		}
	})
}

// translate writes the deformatted inputs, each followed by a NUL, and reads one NUL-terminated
// answer per input. It gives up at deadline or when ctx ends; the pipeline must then be killed,
// since an answer may still be on its way.
func (p *pipeline) translate(ctx context.Context, deadline time.Time, inputs []string) ([]string, error) {
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := p.in.SetWriteDeadline(deadline); err != nil {
		return nil, err
	}
	if err := p.out.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() {
		now := time.Now()
		_ = p.in.SetWriteDeadline(now)
		_ = p.out.SetReadDeadline(now)
	})
	defer stop()

	// Write and read at once: a batch larger than the pipes' buffers would otherwise block the
	// writer on a pipeline that waits for its output to be read.
	wrote := make(chan error, 1)
	go func() {
		var b strings.Builder
		for _, in := range inputs {
			b.WriteString(in)
			b.WriteByte(0)
		}
		_, err := p.in.WriteString(b.String())
		wrote <- err
	}()
	outs := make([]string, 0, len(inputs))
	var rerr error
	for range inputs {
		chunk, err := p.rd.ReadString(0)
		if err != nil {
			rerr = fmt.Errorf("read answer %d of %d: %w", len(outs)+1, len(inputs), err)
			break
		}
		chunk = chunk[:len(chunk)-1]
		if !utf8.ValidString(chunk) || !strings.Contains(chunk, "[]") {
			rerr = errGarbage
			break
		}
		outs = append(outs, chunk)
	}
	if rerr != nil {
		// Unblock the writer before waiting for it.
		_ = p.in.SetWriteDeadline(time.Now())
	}
	werr := <-wrote
	switch {
	case rerr != nil:
		return nil, rerr
	case werr != nil:
		return nil, fmt.Errorf("write: %w", werr)
	}
	return outs, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) drain(f *os.File) {
	defer func() { _ = f.Close() }()
	b := make([]byte, 4096)
	for {
		n, err := f.Read(b)
		if n > 0 {
			t.mu.Lock()
			t.buf = append(t.buf, b[:n]...)
			if len(t.buf) > t.max {
				t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
			}
			t.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
