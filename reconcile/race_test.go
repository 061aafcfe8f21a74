//go:build race

package reconcile_test

// raceDetector says the tests run with -race, whose instrumentation keeps
// more values on the heap: allocation budgets measured here are larger.
const raceDetector = true
