// Package hostiletest holds what the decoders' hostile-input tests share:
// the budget one document may cost and a deterministic measure of that
// cost. Only the project's tests import it.
package hostiletest

import (
	"runtime"
	"strings"
	"testing"

	"github.com/plancore/plancore/internal/invalidtest"
)

// Budget is what decoding and planning one document of up to the API
// server's 3 MiB request limit may allocate.
const Budget = 256 << 20

// Allocated runs f and returns the bytes it allocated: the growth of
// runtime.MemStats.TotalAlloc, an upper bound of the heap f used that does
// not depend on timing or load (unlike a duration, or a peak sampled by a
// goroutine). Tests using it must not run in parallel, so that nothing else
// allocates meanwhile.
func Allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Refused runs decode, which must refuse its document within Budget: its
// error names fields first (a *plancore.InvalidError) and says detail within
// its first 400 bytes.
func Refused(t testing.TB, decode func() error, fields []string, detail string) {
	t.Helper()
	var err error
	if n := Allocated(func() { err = decode() }); n > Ceiling {
		t.Errorf("allocated %d MB, budget %d MB", n>>20, Ceiling>>20)
	}
	got := invalidtest.Fields(t, err)
	if len(got) < len(fields) || strings.Join(got[:len(fields)], " ") != strings.Join(fields, " ") {
		t.Fatalf("fields %.200v, want %v first", got, fields)
	}
	if msg := err.Error(); !strings.Contains(msg[:min(len(msg), 400)], detail) {
		t.Errorf("error %.400s does not say %q", msg, detail)
	}
}
