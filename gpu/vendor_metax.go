package gpu

// metaxTypes are HAMi's two Metax rows.
//
// Metax-GPU, a whole card (HAMi pkg/device/metax/device.go,
// GenerateResourceRequests, InitMetaxDevice and GetNodeDevices): 100 % of
// the memory and 100 cores, no lock, devices derived from the node's
// capacity of metax-tech.com/gpu (one slot, 65,536 MiB each), the node
// scored by its topology tables (ScoreTopologyTables; ScoreNode and
// parseMetaxAnnos).
//
// Metax-SGPU (HAMi pkg/device/metax/sdevice.go, GenerateResourceRequests and
// InitMetaxSDevice; protocol.go): read from limits only; a bare vmemory value
// is GiB (16 is 16,384 MiB), one with a unit suffix is a byte quantity
// ("16Gi", "1024Mi"); vcore 100 when unset; the shared lock; devices in
// Metax's own JSON list metax-tech.com/node-gpu-devices; the held devices in
// metax-tech.com/gpu-devices-allocated is Metax's own JSON, so usage is read
// from hami.io/metax-sgpu-devices-allocated.
func metaxTypes() []DeviceType {
	return []DeviceType{
		{
			Type: "Metax-GPU", Count: "metax-tech.com/gpu", DefaultCores: 100, Score: ScoreTopologyTables,
			Annotations: Annotations{
				RegisterFormat: RegisterCapacity,
				Capacity:       CapacityRule{Resource: "metax-tech.com/gpu", PerDevice: 1, IDInfix: "metax", MemoryMiB: 65536, Cores: 100, Slots: 1},
				ToAllocate:     "hami.io/metax-gpu-devices-to-allocate", Allocated: "hami.io/metax-gpu-devices-allocated",
				TopologyLosses: "metax-tech.com/gpu.topology.losses", TopologyScores: "metax-tech.com/gpu.topology.scores",
			},
		},
		{
			Type: "Metax-SGPU", Count: "metax-tech.com/sgpu", Memory: "metax-tech.com/vmemory", Cores: "metax-tech.com/vcore",
			MemoryRule: MemoryGiBOrQuantity, DefaultCores: 100, LimitsOnly: true, LockName: LockNvidia,
			Annotations: Annotations{
				Register: "metax-tech.com/node-gpu-devices", RegisterFormat: RegisterMetaxSGPU,
				ToAllocate: "hami.io/metax-sgpu-devices-to-allocate", Allocated: "hami.io/metax-sgpu-devices-allocated",
				UseUUID: "metax-tech.com/use-gpuuuid", NoUseUUID: "metax-tech.com/nouse-gpuuuid",
				Extra: ExtraMetaxSGPU,
			},
		},
	}
}
