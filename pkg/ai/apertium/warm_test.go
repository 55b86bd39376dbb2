package apertium

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"supportplatform.dev/ai/mt"
)

// updateGolden regenerates testdata/oneshot-<mode>.json, the one-shot path's output for the
// equivalence corpus (about 1,700 apertium runs: minutes of CPU):
//
//	go test ./apertium -run TestWarmMatchesOneShot -update-oneshot
var updateGolden = flag.Bool("update-oneshot", false, "record the one-shot outputs of the warm equivalence corpus")

// liveChecks is how many texts of each pair's corpus are also run through the one-shot path on
// every run, spread over the corpus, proving that the recorded outputs are this installation's.
const liveChecks = 8

// TestWarmMatchesOneShot translates, for each installed language pair, a corpus of 210 texts
// (sentences from word lists, markup-like text, emoji, very long lines, empty lines, control
// characters) warm, one by one and as one batch, and requires exactly the one-shot path's output
// for each: the outputs the one-shot path recorded in testdata (all of them), and a live one-shot
// run of a spread subset.
func TestWarmMatchesOneShot(t *testing.T) {
	requireApertium(t)
	pairs := []struct {
		mode string
		pair mt.Pair
	}{
		{"eng-spa", mt.Pair{Source: "en", Target: "es"}},
		{"spa-eng", mt.Pair{Source: "es", Target: "en"}},
		{"eng-cat", mt.Pair{Source: "en", Target: "ca"}},
		{"fr-es", mt.Pair{Source: "fr", Target: "es"}},
		{"cat-eng", mt.Pair{Source: "ca", Target: "en"}},
		{"es-fr", mt.Pair{Source: "es", Target: "fr"}},
		{"es-pt", mt.Pair{Source: "es", Target: "pt"}},
		{"pt-es", mt.Pair{Source: "pt", Target: "es"}},
	}
	cold := New(Config{MaxProcesses: 2, Timeout: 2 * time.Minute})
	warm := New(Config{Warm: true, MaxProcesses: 2, Timeout: 30 * time.Second})
	t.Cleanup(func() { _ = warm.Close() })
	ctx := context.Background()
	oneShot := func(t *testing.T, pair mt.Pair, texts []string) []string {
		out := make([]string, len(texts))
		errs := make([]error, len(texts))
		var wg sync.WaitGroup
		next := make(chan int)
		for range 2 {
			wg.Go(func() {
				for i := range next {
					var got []string
					got, errs[i] = cold.Translate(ctx, pair, []string{texts[i]})
					if errs[i] == nil {
						out[i] = got[0]
					}
				}
			})
		}
		for i := range texts {
			next <- i
		}
		close(next)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("one-shot: %v", err)
		}
		return out
	}
	for _, tc := range pairs {
		t.Run(tc.mode, func(t *testing.T) {
			if ok, err := warm.Supports(ctx, tc.pair); err != nil || !ok {
				t.Fatalf("mode %s is not installed: %v", tc.mode, err)
			}
			texts := corpus(tc.pair.Source, 210)
			golden := filepath.Join("testdata", "oneshot-"+tc.mode+".json")
			var want []string
			if *updateGolden {
				want = oneShot(t, tc.pair, texts)
				data, err := json.MarshalIndent(recorded{Texts: texts, OneShot: want}, "", " ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, data, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				data, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (record it with -update-oneshot)", err)
				}
				var rec recorded
				if err := json.Unmarshal(data, &rec); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(rec.Texts, texts) {
					t.Fatalf("%s was recorded for another corpus: record it again with -update-oneshot", golden)
				}
				want = rec.OneShot
				// The recorded outputs are this installation's: a spread subset, live.
				var idx []int
				var sample []string
				for k := range liveChecks {
					i := k * len(texts) / liveChecks
					idx = append(idx, i)
					sample = append(sample, texts[i])
				}
				for k, got := range oneShot(t, tc.pair, sample) {
					if got != want[idx[k]] {
						t.Fatalf("%s: the live one-shot output of text %d %.80q is %.200q, recorded %.200q: record again with -update-oneshot",
							tc.mode, idx[k], sample[k], got, want[idx[k]])
					}
				}
			}
			diffs := 0
			for i, text := range texts {
				got, err := warm.Translate(ctx, tc.pair, []string{text})
				if err != nil {
					t.Fatalf("warm %.60q: %v", text, err)
				}
				if got[0] != want[i] {
					diffs++
					t.Errorf("%s %.80q:\n warm     %.200q\n one-shot %.200q", tc.mode, text, got[0], want[i])
				}
			}
			batch, err := warm.Translate(ctx, tc.pair, texts)
			if err != nil {
				t.Fatalf("warm batch: %v", err)
			}
			for i := range texts {
				if batch[i] != want[i] {
					diffs++
					t.Errorf("%s batch text %d %.80q:\n warm     %.200q\n one-shot %.200q", tc.mode, i, texts[i], batch[i], want[i])
				}
			}
			t.Logf("%s: %d texts, %d differences", tc.mode, len(texts), diffs)
		})
	}
}

// recorded is a pair's corpus with the one-shot path's output of each text.
type recorded struct {
	Texts   []string `json:"texts"`
	OneShot []string `json:"oneShot"`
}

// TestWarmRestartsKilledPipeline kills a program in the middle of a warm pipeline: the next
// request is answered by a new pipeline.
func TestWarmRestartsKilledPipeline(t *testing.T) {
	requireApertium(t)
	e := New(Config{Warm: true, MaxProcesses: 1})
	t.Cleanup(func() { _ = e.Close() })
	ctx := context.Background()
	en2es := mt.Pair{Source: "en", Target: "es"}
	if got, err := e.Translate(ctx, en2es, []string{"The house is big."}); err != nil || got[0] != "La casa es grande." {
		t.Fatalf("first translation = %q, %v", got, err)
	}
	before := e.WarmProcesses()["eng-spa"]
	if len(before) != 1 || len(before[0]) < 5 {
		t.Fatalf("warm processes = %v, want one pipeline of eng-spa", before)
	}
	victim := before[0][len(before[0])/2]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got, err := e.Translate(ctx, en2es, []string{"The dog is old."})
	if err != nil || got[0] != "El perro es viejo." {
		t.Fatalf("translation after the kill = %q, %v", got, err)
	}
	after := e.WarmProcesses()["eng-spa"]
	if len(after) != 1 || reflect.DeepEqual(after, before) {
		t.Fatalf("warm processes after the kill = %v, want a new pipeline (was %v)", after, before)
	}
	for _, pid := range before[0] {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d of the broken pipeline still exists (kill 0: %v)", pid, err)
		}
	}
}

// fakeWarm builds an engine whose warm pipelines run fake programs: apertium-wblank-mode is a
// script printing a one-program pipeline, the program a bash loop answering each NUL-terminated
// input as behave decides. Each start of the program adds a file to starts.
func fakeWarm(t *testing.T, behave string, cfg Config) (e *Engine, starts string) {
	t.Helper()
	dir := t.TempDir()
	starts = filepath.Join(dir, "starts")
	for _, d := range []string{starts, filepath.Join(dir, "data", "modes")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "modes", "eng-spa.mode"), []byte("cat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "fake-pipeline")
	script := fmt.Sprintf(`#!/bin/bash
n=$(ls %[1]q | wc -l)
touch %[1]q/$$
while IFS= read -r -d '' x; do
%[2]s
printf '%%s\0' "$x"
done
`, starts, behave)
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	wblank := filepath.Join(dir, "wblank")
	if err := os.WriteFile(wblank, []byte(fmt.Sprintf("#!/bin/sh\necho \"'%s' \\$1 | cat\"\n", prog)), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Warm = true
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.WblankCommand = wblank
	cfg.Command = filepath.Join(dir, "no-apertium") // the one-shot path must not be taken
	e = New(cfg)
	t.Cleanup(func() { _ = e.Close() })
	return e, starts
}

func countStarts(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func TestWarmRetriesOnAFreshPipeline(t *testing.T) {
	en2es := mt.Pair{Source: "en", Target: "es"}
	for _, tt := range []struct {
		name, behave string
	}{
		{"dies", `[ "$n" = 0 ] && kill -9 $$`},
		{"hangs", `[ "$n" = 0 ] && sleep 600`},
		{"garbage", `[ "$n" = 0 ] && x=$'\xff\xfe'`},
		{"exits", `[ "$n" = 0 ] && exit 0`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, starts := fakeWarm(t, tt.behave, Config{Timeout: 2 * time.Second})
			start := time.Now()
			got, err := e.Translate(context.Background(), en2es, []string{"Hello <b>you</b>", "two\n\nlines"})
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			if want := []string{"Hello <b>you</b>", "two\n\nlines"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("got %q, want the fake's echo %q", got, want)
			}
			if n := countStarts(t, starts); n != 2 {
				t.Fatalf("%d pipelines started, want 2 (the failed one and its replacement)", n)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Fatalf("took %v, want about one Timeout at most", d)
			}
		})
	}
}

func TestWarmGivesUpAfterOneRetry(t *testing.T) {
	e, starts := fakeWarm(t, `echo "broken pipeline $n" >&2; exit 3`, Config{Timeout: time.Second})
	_, err := e.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"Hello"})
	var rerr *RunError
	if !errors.As(err, &rerr) || rerr.Mode != "eng-spa" || !strings.Contains(rerr.Stderr, "broken pipeline 1") {
		t.Fatalf("error = %v, want a *RunError with the second pipeline's stderr", err)
	}
	if n := countStarts(t, starts); n != 2 {
		t.Fatalf("%d pipelines started, want 2", n)
	}
}

func TestWarmCancelledRequestKillsThePipeline(t *testing.T) {
	e, starts := fakeWarm(t, `sleep 600`, Config{Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Translate(ctx, mt.Pair{Source: "en", Target: "es"}, []string{"Hello"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("returned after %v", d)
	}
	// The one pipeline may be killed before its program got to record its start.
	if n := countStarts(t, starts); n > 1 {
		t.Fatalf("%d pipelines started, want 1 (no retry for a cancelled request)", n)
	}
	if w := e.WarmProcesses(); len(w) != 0 {
		t.Fatalf("idle pipelines %v, want the hung one gone", w)
	}
}

func TestWarmPoolBoundAndIdleStop(t *testing.T) {
	e, starts := fakeWarm(t, `sleep 0.05`, Config{MaxProcesses: 2, IdleTimeout: 300 * time.Millisecond})
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("text %d", i)
			got, err := e.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{text})
			if err == nil && got[0] != text {
				err = fmt.Errorf("got %q for %q", got[0], text)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := countStarts(t, starts); n < 1 || n > 2 {
		t.Fatalf("%d pipelines started for 12 concurrent requests, want at most MaxProcesses=2", n)
	}
	idle := e.WarmProcesses()["eng-spa"]
	if len(idle) == 0 {
		t.Fatal("no idle pipeline right after the requests")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(e.WarmProcesses()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("idle pipelines %v still running long after IdleTimeout", e.WarmProcesses())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pids := range idle {
		for _, pid := range pids {
			for syscall.Kill(pid, 0) == nil {
				if time.Now().After(deadline) {
					t.Fatalf("process %d of an idle pipeline still running", pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	// The next request starts a pipeline again.
	if _, err := e.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"again"}); err != nil {
		t.Fatal(err)
	}
}

func TestWarmModeNotAPipelineIsServedOneShot(t *testing.T) {
	cfg := fakeInstall(t, "echo one-shot\n", "eng-spa")
	cfg.Warm = true
	cfg.WblankCommand = filepath.Join(t.TempDir(), "no-such-wblank")
	e := New(cfg)
	t.Cleanup(func() { _ = e.Close() })
	got, err := e.Translate(context.Background(), mt.Pair{Source: "en", Target: "es"}, []string{"Hello"})
	if err != nil || got[0] != "one-shot\n" {
		t.Fatalf("got %q, %v; want the one-shot command's answer", got, err)
	}
}

func TestSplitPipeline(t *testing.T) {
	got, err := splitPipeline(`lt-proc -z '/a b/x.bin' | apertium-tagger -z -g $2 'p' | lt-proc -z $1 "g $1.bin" | x\ y ''`, []string{"-n", ""})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"lt-proc", "-z", "/a b/x.bin"},
		{"apertium-tagger", "-z", "-g", "p"},
		{"lt-proc", "-z", "-n", "g -n.bin"},
		{"x y", ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	for _, bad := range []string{"a > f", "a; b", "a | | b", "a $(b)", "a `b`", "a $HOME", "a 'open", "a && b"} {
		if _, err := splitPipeline(bad, []string{"-n", ""}); err == nil {
			t.Errorf("splitPipeline(%q) accepted", bad)
		}
	}
}

// TestWarmEngineContract repeats the one-shot engine's checks on a warm engine.
func TestWarmEngineContract(t *testing.T) {
	requireApertium(t)
	e := New(Config{Warm: true})
	t.Cleanup(func() { _ = e.Close() })
	ctx := context.Background()
	en2es := mt.Pair{Source: "en", Target: "es"}
	texts := []string{"The house is big", "Tom & Jerry <3 \"quoted\"", "Good morning", "Hello", "friend", "<b>Hello</b> & goodbye"}
	got, err := e.Translate(ctx, en2es, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"casa", "Tom & Jerry <3", "Buenos días", "Hola", "amigo", "<b>Hola</b> &"} {
		if !strings.Contains(got[i], want) {
			t.Errorf("text %q = %q, want it to contain %q", texts[i], got[i], want)
		}
	}
	if got[4] != "amigo" {
		t.Errorf("mid-sentence %q came back as %q, want amigo", texts[4], got[4])
	}
	back, err := e.Translate(ctx, mt.Pair{Source: "es", Target: "en"}, []string{"La casa es grande"})
	if err != nil || !strings.Contains(back[0], "house") {
		t.Fatalf("es->en = %q, %v; want house", back, err)
	}
	if _, err := e.Translate(ctx, mt.Pair{Source: "en", Target: "xh"}, []string{"Hello"}); !errors.Is(err, mt.ErrUnsupportedPair) {
		t.Fatalf("error = %v, want mt.ErrUnsupportedPair", err)
	}
	if len(e.WarmProcesses()) != 2 {
		t.Fatalf("warm pipelines %v, want eng-spa and spa-eng", e.WarmProcesses())
	}
}

// TestWarmConcurrentRequestsShareAFlush holds the one pipeline (MaxProcesses 1) busy on a first
// request while eight more arrive: they wait in the queue and go together, in one write, once the
// pipeline is free, each getting its own answers.
func TestWarmConcurrentRequestsShareAFlush(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	e, starts := fakeWarm(t, fmt.Sprintf(`[[ "$x" == *first* ]] && while [ ! -e %q ]; do sleep 0.02; done`, release), Config{MaxProcesses: 1, Timeout: time.Minute})
	en2es := mt.Pair{Source: "en", Target: "es"}
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		got, err := e.Translate(ctx, en2es, []string{"first"})
		if err == nil && got[0] != "first" {
			err = fmt.Errorf("got %q", got)
		}
		first <- err
	}()
	// The first request has the pipeline once the pool's queue is empty again.
	queued := func() int { return queuedRequests(e, "eng-spa") }
	waitFor(t, "the first request to take the pipeline", func() bool { return firstTaken(e) })
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			// Two texts each: every request gets its own two answers back, in order.
			texts := []string{fmt.Sprintf("text %d a", i), fmt.Sprintf("text %d b", i)}
			got, err := e.Translate(ctx, en2es, texts)
			if err == nil && !reflect.DeepEqual(got, texts) {
				err = fmt.Errorf("got %q for %q", got, texts)
			}
			errs <- err
		})
	}
	waitFor(t, "eight queued requests", func() bool { return queued() == n })
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if requests, writes := e.WarmBatches(); requests != n+1 || writes != 2 {
		t.Fatalf("%d requests in %d writes, want %d in 2 (the first alone, then the eight together)", requests, writes, n+1)
	}
	if got := countStarts(t, starts); got != 1 {
		t.Fatalf("%d pipelines started, want 1", got)
	}
}

// TestWarmQueuedRequestCancelled leaves the queue when its context ends before a pipeline is
// free, and the others of its batch are answered.
func TestWarmQueuedRequestCancelled(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	e, _ := fakeWarm(t, fmt.Sprintf(`[[ "$x" == *first* ]] && while [ ! -e %q ]; do sleep 0.02; done`, release), Config{MaxProcesses: 1, Timeout: time.Minute})
	en2es := mt.Pair{Source: "en", Target: "es"}
	first := make(chan error, 1)
	go func() {
		_, err := e.Translate(context.Background(), en2es, []string{"first"})
		first <- err
	}()
	waitFor(t, "the first request to take the pipeline", func() bool { return firstTaken(e) })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := e.Translate(ctx, en2es, []string{"cancelled"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want the context's deadline", err)
	}
	second := make(chan error, 1)
	go func() {
		got, err := e.Translate(context.Background(), en2es, []string{"second"})
		if err == nil && got[0] != "second" {
			err = fmt.Errorf("got %q", got)
		}
		second <- err
	}()
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan error{first, second} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if requests, _ := e.WarmBatches(); requests != 2 {
		t.Fatalf("%d requests answered, want 2 (the cancelled one left the queue)", requests)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// firstTaken reports whether eng-spa's one request has left the queue for the pipeline's slot.
func firstTaken(e *Engine) bool {
	e.warmMu.Lock()
	p := e.pools["eng-spa"]
	e.warmMu.Unlock()
	return p != nil && queuedRequests(e, "eng-spa") == 0 && len(p.slots) == 1
}

// queuedRequests is how many requests wait in mode's queue (-1: no pool yet).
func queuedRequests(e *Engine, mode string) int {
	e.warmMu.Lock()
	p := e.pools[mode]
	e.warmMu.Unlock()
	if p == nil {
		return -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}
