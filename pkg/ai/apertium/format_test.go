package apertium

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

func runFilter(t *testing.T, prog, input string) string {
	t.Helper()
	cmd := exec.Command(prog)
	cmd.Stdin = strings.NewReader(input)
	cmd.Env = append(cmd.Environ(), "LC_CTYPE=C.UTF-8")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v: %s", prog, err, stderr.String())
	}
	return string(out)
}

// TestFormatMatchesApertiumPrograms runs apertium-destxt and apertium-retxt on the corpus and on
// translated-stream samples and wants deformatTxt and reformatTxt to give the same bytes.
func TestFormatMatchesApertiumPrograms(t *testing.T) {
	for _, prog := range []string{"apertium-destxt", "apertium-retxt"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Fatalf("%s is not installed (apt-get install -y apertium): %v", prog, err)
		}
	}
	var inputs []string
	for _, lang := range []string{"en", "es", "fr"} {
		inputs = append(inputs, corpus(lang, 60)...)
	}
	for _, in := range inputs {
		want := runFilter(t, "apertium-destxt", in)
		got := deformatTxt(in)
		// The program puts blanks longer than 8192 characters in a temporary file.
		if strings.Contains(want, "[@") {
			if strings.Count(in, " ") < 8192 {
				t.Fatalf("destxt used a file for %q", in)
			}
			if back := runFilter(t, "apertium-retxt", want); back != reformatTxt(got) {
				t.Errorf("long blank: retxt(destxt) = %.80q..., reformatTxt(deformatTxt) = %.80q...", back, reformatTxt(got))
			}
			continue
		}
		if got != want {
			t.Errorf("deformatTxt(%q)\n got %q\nwant %q", in, got, want)
			continue
		}
		if back, want := reformatTxt(got), runFilter(t, "apertium-retxt", got); back != want {
			t.Errorf("reformatTxt(%q)\n got %q\nwant %q", got, back, want)
		}
	}
	for _, stream := range []string{
		`Hola Mundo.[][\n\n]Adiós\<b\>`,
		`a\qb [x] [\@y] c.[] d\\e [@`,
		`x\`,
		`[[ ]] \[ .[ ] .[]. ]`,
	} {
		if got, want := reformatTxt(stream), runFilter(t, "apertium-retxt", stream); got != want {
			t.Errorf("reformatTxt(%q) = %q, want %q", stream, got, want)
		}
	}
}
