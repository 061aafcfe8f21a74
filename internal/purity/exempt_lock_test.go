package purity

func init() {
	registerShellFile("lock/shell.go", "Locker, the lock store shell: its Clock field (a k8s.io/utils/clock Clock, nil meaning clock.RealClock) reads the time and runs the backoff timers between store attempts; jitter comes from a seeded generator, seeded from the wall clock when none is given")
}
