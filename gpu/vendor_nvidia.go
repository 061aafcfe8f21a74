package gpu

// Annotations shared by several vendors.
const (
	// AnnoDeviceCordon is the node annotation listing, comma-separated, the
	// NVIDIA device UUIDs new pods must not get (HAMi pkg/device/nvidia/device.go,
	// DeviceCordonAnnotation).
	AnnoDeviceCordon = "hami.io/device-cordon"
	// AnnoNvidiaPairScore is the node annotation holding NVIDIA's device-pair
	// link scores as JSON, [{"uuid":..,"score":{uuid:n}}] (HAMi
	// RegisterGPUPairScore), read by the topology-aware policy.
	AnnoNvidiaPairScore = "hami.io/node-nvidia-score"
	// AnnoAssignedNode is the pod annotation Filter writes the chosen node to.
	AnnoAssignedNode = "hami.io/vgpu-node"
	// AnnoAssignedTime is the pod annotation Filter writes the Unix time (s) to.
	AnnoAssignedTime = "hami.io/vgpu-time"
)

// nvidiaType is HAMi's NVIDIA row with the chart's default names (HAMi
// pkg/device/nvidia/device.go, GenerateResourceRequests and InitNvidiaDevice;
// charts/hami values.yaml): memory in MiB (memoryFactor 1), a percentage
// of 0 or less ignored and above 100 clamped, defaultMemory 0 (so 100 %)
// and defaultCores 0. The admission webhook's exclusive-core default
// (defaultExclusiveCoreIfNeeded) rewrites the pod before the scheduler sees
// it, so a pod read from a cluster already carries it. MIG, numa-bind,
// topology-aware (by the link scores in hami.io/node-nvidia-score) and the
// device cordon are NVIDIA's alone, as in HAMi, where only its Fit reads
// them.
func nvidiaType() DeviceType {
	return DeviceType{
		Type: "NVIDIA", Count: "nvidia.com/gpu", Memory: "nvidia.com/gpumem", MemoryPercentage: "nvidia.com/gpumem-percentage",
		Cores: "nvidia.com/gpucores", Priority: "nvidia.com/priority", LockName: LockNvidia,
		Capabilities: Capabilities{MIG: true, NUMABind: true, TopologyAware: true},
		Annotations: Annotations{
			Register: "hami.io/node-nvidia-register", RegisterFormat: RegisterJSON, Handshake: "hami.io/node-handshake",
			ToAllocate: "hami.io/vgpu-devices-to-allocate", Allocated: "hami.io/vgpu-devices-allocated",
			UseType: AnnoUseGPUType, NoUseType: AnnoNoUseGPUType, UseUUID: AnnoUseGPUUUID, NoUseUUID: AnnoNoUseGPUUUID,
			Cordon: true, LinkScores: AnnoNvidiaPairScore,
		},
	}
}
