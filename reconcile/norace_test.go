//go:build !race

package reconcile_test

// raceDetector says the tests run with -race (see race_test.go).
const raceDetector = false
