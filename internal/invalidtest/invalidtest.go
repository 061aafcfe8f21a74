// Package invalidtest holds the one assertion every core's bad-input table
// makes: an error wraps the core's sentinel and names exactly these field
// paths. Only the project's tests import it.
package invalidtest

import (
	"errors"

	"github.com/google/go-cmp/cmp"

	"github.com/plancore/plancore"
)

// T is what the checks need of a test: *testing.T and rapid's *rapid.T both
// have it (rapid.T is no testing.TB).
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// Fields returns the field paths err names, failing t when err is no
// *plancore.InvalidError.
func Fields(t T, err error) []string {
	t.Helper()
	var inv *plancore.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("err = %v, want a *plancore.InvalidError", err)
	}
	return inv.Fields()
}

// Check asserts one bad-input row: with kind nil the input was legal and err
// must be nil; otherwise err wraps kind and, when fields is not nil, names
// exactly those field paths in that order.
func Check(t T, err, kind error, fields []string) {
	t.Helper()
	if kind == nil {
		if err != nil {
			t.Fatalf("legal input: %v", err)
		}
		return
	}
	if !errors.Is(err, kind) {
		t.Fatalf("err = %v, want %v", err, kind)
	}
	if fields == nil {
		return
	}
	if diff := cmp.Diff(fields, Fields(t, err)); diff != "" {
		t.Errorf("fields (-want +got):\n%s\n%v", diff, err)
	}
}
