package gpu

import (
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

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

// Metax sGPU's own pod annotations (HAMi pkg/device/metax/sdevice.go and
// protocol.go, PatchAnnotations).
const (
	// AnnoMetaxAllocated is Metax's own JSON of the sGPUs given, one list per
	// container.
	AnnoMetaxAllocated     = "metax-tech.com/gpu-devices-allocated"
	AnnoMetaxPredicateTime = "metax-tech.com/predicate-time"
)

// metaxAnnotations writes ExtraMetaxSGPU: Metax's JSON of the sGPUs given
// and the time.
func metaxAnnotations(out map[string]string, list []ContainerAllocation, c FilterChoice) {
	out[AnnoMetaxAllocated] = metaxAllocated(list)
	out[AnnoMetaxPredicateTime] = strconv.FormatInt(c.Now.UnixNano(), 10)
}

// metaxDeviceJSON is one sGPU of Metax's allocation annotation
// (ContainerMetaxSDevice).
type metaxDeviceJSON struct {
	UUID    string `json:"uuid"`
	Compute int32  `json:"compute,omitempty"`
	VRam    int32  `json:"vRam,omitempty"`
}

// metaxAllocated is Metax's JSON of list: one array per container, empty
// where the container holds none.
func metaxAllocated(list []ContainerAllocation) string {
	pod := make([][]metaxDeviceJSON, len(list))
	for i, ca := range list {
		pod[i] = make([]metaxDeviceJSON, len(ca.Devices))
		for j, a := range ca.Devices {
			pod[i][j] = metaxDeviceJSON{UUID: a.UUID, Compute: a.Cores, VRam: a.MemoryMiB}
		}
	}
	return mustJSON(pod)
}

// topologyTableScore is HAMi's whole-card Metax ScoreNode: 2000 minus the
// entry of the policy's table for the number of typ's devices given.
func topologyTableScore(vs VendorScore, containers []ContainerAllocation, policy Policy) float32 {
	given := 0
	for _, c := range containers {
		for _, a := range c.Devices {
			if a.Type == vs.Type {
				given++
			}
		}
	}
	table := vs.Losses
	if policy == Spread {
		table = vs.Scores
	}
	if !table.Set {
		return 0
	}
	return float32(2000 - table.value(given))
}

// metaxDevice is one device of Metax's own register (HAMi
// pkg/device/metax/protocol.go, MetaxSDeviceInfo).
type metaxDevice struct {
	UUID              string `json:"uuid"`
	BDF               string `json:"bdf,omitempty"`
	Model             string `json:"model,omitempty"`
	TotalDevCount     int32  `json:"totalDevCount,omitempty"`
	TotalCompute      int32  `json:"totalCompute,omitempty"`
	TotalVRam         int32  `json:"totalVRam,omitempty"`
	AvailableDevCount int32  `json:"availableDevCount,omitempty"`
	AvailableCompute  int32  `json:"availableCompute,omitempty"`
	AvailableVRam     int32  `json:"availableVRam,omitempty"`
	Numa              int32  `json:"numa,omitempty"`
	Healthy           bool   `json:"healthy,omitempty"`
	QosPolicy         string `json:"qosPolicy,omitempty"`
	LinkZone          int32  `json:"linkZone,omitempty"`
}

func decodeMetaxRegister(s string, p *field.Path) ([]Device, field.ErrorList) {
	var list []metaxDevice
	if err := decodeJSON(s, &list); err != nil {
		return nil, field.ErrorList{field.Invalid(p, s, "want Metax's JSON device list: "+err.Error())}
	}
	out := make([]Device, len(list))
	for i, m := range list {
		out[i] = Device{ID: m.UUID, Index: i, Count: m.TotalDevCount, MemoryMiB: m.TotalVRam,
			Cores: m.TotalCompute, NUMA: int(m.Numa), Healthy: m.Healthy}
	}
	return out, nil
}
