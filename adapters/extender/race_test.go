//go:build race

package extender_test

// raceEnabled: the race detector slows decoding several times.
const raceEnabled = true
