package purity

func init() {
	registerShellFile("capacity/dispatch.go", "Dispatch, the reserve shell: walks the candidates through a SlotStore and reads its clock (the wall clock when none is given) to turn a pending expiry into a requeue hint")
	registerShellFile("capacity/memorystore.go", "MemoryStore, the in-process slot store: mutex-guarded shards whose clock is the wall clock when none is given")
}
