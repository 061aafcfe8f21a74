package purity

func init() {
	registerShellFile("lock/shell.go", "Locker, the lock store shell: reads the clock, sleeps with jittered backoff between store attempts, and draws jitter from a seeded generator")
}
