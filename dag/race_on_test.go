//go:build race

package dag_test

// raceOn reports whether the race detector is on; timing budgets are
// meaningless under it.
const raceOn = true
