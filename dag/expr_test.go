package dag_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/plancore/plancore/dag"
)

func TestParseDepends(t *testing.T) {
	cases := []struct {
		src, want string
	}{
		{"a", "a"},
		{"  a.Failed ", "a.Failed"},
		{"a && b", "(a && b)"},
		{"a || b && c", "(a || (b && c))"},
		{"(a || b) && c", "((a || b) && c)"},
		{"!a && !!b", "(!a && !!b)"},
		{"!(a || b)", "!(a || b)"},
		{"a||b||c", "(a || b || c)"},
		{"1st-step.Done&&x_y", "(1st-step.Done && x_y)"},
		{"((a))", "a"},
	}
	for _, tc := range cases {
		e, err := dag.ParseDepends(tc.src)
		if err != nil {
			t.Errorf("ParseDepends(%q): %v", tc.src, err)
			continue
		}
		if got := e.String(); got != tc.want {
			t.Errorf("ParseDepends(%q) = %s, want %s", tc.src, got, tc.want)
		}
	}
}

func TestParseDependsErrors(t *testing.T) {
	cases := []struct {
		src    string
		offset int
		msg    string
	}{
		{"", 0, "empty expression"},
		{"   ", 3, "empty expression"},
		{"a &&", 4, "end of expression"},
		{"a & b", 2, `single '&'`},
		{"a | b", 2, `single '|'`},
		{"(a || b", 0, `unclosed "("`},
		{"a)", 1, `unexpected ")"`},
		{"()", 1, "empty parentheses"},
		{"a b", 2, `unexpected name "b"`},
		{"a && $x", 5, `character "$"`},
		{"!", 1, "end of expression"},
		{"a || (b &&)", 10, `unexpected ")"`},
		{strings.Repeat("a", dag.MaxDependsLen+1), dag.MaxDependsLen, "over the 4096-byte limit"},
	}
	for _, tc := range cases {
		_, err := dag.ParseDepends(tc.src)
		var se *dag.SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, dag.ErrSyntax) {
			t.Errorf("ParseDepends(%q) = %v, want a SyntaxError", tc.src, err)
			continue
		}
		if se.Offset != tc.offset || !strings.Contains(se.Error(), tc.msg) {
			t.Errorf("ParseDepends(%q) = %v (offset %d), want offset %d and %q", tc.src, err, se.Offset, tc.offset, tc.msg)
		}
	}
}

// FuzzDepends checks that the parser never panics, that every error is a
// SyntaxError with an offset inside the input, and that an accepted
// expression prints to a form that parses back to the same tree.
func FuzzDepends(f *testing.F) {
	for _, s := range []string{"a", "a && b", "!(a || b.Failed) && c.Done", "((x))", "a &", "(a", "a.Started||!b", "é", "a\tb", "!!!!a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := dag.ParseDepends(src)
		if err != nil {
			var se *dag.SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, dag.ErrSyntax) {
				t.Fatalf("error %v is not a SyntaxError", err)
			}
			if se.Offset < 0 || se.Offset > len(src) {
				t.Fatalf("offset %d outside input of %d bytes", se.Offset, len(src))
			}
			return
		}
		if e == nil {
			t.Fatal("nil expression without error")
		}
		printed := e.String()
		again, err := dag.ParseDepends(printed)
		if err != nil {
			if len(printed) > dag.MaxDependsLen {
				return // parenthesising can push a long input over the limit
			}
			t.Fatalf("re-parsing %q (from %q): %v", printed, src, err)
		}
		if again.String() != printed {
			t.Fatalf("round trip %q -> %q -> %q", src, printed, again.String())
		}
	})
}
