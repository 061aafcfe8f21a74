//go:build race

package hostiletest

// Ceiling is the allocation a test under -race may see for a document within
// Budget: the race runtime's own bookkeeping is counted in TotalAlloc too
// (about 7% more on the largest JobFlow), so -race checks this ceiling and
// .ci/run checks Budget itself without -race, beside the other hostile tests.
const Ceiling = Budget + Budget/8
