package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOverview: no argument prints at most one screen (24 lines) with every
// chapter's name.
func TestOverview(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 0 || errOut.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) > 24 {
		t.Errorf("the overview is %d lines, more than one screen (24):\n%s", len(lines), out.String())
	}
	for _, c := range chapters {
		if !strings.Contains(out.String(), "  "+c.name+" ") {
			t.Errorf("chapter %s missing from the overview:\n%s", c.name, out.String())
		}
	}
}

// TestUnknownChapter: an unknown chapter exits 2 with the list on stderr.
func TestUnknownChapter(t *testing.T) {
	for _, args := range [][]string{{"nope"}, {"reconcile", "extra"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if out.Len() != 0 {
			t.Errorf("%q: wrote to stdout: %q", args, out.String())
		}
		for _, c := range chapters {
			if !strings.Contains(errOut.String(), c.name) {
				t.Errorf("%q: chapter %s missing from the list on stderr:\n%s", args, c.name, errOut.String())
			}
		}
	}
}

// TestEveryChapter runs each chapter by its name, twice: it must succeed, name
// its source file, show calls that are lines of that file, define every
// glossary term before using it, and print the same both times (the cores are
// deterministic and the fake world is seeded).
func TestEveryChapter(t *testing.T) {
	if len(chapters) < 7 {
		t.Fatalf("the tour has %d chapters, want one per core", len(chapters))
	}
	for _, c := range chapters {
		t.Run(c.name, func(t *testing.T) {
			var first, second, errOut bytes.Buffer
			if code := run([]string{c.name}, &first, &errOut); code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, errOut.String(), first.String())
			}
			if code := run([]string{c.name}, &second, &errOut); code != 0 || first.String() != second.String() {
				t.Fatalf("the second run differs (exit %d):\n--- first\n%s\n--- second\n%s", code, first.String(), second.String())
			}
			out := first.String()
			if !strings.Contains(out, "(source: "+c.file+";") {
				t.Errorf("the chapter does not name its source file %s", c.file)
			}
			checkCallsAreSource(t, c)
			checkTermsDefined(t, out)
		})
	}
}

// TestAll runs every chapter in order with "all".
func TestAll(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"all"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	last := -1
	for _, c := range sortedChapters() {
		i := strings.Index(out.String(), c.name+": "+c.title)
		if i <= last {
			t.Errorf("chapter %s missing or out of order", c.name)
		}
		last = i
	}
}

// checkCallsAreSource: every line a chapter shows with » is (part of) a line
// of its source file, so what the reader sees is what runs.
func checkCallsAreSource(t *testing.T, c chapter) {
	src, err := os.ReadFile(filepath.Base(c.file))
	if err != nil {
		t.Fatal(err)
	}
	// The shown text itself is in the file, inside calls(`...`): leave it out.
	code := regexp.MustCompile("calls\\(`[^`]*`\\)").ReplaceAllString(string(src), "")
	var lines []string
	for _, l := range strings.Split(code, "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	p := newPage(&bytes.Buffer{})
	if err := c.run(p); err != nil {
		t.Fatal(err)
	}
	if len(p.shown) == 0 {
		t.Errorf("the chapter shows no calls")
	}
	for _, shown := range p.shown {
		found := false
		for _, l := range lines {
			// A shown line is a source line, or the source line without its
			// trailing brace or error check.
			if l == shown || (len(shown) > 8 && strings.HasPrefix(l, shown)) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("shown call %q is not a line of %s", shown, c.file)
		}
	}
}

// checkTermsDefined: in the chapter's prose and output (not its heading or the
// » lines), no glossary term appears before its definition.
func checkTermsDefined(t *testing.T, out string) {
	body := out[strings.Index(out, "\n\n")+2:]
	var prose strings.Builder
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, "  » ") {
			prose.WriteString(l + "\n")
		}
	}
	text := prose.String()
	for word := range glossary {
		re := regexp.MustCompile(`(^|[^A-Za-z-])` + regexp.QuoteMeta(word) + `($|[^A-Za-z-])`)
		loc := re.FindStringIndex(text)
		if loc == nil {
			continue
		}
		def := strings.Index(text, "  ("+word+": ")
		if def < 0 || def > loc[0] {
			line := text[strings.LastIndex(text[:loc[0]+1], "\n")+1:]
			if i := strings.IndexByte(line, '\n'); i >= 0 {
				line = line[:i]
			}
			t.Errorf("%q is used before it is defined, in: %s", word, line)
		}
	}
}
