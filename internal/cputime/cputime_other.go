//go:build !linux

// Package cputime reads the CPU time of the calling OS thread, for
// benchmarks that share the machine with other work.
package cputime

import "time"

// Thread is zero where no per-thread CPU time is read: a benchmark's CPU
// metric then reads zero and only the wall clock counts.
func Thread() time.Duration { return 0 }
