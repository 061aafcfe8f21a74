package gpu

import corev1 "k8s.io/api/core/v1"

// AscendChips returns the Ascend chips of the default registry (HAMi's chart,
// vnpus.configs[].commonWord), one device type each.
func AscendChips() []string {
	return []string{"Ascend310P", "Ascend910A", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend910B4-1"}
}

// AscendType returns the registry row for one Ascend chip (HAMi
// pkg/device/ascend/device.go, GenerateResourceRequests and InitDevices):
// huawei.com/<chip>, huawei.com/<chip>-memory (MiB, memoryFactor 1) and
// huawei.com/<chip>-core (0 when unset) under the shared lock; devices in
// HAMi's JSON register hami.io/node-register-<chip>. The webhook rounds the
// memory up to the chip's vNPU template before the scheduler sees the pod.
func AscendType(chip string) DeviceType {
	return DeviceType{
		Type:     chip,
		Count:    corev1.ResourceName("huawei.com/" + chip),
		Memory:   corev1.ResourceName("huawei.com/" + chip + "-memory"),
		Cores:    corev1.ResourceName("huawei.com/" + chip + "-core"),
		LockName: LockNvidia,
		Annotations: Annotations{
			Register: "hami.io/node-register-" + chip, RegisterFormat: RegisterJSON, Handshake: "hami.io/node-handshake-" + chip,
			ToAllocate: "hami.io/" + chip + "-devices-to-allocate", Allocated: "hami.io/" + chip + "-devices-allocated",
			UseUUID: "hami.io/use-" + chip + "-uuid", NoUseUUID: "hami.io/no-use-" + chip + "-uuid",
		},
	}
}
