package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"supportplatform.dev/ai/apertium"
	"supportplatform.dev/ai/mt"
)

// The apertium-* cases measure the Apertium engine in this process, without HTTP, Redis or
// language detection: the warm pipelines (the service's default, APERTIUM_WARM=true) against
// the one-shot path (APERTIUM_WARM=false, the apertium command per request), with the same
// 20-word sentences, the same workers and APERTIUM_MAX_PROCESSES=2, in the same run. The
// translation service's own figures are translate-uncached's (warm, through the gateway).

// apertiumMaxProcesses is the service's default APERTIUM_MAX_PROCESSES.
const apertiumMaxProcesses = 2

var en2es = mt.Pair{Source: "en", Target: "es"}

// sentence20 is the n-th English sentence of 20 words, distinct for every n (two
// uncachedSentence clauses with different counters).
func sentence20(n uint64) string {
	a := strings.TrimSuffix(uncachedSentence(2*n), ".")
	b := strings.TrimSuffix(uncachedSentence(2*n+1), ".")
	return a + ", and t" + b[1:] + " with my friend."
}

// apertiumCase measures one engine; the engine is made in Setup and closed by the next
// apertium case's Setup or at exit (Close is idempotent).
type apertiumCase struct {
	warm bool
	mu   sync.Mutex
	e    *apertium.Engine
	n    atomic.Uint64
}

func (a *apertiumCase) setup(ctx context.Context, _ *benchEnv) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.e = apertium.New(apertium.Config{Warm: a.warm, MaxProcesses: apertiumMaxProcesses, Timeout: 30 * time.Second})
	if ok, err := a.e.Supports(ctx, en2es); err != nil || !ok {
		return "", fmt.Errorf("apertium eng-spa is not installed: %v", err)
	}
	mode := "one-shot (the apertium command per call)"
	if a.warm {
		mode = "warm null-flush pipelines"
	}
	return fmt.Sprintf("%s, MaxProcesses %d, e.g. %q", mode, apertiumMaxProcesses, sentence20(0)), nil
}

func (a *apertiumCase) call(ctx context.Context, _ *benchEnv) error {
	text := sentence20(a.n.Add(1) + 1_000_000*boolToUint(a.warm))
	out, err := a.e.Translate(ctx, en2es, []string{text})
	if err != nil {
		return err
	}
	if low := " " + strings.ToLower(out[0]) + " "; out[0] == text || strings.Contains(low, " the ") || strings.TrimSpace(out[0]) == "" {
		return fmt.Errorf("%q: bad translation %q", text, out[0])
	}
	return nil
}

// after reports the memory of the warm pipelines (idle once the load stops) and closes the engine.
func (a *apertiumCase) after(_ context.Context, _ *benchEnv) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.e == nil {
		return "", errors.New("no engine")
	}
	defer func() { _ = a.e.Close() }()
	if !a.warm {
		return "one-shot: no process between requests", nil
	}
	var parts []string
	rss, pss, hwm := 0, 0, 0
	for mode, pipes := range a.e.WarmProcesses() {
		for _, pids := range pipes {
			r, p, h := 0, 0, 0
			for _, pid := range pids {
				r += memKB(pid, "status", "VmRSS:")
				p += memKB(pid, "smaps_rollup", "Pss:")
				h += memKB(pid, "status", "VmHWM:")
			}
			rss, pss, hwm = rss+r, pss+p, hwm+h
			parts = append(parts, fmt.Sprintf("%s (%d processes) RSS %d MB PSS %d MB, busy peak RSS %d MB", mode, len(pids), r/1024, p/1024, h/1024))
		}
	}
	requests, writes := a.e.WarmBatches()
	return fmt.Sprintf("warm pipelines: %s; total RSS %d MB, PSS %d MB (PSS shares the libraries' pages among the processes); "+
		"busy (the processes' peak RSS under the load, VmHWM) %d MB; %d requests in %d pipeline writes (concurrent requests share a flush)",
		strings.Join(parts, ", "), rss/1024, pss/1024, hwm/1024, requests, writes), nil
}

func boolToUint(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// memKB is a memory figure of a process in KiB (VmRSS of status, Pss of smaps_rollup), 0 when
// unknown.
func memKB(pid int, file, key string) int {
	return procKB(pid, file, key)[0]
}

// procKB reads /proc/<pid>/<file> once and returns the kB figures of keys
// ("VmRSS:"), 0 for a key it lacks or a file it cannot read: one reading,
// so that figures of one moment are compared.
func procKB(pid int, file string, keys ...string) []int {
	out := make([]int, len(keys))
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		for i, key := range keys {
			if rest, ok := strings.CutPrefix(line, key); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					out[i], _ = strconv.Atoi(f[0])
				}
			}
		}
	}
	return out
}

// serviceRSS reports the translation service's memory and its children's (warm pipelines)
// after translate-uncached.
func serviceRSS(_ context.Context, e *benchEnv) (string, error) {
	if e.Stack == nil {
		return "", errors.New("no stack")
	}
	pid, ok := e.Stack.PIDs()["translation"]
	if !ok {
		return "", errors.New("translation is not running")
	}
	self, selfPss := memKB(pid, "status", "VmRSS:"), memKB(pid, "smaps_rollup", "Pss:")
	rss, pss, n := 0, 0, 0
	for _, c := range descendants(pid) {
		rss += memKB(c, "status", "VmRSS:")
		pss += memKB(c, "smaps_rollup", "Pss:")
		n++
	}
	return fmt.Sprintf("translation RSS %d MB (PSS %d MB); its %d Apertium processes RSS %d MB (PSS %d MB)",
		self/1024, selfPss/1024, n, rss/1024, pss/1024), nil
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	parent := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, en := range entries {
		p, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + en.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(data), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data)[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[pp] = append(parent[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range parent[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// apertiumCases are the one-shot / warm pair, one-shot first (its figures are the "before").
func apertiumCases() []*benchCase {
	oneShot, warm := &apertiumCase{}, &apertiumCase{warm: true}
	return []*benchCase{
		{
			Name: "apertium-oneshot", Direct: oneShot.call, Setup: oneShot.setup, After: oneShot.after, Slow: true,
			Note: "a new 20-word English sentence per call to es through the Apertium engine in the bench process, APERTIUM_WARM=false",
		},
		{
			Name: "apertium-warm", Direct: warm.call, Setup: warm.setup, After: warm.after, Slow: true, RelativeTo: "apertium-oneshot",
			Note: "the same through warm pipelines (APERTIUM_WARM=true)",
		},
	}
}
