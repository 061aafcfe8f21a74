package purity

func init() {
	registerShellFile("gpu/wait.go", "StoreWaiter is Bind's production waiter: its Clock field (a k8s.io/utils/clock Clock, nil meaning clock.RealClock) reads the time and runs the backoff timers, woken early by the lock store's change notification")
}
