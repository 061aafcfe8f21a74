package gpu

import (
	"fmt"
	"strings"
)

// amdType is HAMi's AMD row (HAMi pkg/device/amd/device.go,
// GenerateResourceRequests, InitAMDGPUDevice and Fit): read from limits
// only, memory in MiB, a core percentage within 1..100 (0 and 101 are
// refused), 100 when unset, fitted as a share of each GPU's compute units,
// the shared lock, devices in HAMi's JSON register hami.io/node-amd-register,
// allocation entries typed by the GPU's product name.
func amdType() DeviceType {
	return DeviceType{
		Type: "AMD", Count: "amd.com/gpu", Memory: "amd.com/gpumem", Cores: "amd.com/gpucores",
		DefaultCores: 100, CoresMin: 1, CoresMax: 100, CoresShareOfDevice: true, LimitsOnly: true, LockName: LockNvidia,
		Annotations: Annotations{
			Register: "hami.io/node-amd-register", RegisterFormat: RegisterJSON, EntryModel: true,
			ToAllocate: "hami.io/amd-devices-to-allocate", Allocated: "hami.io/amd-devices-allocated",
			UseType: "amd.com/use-gputype", NoUseType: "amd.com/nouse-gputype",
			UseUUID: "amd.com/use-gpu-uuid", NoUseUUID: "amd.com/nouse-gpu-uuid",
		},
	}
}

// encodeWithModels is EncodeAllocations with each entry typed by its
// device's model (the vendor's type where the model is empty or would break
// the encoding).
func encodeWithModels(list []ContainerAllocation, n Node) string {
	model := map[string]string{}
	for _, d := range n.Devices {
		if d.Model != "" && !strings.ContainsAny(d.Model, ",:;") {
			model[d.ID] = d.Model
		}
	}
	named := make([]ContainerAllocation, len(list))
	for i, ca := range list {
		named[i] = ContainerAllocation{Container: ca.Container, Init: ca.Init}
		for _, a := range ca.Devices {
			if m, ok := model[a.UUID]; ok {
				a.Type = m
			}
			named[i].Devices = append(named[i].Devices, a)
		}
	}
	var b strings.Builder
	for _, ca := range named {
		for _, a := range ca.Devices {
			fmt.Fprintf(&b, "%s,%s,%d,%d:", a.UUID, a.Type, a.MemoryMiB, a.Cores)
		}
		b.WriteByte(';')
	}
	return b.String()
}
