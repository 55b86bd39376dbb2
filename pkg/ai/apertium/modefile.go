package apertium

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// wblankModeCommand rewrites a mode file into the pipeline the apertium command runs: with -z
// every program gets its null-flush flag, and the word-bound-blank helpers are inserted where
// the installed Apertium version wants them.
const wblankModeCommand = "apertium-wblank-mode"

// modeArgs are the mode file's positional parameters as `apertium -u` sets them: $1 is the
// generator's option ("-n": no marks on unknown words), $2 the tagger's (empty unless -a).
var modeArgs = []string{"-n", ""}

// warmCommands returns the programs of mode's null-flush pipeline, each as an argument list.
func (e *Engine) warmCommands(ctx context.Context, mode string) ([][]string, error) {
	file := filepath.Join(e.cfg.DataDir, "modes", mode+".mode")
	cmd := exec.CommandContext(ctx, e.cfg.WblankCommand, "-z", file)
	cmd.Env = append(cmd.Environ(), "LC_CTYPE="+utf8Locale)
	out, err := cmd.Output()
	if err != nil {
		var xerr *exec.ExitError
		if errors.As(err, &xerr) {
			return nil, fmt.Errorf("%s -z %s: %w: %s", e.cfg.WblankCommand, file, err, strings.TrimSpace(string(xerr.Stderr)))
		}
		return nil, fmt.Errorf("%s -z %s: %w", e.cfg.WblankCommand, file, err)
	}
	line := strings.TrimSpace(string(out))
	if strings.ContainsAny(line, "\n") {
		return nil, fmt.Errorf("mode %s: a pipeline of several lines is not supported", mode)
	}
	return splitPipeline(line, modeArgs)
}

// splitPipeline splits a mode's shell pipeline into argument lists. It understands what mode
// files contain: words, single and double quotes, backslash escapes, "|" and the positional
// parameters $1..$9 (an unquoted empty one vanishes, as in the shell). Anything else (redirections,
// command lists, substitutions, other variables) is refused, and the mode is then served by the
// one-shot path.
func splitPipeline(line string, args []string) ([][]string, error) {
	var (
		cmds   [][]string
		words  []string
		word   strings.Builder
		inWord bool // the current word exists even if empty ('' or "$1" with $1 empty)
	)
	param := func(c byte) (string, bool) {
		if c < '1' || c > '9' {
			return "", false
		}
		if i := int(c - '1'); i < len(args) {
			return args[i], true
		}
		return "", true
	}
	endWord := func() {
		if inWord {
			words = append(words, word.String())
		}
		word.Reset()
		inWord = false
	}
	endCmd := func() error {
		endWord()
		if len(words) == 0 {
			return errors.New("empty command in pipeline")
		}
		cmds = append(cmds, words)
		words = nil
		return nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			endWord()
		case c == '|':
			if err := endCmd(); err != nil {
				return nil, err
			}
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated single quote")
			}
			word.WriteString(line[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case c == '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(line) {
					return nil, errors.New("unterminated double quote")
				}
				c = line[i]
				if c == '"' {
					break
				}
				switch {
				case c == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0:
					i++
					word.WriteByte(line[i])
				case c == '$':
					v, ok := "", false
					if i+1 < len(line) {
						v, ok = param(line[i+1])
					}
					if !ok {
						return nil, fmt.Errorf("unsupported %q in a mode's double quotes", line[i:])
					}
					word.WriteString(v)
					i++
				case c == '`':
					return nil, errors.New("command substitution in a mode")
				default:
					word.WriteByte(c)
				}
			}
		case c == '\\':
			if i+1 >= len(line) {
				return nil, errors.New("trailing backslash")
			}
			i++
			word.WriteByte(line[i])
			inWord = true
		case c == '$':
			v, ok := "", false
			if i+1 < len(line) {
				v, ok = param(line[i+1])
			}
			if !ok {
				return nil, fmt.Errorf("unsupported %q in a mode", line[i:])
			}
			if v != "" {
				word.WriteString(v)
				inWord = true
			}
			i++
		case strings.IndexByte(";&<>()`*?{}#~", c) >= 0:
			return nil, fmt.Errorf("unsupported shell syntax %q in a mode", c)
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if err := endCmd(); err != nil {
		return nil, err
	}
	return cmds, nil
}
