package gpu

import "strconv"

// mthreadsType is HAMi's Moore Threads row (HAMi
// pkg/device/mthreads/device.go, GenerateResourceRequests, InitMthreadsDevice
// and GetNodeDevices): memory in 512 MiB units (MemoryFactor), cores 0 when
// unset, both the container's total divided evenly over the devices, no
// lock, devices derived from the node's capacity of mthreads.com/sgpu-core
// (16 cores and 100 slots per card, each card's memory its share of the
// sgpu-memory capacity).
func mthreadsType() DeviceType {
	return DeviceType{
		Type: "Mthreads", Count: "mthreads.com/vgpu", Memory: "mthreads.com/sgpu-memory", Cores: "mthreads.com/sgpu-core",
		MemoryUnitMiB: 512, SplitAcrossDevices: true,
		Annotations: Annotations{
			RegisterFormat: RegisterCapacity,
			Capacity:       CapacityRule{Resource: "mthreads.com/sgpu-core", PerDevice: 16, IDInfix: "mthreads", Cores: 16, Slots: 100},
			// HAMi registers hami.io/mthreads-vgpu-devices-to-allocate but its
			// PatchAnnotations never writes it: only the allocated one.
			Allocated: "hami.io/mthreads-vgpu-devices-allocated",
			UseUUID:   "mthreads.ai/use-gpuuuid", NoUseUUID: "mthreads.ai/nouse-gpuuuid",
			Extra: ExtraMthreads,
		},
	}
}

// Mthreads' own pod annotations (HAMi pkg/device/mthreads/device.go,
// PatchAnnotations).
const (
	// AnnoMthreadsGPUIndex lists the indices of the Mthreads devices of the
	// last container holding any.
	AnnoMthreadsGPUIndex      = "mthreads.com/gpu-index"
	AnnoMthreadsPredicateTime = "mthreads.com/predicate-time"
	AnnoMthreadsPredicateNode = "mthreads.com/predicate-node"
)

// mthreadsAnnotations writes ExtraMthreads: the last container's device
// indices, the time and the node.
func mthreadsAnnotations(out map[string]string, list []ContainerAllocation, c FilterChoice) {
	if idx := lastIndexList(list, c.Node); idx != "" {
		out[AnnoMthreadsGPUIndex] = idx
		out[AnnoMthreadsPredicateTime] = strconv.FormatInt(c.Now.UnixNano(), 10)
		out[AnnoMthreadsPredicateNode] = c.Node.Name
	}
}
