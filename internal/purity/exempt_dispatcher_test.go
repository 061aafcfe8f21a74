package purity

func init() {
	registerShellFile("capacity/dispatcher.go", "Dispatcher, the scheduler loop around Decide and Dispatch: its Clock field (a k8s.io/utils/clock Clock, nil meaning clock.RealClock) reads the time and runs the requeue timers, and it starts one goroutine per job in flight, bounded, all joined before Run returns")
}
