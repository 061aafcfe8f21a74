// Package hostiletest holds what the decoders' hostile-input tests share:
// the budget one document may cost and a deterministic measure of that
// cost. Only the project's tests import it.
package hostiletest

import "runtime"

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
