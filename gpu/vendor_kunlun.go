package gpu

// kunlunTypes are HAMi's two Kunlunxin rows.
//
// kunlun, a whole XPU (HAMi pkg/device/kunlun/device.go,
// GenerateResourceRequests, InitKunlunDevice, GetNodeDevices, Fit and
// PatchAnnotations; topo.go): 100 % of the memory and cores 0, no lock, no
// devices-to-allocate annotation (the held devices are in
// hami.io/kunlun-allocated, the last container's indices in
// BAIDU_COM_DEVICE_IDX), devices derived from the node's capacity of
// kunlunxin.com/xpu (100 slots, 98,304 MiB, the second half on NUMA node
// 1), unused XPUs given by the link graph (FitLinkGraph), the node scored
// by the groups of four the placement leaves half used (ScoreLinkGroups;
// device.go ScoreNode, topo.go calcscore).
//
// XPU, a vXPU (HAMi pkg/device/kunlun/vdevice.go, GenerateResourceRequests,
// trimMemory and InitKunlunVDevice): memory rounded up to 24,576, 49,152 or
// 98,304 MiB, cores its share of 98,304 (an unset memory is the whole
// card, cores 100), the shared lock, devices in HAMi's JSON register
// hami.io/node-register-xpu, given by the link graph and shared only within
// one memory tier (FitLinkGraphShared; vdevice.go Fit and FitVXPU).
func kunlunTypes() []DeviceType {
	return []DeviceType{
		{
			Type: "kunlun", Count: "kunlunxin.com/xpu", FitRule: FitLinkGraph, Score: ScoreLinkGroups,
			Annotations: Annotations{
				RegisterFormat: RegisterCapacity,
				Capacity:       CapacityRule{Resource: "kunlunxin.com/xpu", PerDevice: 1, IDInfix: "kunlun", MemoryMiB: 98304, Cores: 100, Slots: 100, HalfNUMA: true},
				Allocated:      "hami.io/kunlun-allocated",
				UseUUID:        "baidu.com/use-gpuuuid", NoUseUUID: "baidu.com/nouse-gpuuuid",
				Extra: ExtraKunlun,
			},
		},
		{
			Type: "XPU", Count: "kunlunxin.com/vxpu", Memory: "kunlunxin.com/vxpu-memory",
			MemoryRule: MemoryTiers, MemoryTiersMiB: []int32{24576, 49152, 98304}, LockName: LockNvidia, FitRule: FitLinkGraphShared,
			Annotations: Annotations{
				Register: "hami.io/node-register-xpu", RegisterFormat: RegisterJSON, Handshake: "hami.io/node-handshake-xpu",
				ToAllocate: "hami.io/xpu-devices-to-allocate", Allocated: "hami.io/xpu-devices-allocated",
				UseUUID: "hami.io/use-xpu-uuid", NoUseUUID: "hami.io/no-use-xpu-uuid",
			},
		},
	}
}
