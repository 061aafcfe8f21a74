//go:build !race

package dag_test

import (
	"testing"

	"github.com/plancore/plancore/dag"
)

// TestDecideAllocationsOnValidInput: Decide on 5,000 jobs, each with a new
// history and a running duration, allocates no more than the 59 times it did
// before the one-contract rework (15,042 after it). Built without -race only:
// the race detector drops sync.Pool entries at random, so counts vary there;
// .ci/run runs it without -race. Breaking it: go back to a map for the flow
// index or the job names, a growing buffer for the spec hash, or doubling
// arena blocks.
func TestDecideAllocationsOnValidInput(t *testing.T) {
	s := status5k()
	o := dag.Default()
	got := testing.AllocsPerRun(20, func() {
		if _, err := dag.Decide(s, o); err != nil {
			t.Fatal(err)
		}
	})
	if got > 59 {
		t.Errorf("Decide on 5,000 valid jobs allocates %v times, want at most 59", got)
	}
}
