package purity

func init() {
	registerShellFile("gpu/wait.go", "StoreWaiter is Bind's production clock: it reads the wall clock and sleeps on real timers, woken by the lock store's change notification")
}
