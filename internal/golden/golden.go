// Package golden is the one transcript harness of plancore's tests.
//
// A transcript is a text file under a package's testdata directory that
// holds one case: the input the case ran, a line of exactly four dashes,
// then the output the code under test rendered for it:
//
//	# a comment
//	nodes: [...]
//	----
//	plan ...
//
// The input is whatever the package's test decodes (a YAML document read
// strictly with [Decode], a small script); a reviewer reads what was asked
// beside what was answered, and a case is added by writing a file, not Go.
//
// go test -update rewrites the output sections from what the code renders
// now; it never touches an input.
package golden

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// Separator is the line between a transcript's input and its output.
const Separator = "----"

var update = flag.Bool("update", false, "rewrite the output sections of the testdata transcripts (never their inputs)")

// Transcript is one parsed case file.
type Transcript struct {
	// Input is everything before the separator line, byte for byte.
	Input []byte
	// Output is everything after the separator line, byte for byte.
	Output []byte
}

// Errors Parse wraps, so a caller can tell the malformations apart.
var (
	ErrNoSeparator   = errors.New("golden: no " + Separator + " line separates the input from the output")
	ErrTwoSeparators = errors.New("golden: more than one " + Separator + " line")
	ErrEmptyInput    = errors.New("golden: the input before the " + Separator + " line is empty")
)

// Parse splits a transcript at its one separator line. It refuses a file
// without one, a file with two (an output that held the line could not be
// told from a second case), and an input of only blank and comment lines.
func Parse(data []byte) (Transcript, error) {
	var sep []int // the line numbers (from 1) of the separator lines
	at := -1      // byte offset of the first separator line
	line, off := 0, 0
	for off < len(data) {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		if string(bytes.TrimSuffix(data[off:next], []byte("\n"))) == Separator {
			sep = append(sep, line)
			if at < 0 {
				at = off
			}
		}
		off = next
	}
	switch {
	case len(sep) == 0:
		return Transcript{}, ErrNoSeparator
	case len(sep) > 1:
		return Transcript{}, fmt.Errorf("%w: lines %v", ErrTwoSeparators, sep)
	}
	tr := Transcript{Input: data[:at], Output: data[at+len(Separator):]}
	tr.Output = bytes.TrimPrefix(tr.Output, []byte("\n"))
	if blank(tr.Input) {
		return Transcript{}, ErrEmptyInput
	}
	return tr, nil
}

// blank reports whether in holds only blank lines and '#' comments.
func blank(in []byte) bool {
	for l := range strings.Lines(string(in)) {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// Format is the file of a transcript: the input, the separator line, the
// output. Parse(Format(in, out)) gives in and out back when in ends in a
// newline, is not blank and holds no separator line, and out holds none.
func Format(input, output []byte) []byte {
	var b bytes.Buffer
	b.Write(input)
	if len(input) > 0 && input[len(input)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(Separator + "\n")
	b.Write(output)
	return b.Bytes()
}

// Run runs every file of dir as a case, in a subtest named after the file
// without its extension: it parses the file, calls render with the input,
// and compares what render returns with the file's output, byte for byte.
// render runs twice, and two different renderings fail the case: a golden
// output must not depend on map order or the clock. With -update the
// output section is rewritten instead; the input is kept as it is.
// A directory without any case fails, so a moved testdata cannot pass
// silently.
func Run(t *testing.T, dir string, render func(t *testing.T, input []byte) string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		n++
		path := filepath.Join(dir, e.Name())
		name := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))
		t.Run(name, func(t *testing.T) { runCase(t, path, render) })
	}
	if n == 0 {
		t.Fatalf("golden: no transcripts in %s", dir)
	}
}

func runCase(t *testing.T, path string, render func(t *testing.T, input []byte) string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	got := render(t, tr.Input)
	if t.Failed() {
		return
	}
	if again := render(t, tr.Input); again != got {
		t.Fatalf("%s: two renderings of the same input differ:\n%s", path, Diff(got, again))
	}
	if *update {
		if got != string(tr.Output) {
			if err := os.WriteFile(path, Format(tr.Input, []byte(got)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	switch {
	case len(tr.Output) == 0 && got != "":
		t.Errorf("%s has no output yet; run go test -run '%s' -update to write it, then review it", path, t.Name())
	case got != string(tr.Output):
		t.Errorf("%s: output differs (run go test -run '%s' -update, then review the diff):\n%s", path, t.Name(), Diff(string(tr.Output), got))
	}
}

// Diff shows the first line where want and got differ, with a little
// context, numbered as in the output section.
func Diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		a, b := "(end)", "(end)"
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			var s strings.Builder
			for j := max(0, i-2); j < i; j++ {
				fmt.Fprintf(&s, "  %s\n", w[j])
			}
			fmt.Fprintf(&s, "output line %d:\n- %s\n+ %s", i+1, a, b)
			return s.String()
		}
	}
	return "(no difference)"
}

// Decode reads a transcript's YAML input into a T strictly: an unknown or
// repeated key fails the test, so a misspelt field cannot be silently
// ignored. Keys are the JSON names of T's fields. The YAML is YAML 1.1, as
// kubectl reads it: an unquoted y, n, yes, no, on or off is a boolean, so
// quote such a name ("n").
func Decode[T any](t testing.TB, input []byte) T {
	t.Helper()
	var v T
	if err := yaml.UnmarshalStrict(input, &v); err != nil {
		t.Fatalf("golden: input: %v", err)
	}
	return v
}

// Duration is a time.Duration an input writes as Go writes one: 90s, 1m30s.
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := yaml.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as 90s: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
