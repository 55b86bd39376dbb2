package stack

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLineWriterPrefixesWholeLines(t *testing.T) {
	var log, file bytes.Buffer
	w := &lineWriter{prefix: "[auth] ", log: &log, file: &file}
	for _, chunk := range []string{"first li", "ne\nsecond\nthi", "rd"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	w.flush()
	if got, want := log.String(), "[auth] first line\n[auth] second\n[auth] third\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
	if got, want := file.String(), "first line\nsecond\nthird\n"; got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
	if !strings.HasSuffix(w.tail(), "third") {
		t.Errorf("tail = %q", w.tail())
	}
}

func TestProcessStopsGracefullyOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "terminated")
	var log bytes.Buffer
	p, err := startProcess(processSpec{
		name: "sh",
		bin:  "/bin/sh",
		// The trap proves the child got SIGTERM (not SIGKILL) and could
		// finish its shutdown.
		args:    []string{"-c", `trap 'echo bye; touch "$MARKER"; exit 0' TERM; echo ready; while :; do sleep 0.05; done`},
		dir:     dir,
		env:     append(baseEnv(), "MARKER="+marker),
		log:     SyncWriter(&log),
		logFile: filepath.Join(dir, "sh.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = p.waitReady(t.Context(), 5*time.Second, func(context.Context) error {
		if !strings.Contains(p.out.tail(), "ready") {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !fileExists(marker) {
		t.Error("child did not run its SIGTERM handler")
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "sh.log"))
	// (The shell may also report its sleep child, which got the group's
	// SIGTERM too.)
	if !strings.HasPrefix(string(raw), "ready\n") || !strings.HasSuffix(string(raw), "bye\n") || !strings.Contains(log.String(), "[sh] bye\n") {
		t.Errorf("file %q, log %q", raw, log.String())
	}
	if err := p.stop(time.Second); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

func TestWaitReadyReportsEarlyExit(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess(processSpec{
		name: "failing", bin: "/bin/sh", args: []string{"-c", "echo cannot open database; exit 3"},
		dir: dir, env: baseEnv(), logFile: filepath.Join(dir, "f.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = p.waitReady(t.Context(), 10*time.Second, func(context.Context) error { return errors.New("never ready") })
	if err == nil || !strings.Contains(err.Error(), "cannot open database") || !strings.Contains(err.Error(), "exited") {
		t.Errorf("err = %v, want the exit and the last output", err)
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ports, err := freePorts(0, 0, 4321, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || p == 0 {
			t.Errorf("ports %v", ports)
		}
		seen[p] = true
	}
	if ports[2] != 4321 {
		t.Errorf("fixed port not kept: %v", ports)
	}
}
