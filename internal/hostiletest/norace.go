//go:build !race

package hostiletest

// Ceiling is Budget: without -race nothing but the code under test
// allocates.
const Ceiling = Budget
