// Package cputime reads the CPU time of the calling OS thread, for
// benchmarks that share the machine with other work: a busy machine
// stretches the wall time of a pass, not its CPU time.
package cputime

import (
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD, which package syscall does not
// name.
const rusageThread = 1

// Thread returns the CPU time the calling OS thread has used. The goroutine
// must be locked to its thread (runtime.LockOSThread).
func Thread() time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &r); err != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
