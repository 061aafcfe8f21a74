package gpu

// enflameTypes are HAMi's two Enflame rows.
//
// Enflame, a DRS slice (HAMi pkg/device/enflame/device.go,
// GenerateResourceRequests and InitEnflameDevice): enflame.com/drs-gcu asks
// for one device of that many slices (HAMi carries the slice count in
// Memreq); without it, enflame.com/gcu-memory and enflame.com/gcu-core ask
// for one device of the smallest profile holding that memory and cores
// (FitSliceProfiles, Fit and selectProfileByRequest). No lock, no
// devices-to-allocate annotation (held devices in
// hami.io/enflame-vgpu-devices-allocated; Filter also writes the
// enflame.com/gcu-assigned-* annotations and assigned-containers). Its
// devices and profiles come from the JSON enflame.com/gcu-drs-capacity
// (GetNodeDevices).
//
// GCU, a whole card (HAMi pkg/device/enflame/gcu.go,
// GenerateResourceRequests, InitGCUDevice and GetNodeDevices): 100 % of the
// memory and 100 cores, devices derived from the node's capacity of
// enflame.com/gcu (one slot each, 100 memory units).
func enflameTypes() []DeviceType {
	return []DeviceType{
		{
			Type: "Enflame", Count: "enflame.com/drs-gcu", Memory: "enflame.com/gcu-memory", Cores: "enflame.com/gcu-core",
			CountRule: CountOneDevice, FitRule: FitSliceProfiles,
			Annotations: Annotations{
				Register: "enflame.com/gcu-drs-capacity", RegisterFormat: RegisterEnflameDRS, Extra: ExtraEnflameDRS,
				Allocated: "hami.io/enflame-vgpu-devices-allocated",
				UseUUID:   "enflame.com/use-gpuuuid", NoUseUUID: "enflame.com/nouse-gpuuuid",
			},
		},
		{
			Type: "GCU", Count: "enflame.com/gcu", DefaultCores: 100,
			Annotations: Annotations{
				RegisterFormat: RegisterCapacity,
				Capacity:       CapacityRule{Resource: "enflame.com/gcu", PerDevice: 1, IDInfix: "GCU", MemoryMiB: 100, Cores: 100, Slots: 1},
				ToAllocate:     "hami.io/enflame-gcu-devices-to-allocate", Allocated: "hami.io/enflame-gcu-devices-allocated",
			},
		},
	}
}
