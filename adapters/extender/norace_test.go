//go:build !race

package extender_test

const raceEnabled = false
