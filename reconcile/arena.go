package reconcile

// arena hands out small slices carved from larger blocks, so that a plan of n
// actions costs O(log n) allocations for its per-action parts (the DeletePod
// payload, the one-record Expect list, the one-name Reason.Pods) instead of
// one allocation each (allocations proportional to actions, not pods,
// and as few as possible per action).
//
// Every slice it returns has its capacity capped at its length, so a caller
// appending to one (say, to a plan's Reason.Pods) reallocates instead of
// writing into its neighbour. Blocks are never reused or moved: a returned
// slice stays valid, and owned by the plan, for as long as it is referenced.
type arena[T any] struct {
	block []T
}

// arenaMinBlock is the size of an arena's first block; later blocks double.
const arenaMinBlock = 8

// take returns a zeroed slice of n elements.
func (a *arena[T]) take(n int) []T {
	if cap(a.block)-len(a.block) < n {
		a.block = make([]T, 0, max(n, 2*cap(a.block), arenaMinBlock))
	}
	l := len(a.block)
	a.block = a.block[:l+n]
	return a.block[l : l+n : l+n]
}

// reserve makes the next n elements come from one block, so that a caller
// that knows how many it will take (a group's victims) pays one allocation.
func (a *arena[T]) reserve(n int) {
	if cap(a.block)-len(a.block) < n {
		a.block = make([]T, 0, max(n, arenaMinBlock))
	}
}

// one returns a one-element slice holding v.
func (a *arena[T]) one(v T) []T {
	s := a.take(1)
	s[0] = v
	return s
}

// ptr returns a pointer to a fresh element holding v.
func (a *arena[T]) ptr(v T) *T {
	s := a.take(1)
	s[0] = v
	return &s[0]
}
