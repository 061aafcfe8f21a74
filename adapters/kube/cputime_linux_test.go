package kube_test

import (
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD, which package syscall does not
// name.
const rusageThread = 1

// threadCPU reads the CPU time the calling OS thread has used. Benchmarks
// that share the machine with other work report it beside the wall clock:
// a busy machine stretches the wall time of a pass, not its CPU time. The
// goroutine must be locked to its thread (runtime.LockOSThread).
func threadCPU() time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &r); err != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
