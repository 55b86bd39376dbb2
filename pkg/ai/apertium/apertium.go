// Package apertium translates offline with the Apertium rule-based engine of the Debian packages
// (apertium plus one apertium-<pair> package per language pair). It needs no network and no
// model download, which makes it the default engine for the pairs it has.
//
// By default every translation runs the `apertium` command, which starts the mode's whole
// pipeline of a dozen programs: about 200 ms of CPU each time. With Config.Warm the engine keeps
// pipelines running instead, their programs in null-flush mode (-z), as Apertium's own server
// apertium-apy does: a text is written followed by a NUL and its translation read up to the NUL
// that follows it. A pool per mode holds at most MaxProcesses of them, stops those idle for
// IdleTimeout, and replaces one that dies, hangs or answers garbage (the request is retried once
// on a fresh pipeline). Both ways give the same translations.
package apertium

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"supportplatform.dev/ai/langcode"
	"supportplatform.dev/ai/mt"
)

const (
	// DefaultDataDir is where the Debian packages install their data; modes live in its modes/.
	DefaultDataDir = "/usr/share/apertium"
	// DefaultTimeout bounds one run of the pipeline.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxProcesses bounds concurrent pipelines (per mode when warm). Each one is a chain
	// of a dozen processes holding the pair's transducers (a warm eng-spa pipeline: 13 processes,
	// about 110 MB PSS, 200 MB RSS counting the shared libraries in each), so a few at a time
	// keep the service's footprint small.
	DefaultMaxProcesses = 2
	maxStderr           = 4 << 10
)

// ErrNotInstalled is returned when neither the modes directory nor the command can be found.
var ErrNotInstalled = errors.New("apertium: not installed (no modes directory and no apertium command)")

// Config locates the installation.
type Config struct {
	// Command is the apertium executable; default "apertium" from PATH.
	Command string
	// DataDir holds modes/*.mode; default /usr/share/apertium.
	DataDir string
	// Timeout bounds one run of the one-shot pipeline, or one answer of a warm one.
	Timeout time.Duration
	// MaxProcesses bounds the pipelines running at once: one-shot runs in all, or warm
	// pipelines per mode.
	MaxProcesses int

	// Warm keeps pipelines running between requests (see the package documentation); false runs
	// the apertium command per request. A mode whose pipeline cannot be started warm (its mode
	// file is not a plain pipeline, or apertium-wblank-mode is missing) is served one-shot.
	Warm bool
	// IdleTimeout stops a warm pipeline unused for that long; default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// WblankCommand is Apertium's apertium-wblank-mode, which gives a mode's null-flush
	// pipeline; default from PATH.
	WblankCommand string
	// Logger receives the restarts of warm pipelines; default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the idle accounting; default time.Now.
	Now func() time.Time
}

// Mode is one installed translation direction.
type Mode struct {
	// Name is Apertium's name for it, e.g. "eng-spa", "fr-es" or "es-pt_BR".
	Name string
	// Source and Target are normalised ISO 639 codes.
	Source, Target string
	// Variant is the part after "_" (a regional or orthographic variant), "" for the main mode.
	Variant string
}

// RunError is a failed run of the pipeline.
type RunError struct {
	Mode   string
	Stderr string
	Err    error
}

func (e *RunError) Error() string {
	msg := fmt.Sprintf("apertium %s: %v", e.Mode, e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *RunError) Unwrap() error { return e.Err }

// Engine runs Apertium. It is safe for concurrent use.
type Engine struct {
	cfg Config
	sem chan struct{}

	mu     sync.Mutex
	loaded bool
	modes  map[mt.Pair]Mode
	list   []Mode

	warmMu    sync.Mutex
	pools     map[string]*modePool
	coldModes map[string]error // modes that cannot run warm, with the reason
	reaping   bool
	closed    bool
	stop      chan struct{}
}

var _ mt.Translator = (*Engine)(nil)

// New returns an engine; installed modes are discovered on first use.
func New(cfg Config) *Engine {
	if cfg.Command == "" {
		cfg.Command = "apertium"
	}
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxProcesses <= 0 {
		cfg.MaxProcesses = DefaultMaxProcesses
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.WblankCommand == "" {
		cfg.WblankCommand = wblankModeCommand
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Engine{cfg: cfg, sem: make(chan struct{}, cfg.MaxProcesses),
		pools: map[string]*modePool{}, coldModes: map[string]error{}, stop: make(chan struct{})}
}

// Name implements mt.Translator.
func (e *Engine) Name() string { return "apertium" }

// Modes returns the installed directions that map to ISO 639 language pairs.
func (e *Engine) Modes(ctx context.Context) ([]Mode, error) {
	if err := e.discover(ctx); err != nil {
		return nil, err
	}
	return append([]Mode(nil), e.list...), nil
}

// Pairs returns the language pairs the engine serves, sorted.
func (e *Engine) Pairs(ctx context.Context) ([]mt.Pair, error) {
	if err := e.discover(ctx); err != nil {
		return nil, err
	}
	out := make([]mt.Pair, 0, len(e.modes))
	for p := range e.modes {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// Supports implements mt.Translator. Apertium cannot detect a language, so an unknown source is
// never served; an uncertain one is used as given.
func (e *Engine) Supports(ctx context.Context, p mt.Pair) (bool, error) {
	if err := e.discover(ctx); err != nil {
		return false, err
	}
	_, ok := e.modes[mt.Pair{Source: p.Source, Target: p.Target}]
	return ok, nil
}

// discover lists the installed modes once. A failure is not remembered, so that an engine
// asked too early (or under a cancelled context) finds the modes on a later call.
func (e *Engine) discover(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.loaded {
		return nil
	}
	names, err := modeNamesFromDir(filepath.Join(e.cfg.DataDir, "modes"))
	if err != nil {
		names, err = e.modeNamesFromCommand(ctx)
	}
	if err != nil {
		return err
	}
	e.modes, e.list = indexModes(names)
	e.loaded = true
	return nil
}

func modeNamesFromDir(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.mode"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if _, statErr := os.Stat(dir); statErr != nil {
			return nil, statErr
		}
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".mode"))
	}
	return names, nil
}

// modeNamesFromCommand asks `apertium -l`, for installations whose modes live elsewhere.
func (e *Engine) modeNamesFromCommand(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, e.cfg.Command, "-d", e.cfg.DataDir, "-l").Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNotInstalled
		}
		// `apertium -l` exits non-zero on some versions even when it lists modes.
		if len(out) == 0 {
			return nil, fmt.Errorf("apertium -l: %w", err)
		}
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if name := strings.TrimSpace(sc.Text()); name != "" && !strings.ContainsAny(name, " \t") {
			names = append(names, name)
		}
	}
	return names, nil
}

// ParseMode maps an Apertium mode name to a language pair. Apertium names modes after its
// language packages, which mix ISO 639-1 and ISO 639-3 codes ("eng-spa", "fr-es", "es-pt"), may
// append a variant after "_" ("es-pt_BR", "eng-cat_valencia"), and also install modes that are
// not plain translation directions ("eco-fr-es"); those do not parse.
func ParseMode(name string) (Mode, bool) {
	base, variant, _ := strings.Cut(name, "_")
	parts := strings.Split(base, "-")
	if len(parts) != 2 {
		return Mode{}, false
	}
	src, err1 := langcode.Normalize(parts[0])
	tgt, err2 := langcode.Normalize(parts[1])
	if err1 != nil || err2 != nil || src == tgt {
		return Mode{}, false
	}
	return Mode{Name: name, Source: src, Target: tgt, Variant: variant}, true
}

// indexModes picks one mode per pair: the main mode when installed, otherwise the
// alphabetically first variant, so that a pair installed only as a variant is still served.
func indexModes(names []string) (map[mt.Pair]Mode, []Mode) {
	sort.Strings(names)
	byPair := map[mt.Pair]Mode{}
	var list []Mode
	for _, n := range names {
		m, ok := ParseMode(n)
		if !ok {
			continue
		}
		list = append(list, m)
		p := mt.Pair{Source: m.Source, Target: m.Target}
		if cur, seen := byPair[p]; !seen || (cur.Variant != "" && m.Variant == "") {
			byPair[p] = m
		}
	}
	return byPair, list
}

// Translate implements mt.Translator. A single text goes through the plain-text format; several
// go through one run in HTML format separated by marker elements, which Apertium passes through
// untouched, so a document's text nodes cost one process start rather than one each.
func (e *Engine) Translate(ctx context.Context, p mt.Pair, texts []string) ([]string, error) {
	if err := e.discover(ctx); err != nil {
		return nil, err
	}
	m, ok := e.modes[mt.Pair{Source: p.Source, Target: p.Target}]
	if !ok {
		return nil, fmt.Errorf("apertium: %s: %w", p, mt.ErrUnsupportedPair)
	}
	if len(texts) == 0 {
		return nil, nil
	}
	if e.cfg.Warm {
		if pool := e.pool(ctx, m.Name); pool != nil {
			out, err := e.translateWarm(ctx, pool, texts)
			if err != nil {
				return nil, err
			}
			for i := range out {
				out[i] = matchInitialCase(texts[i], out[i])
			}
			return out, nil
		}
	}
	switch len(texts) {
	case 1:
		out, err := e.run(ctx, m.Name, "txt", texts[0])
		if err != nil {
			return nil, err
		}
		return []string{matchInitialCase(texts[0], out)}, nil
	}
	out, err := e.translateBatch(ctx, m.Name, texts)
	if err == nil {
		for i := range out {
			out[i] = matchInitialCase(texts[i], out[i])
		}
		return out, nil
	}
	var rerr *RunError
	if errors.As(err, &rerr) {
		return nil, err
	}
	// The markers did not survive (the batch split into a different count): fall back to
	// one run per text rather than risk pairing a translation with the wrong text.
	out = make([]string, len(texts))
	for i, t := range texts {
		if out[i], err = e.run(ctx, m.Name, "txt", t); err != nil {
			return nil, err
		}
		out[i] = matchInitialCase(t, out[i])
	}
	return out, nil
}

// matchInitialCase undoes Apertium's habit of capitalising the first word of its input as if it
// began a sentence: a text node in the middle of a sentence ("Hello <b>friend</b>") would come
// back as "Hola <b>Amigo</b>". Words written in capitals ("OK", "USB") are left alone.
func matchInitialCase(src, out string) string {
	s, _ := utf8.DecodeRuneInString(strings.TrimLeftFunc(src, unicode.IsSpace))
	if !unicode.IsLower(s) {
		return out
	}
	i := strings.IndexFunc(out, func(r rune) bool { return !unicode.IsSpace(r) })
	if i < 0 {
		return out
	}
	first, size := utf8.DecodeRuneInString(out[i:])
	next, _ := utf8.DecodeRuneInString(out[i+size:])
	if !unicode.IsUpper(first) || unicode.IsUpper(next) {
		return out
	}
	return out[:i] + string(unicode.ToLower(first)) + out[i+size:]
}

var marker = regexp.MustCompile(`<hr\s+id="?sp(\d+)"?\s*/?>`)

var errMarkersLost = errors.New("apertium: batch markers lost")

func (e *Engine) translateBatch(ctx context.Context, mode string, texts []string) ([]string, error) {
	var b strings.Builder
	for i, t := range texts {
		if i > 0 {
			fmt.Fprintf(&b, `<hr id="sp%d">`, i)
		}
		b.WriteString(html.EscapeString(t))
	}
	raw, err := e.run(ctx, mode, "html", b.String())
	if err != nil {
		return nil, err
	}
	locs := marker.FindAllStringSubmatchIndex(raw, -1)
	if len(locs) != len(texts)-1 {
		return nil, errMarkersLost
	}
	out := make([]string, 0, len(texts))
	start := 0
	for i, loc := range locs {
		n, _ := strconv.Atoi(raw[loc[2]:loc[3]])
		if n != i+1 {
			return nil, errMarkersLost
		}
		out = append(out, strings.TrimSpace(html.UnescapeString(raw[start:loc[0]])))
		start = loc[1]
	}
	out = append(out, strings.TrimSpace(html.UnescapeString(raw[start:])))
	return out, nil
}

// run executes one pipeline. The apertium command is a shell script that starts a pipeline of
// processes; on timeout the whole process group is killed, since killing only the script would
// leave the pipeline holding the output pipe open.
func (e *Engine) run(ctx context.Context, mode, format, input string) (string, error) {
	select {
	case e.sem <- struct{}{}:
		defer func() { <-e.sem }()
	case <-ctx.Done():
		return "", &RunError{Mode: mode, Err: ctx.Err()}
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, e.cfg.Command, "-d", e.cfg.DataDir, "-f", format, "-u", mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdin = strings.NewReader(input)
	var stdout bytes.Buffer
	stderr := &limitedBuffer{max: maxStderr}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", &RunError{Mode: mode, Err: ctx.Err()}
	}
	if err != nil {
		return "", &RunError{Mode: mode, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return stdout.String(), nil
}

type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		if len(p) > room {
			l.buf.Write(p[:room])
		} else {
			l.buf.Write(p)
		}
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return l.buf.String() }
