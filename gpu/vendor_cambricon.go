package gpu

import "fmt"

// cambriconType is HAMi's Cambricon MLU row (HAMi
// pkg/device/cambricon/device.go, GenerateResourceRequests, InitMLUDevice and
// GetNodeDevices): memory in 256 MiB units (MemoryFactor), cores 100 when
// unset (a whole card), its own node lock, devices derived from the node's
// capacity of cambricon.com/mlu.smlu.vcore (100 per card, each card's memory
// its share of the vmemory capacity).
func cambriconType() DeviceType {
	return DeviceType{
		Type: "MLU", Count: "cambricon.com/vmlu", Memory: "cambricon.com/mlu.smlu.vmemory", Cores: "cambricon.com/mlu.smlu.vcore",
		MemoryUnitMiB: 256, DefaultCores: 100, LockName: LockCambricon,
		Annotations: Annotations{
			RegisterFormat: RegisterCapacity,
			Capacity:       CapacityRule{Resource: "cambricon.com/mlu.smlu.vcore", PerDevice: 100, IDInfix: "cambricon-mlu", Cores: 100, Slots: 100},
			ToAllocate:     "hami.io/cambricon-mlu-devices-to-allocate", Allocated: "hami.io/cambricon-mlu-devices-allocated",
			UseType: "cambricon.com/use-mlutype", NoUseType: "cambricon.com/nouse-mlutype",
			UseUUID: "cambricon.com/use-gpuuuid", NoUseUUID: "cambricon.com/nouse-gpuuuid",
			Extra: ExtraCambricon,
		},
	}
}

// cambriconAnnotations adds the two annotations HAMi's Cambricon
// PatchAnnotations writes: CAMBRICON_DSMLU_ASSIGNED=false and, from the
// first device of the first container holding one,
// CAMBRICON_DSMLU_PROFILE=<index>_<cores>_<memory in 256 MiB units>.
func cambriconAnnotations(out map[string]string, list []ContainerAllocation, n Node) {
	out["CAMBRICON_DSMLU_ASSIGNED"] = "false"
	for _, ca := range list {
		if len(ca.Devices) == 0 {
			continue
		}
		a := ca.Devices[0]
		idx := 0
		for _, d := range n.Devices {
			if d.ID == a.UUID {
				idx = d.Index
			}
		}
		out["CAMBRICON_DSMLU_PROFILE"] = fmt.Sprintf("%d_%d_%d", idx, a.Cores, a.MemoryMiB/256)
		return
	}
}
