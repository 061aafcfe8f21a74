package purity

func init() {
	registerShellFile("reconcile/apply_concurrent.go", "Applier with MaxInFlight above 1: sends each run of independent actions concurrently, at most MaxInFlight goroutines at a time, all joined before the next run starts and before Apply returns")
}
