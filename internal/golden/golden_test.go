package golden

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		in, out    string
		err        error
	}{
		{name: "input and output", file: "a: 1\n----\nplan\n", in: "a: 1\n", out: "plan\n"},
		{name: "comments kept in the input", file: "# why\na: 1\n----\nx\n", in: "# why\na: 1\n", out: "x\n"},
		{name: "empty output", file: "a: 1\n----\n", in: "a: 1\n"},
		{name: "separator last, no newline", file: "a: 1\n----", in: "a: 1\n"},
		{name: "output without final newline", file: "a\n----\nx", in: "a\n", out: "x"},
		{name: "dashes inside a line are not a separator", file: "a: ----\n----\n-----\n --- -\n", in: "a: ----\n", out: "-----\n --- -\n"},
		{name: "no separator", file: "a: 1\nplan\n", err: ErrNoSeparator},
		{name: "empty file", file: "", err: ErrNoSeparator},
		{name: "two separators", file: "a\n----\nx\n----\ny\n", err: ErrTwoSeparators},
		{name: "empty input", file: "----\nplan\n", err: ErrEmptyInput},
		{name: "input of comments only", file: "# nothing\n\n  # more\n----\nplan\n", err: ErrEmptyInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Parse([]byte(tc.file))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if string(tr.Input) != tc.in || string(tr.Output) != tc.out {
				t.Fatalf("Parse = %q / %q, want %q / %q", tr.Input, tr.Output, tc.in, tc.out)
			}
		})
	}
	_, err := Parse([]byte("a\n----\nx\n----\ny\n----\n"))
	if err == nil || !strings.Contains(err.Error(), "lines [2 4 6]") {
		t.Fatalf("two separators: error %v does not name the lines", err)
	}
}

// FuzzParse checks that Parse never panics, that what it accepts formats
// back to the same file, and that Format's output parses back to its parts.
// Accepting two separators makes it fail (its seed "a\n----\n----\n").
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a\n----\nb\n", "", "----", "----\n", "a\n----", "\n----\n\n", "#x\n----\n", "a\n----\n----\n", "a\r\n----\r\nb"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Parse(data)
		if err != nil {
			if tr.Input != nil || tr.Output != nil {
				t.Fatalf("an error with a transcript: %v", err)
			}
			return
		}
		if bytes.Contains(append([]byte("\n"), tr.Output...), []byte("\n"+Separator+"\n")) {
			t.Fatalf("output %q holds a separator line", tr.Output)
		}
		// Format adds the newline an input may lack; the rest round-trips.
		again, err := Parse(Format(tr.Input, tr.Output))
		if err != nil {
			t.Fatalf("Format of a parsed file does not parse: %v", err)
		}
		if !bytes.Equal(again.Output, tr.Output) || !bytes.Equal(bytes.TrimSuffix(again.Input, []byte("\n")), bytes.TrimSuffix(tr.Input, []byte("\n"))) {
			t.Fatalf("round trip: %q/%q became %q/%q", tr.Input, tr.Output, again.Input, again.Output)
		}
		if !bytes.HasSuffix(tr.Input, []byte("\n")) {
			t.Fatalf("input %q does not end its last line", tr.Input)
		}
		if bytes.HasSuffix(data, []byte("\n")) || len(tr.Output) > 0 {
			if f := Format(tr.Input, tr.Output); !bytes.Equal(f, data) {
				t.Fatalf("Format(Parse(%q)) = %q", data, f)
			}
		}
	})
}

func TestRunRewritesOnlyTheOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "case.txt")
	in := "# keep me\nname: x\n"
	if err := os.WriteFile(path, []byte(in+"----\nstale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	render := func(t *testing.T, input []byte) string {
		v := Decode[struct {
			Name string `json:"name"`
		}](t, input)
		return "hello " + v.Name + "\n"
	}
	*update = true
	t.Cleanup(func() { *update = false })
	Run(t, dir, render)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := in + "----\nhello x\n"; string(data) != want {
		t.Fatalf("after -update the file is %q, want %q", data, want)
	}
	*update = false
	Run(t, dir, render)
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
	r.msg = format
	panic(r)
}

func TestDecodeIsStrict(t *testing.T) {
	type in struct {
		Name string   `json:"name"`
		Wait Duration `json:"wait"`
	}
	for _, bad := range []string{"nmae: x\n", "name: x\nname: y\n", "wait: 90\n", "wait: soon\n"} {
		r := &recorder{TB: t}
		func() {
			defer func() {
				if p := recover(); p != nil && p != r {
					panic(p)
				}
			}()
			Decode[in](r, []byte(bad))
		}()
		if !r.failed {
			t.Errorf("Decode(%q) accepted it", bad)
		}
	}
	if v := Decode[in](t, []byte("name: x\nwait: 1m30s\n")); v.Name != "x" || v.Wait.D().Seconds() != 90 {
		t.Fatalf("Decode = %+v", v)
	}
}
