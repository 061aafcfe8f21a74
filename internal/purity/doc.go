// Package purity holds the test that keeps plancore's core packages pure: no IO,
// no clock, no global randomness, no goroutines, and no imports beyond the
// standard library, k8s.io/api, k8s.io/apimachinery and the other cores.
package purity
