//go:build !linux

package reconcile_test

import "time"

// threadCPU is zero where no per-thread CPU time is read: the benchmarks'
// CPU metrics then read zero and only the wall clock counts.
func threadCPU() time.Duration { return 0 }
