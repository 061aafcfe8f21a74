package gpu

import corev1 "k8s.io/api/core/v1"

// IluvatarChips returns the Iluvatar chips of the default registry (HAMi's
// chart, iluvatars[].commonWord), one device type each.
func IluvatarChips() []string {
	return []string{"BI-V100", "BI-V150", "MR-V100", "MR-V50"}
}

// IluvatarType returns the registry row for one Iluvatar chip, typed by the
// chip's CommonWord as HAMi does (HAMi pkg/device/iluvatar/device.go,
// GenerateResourceRequests and InitIluvatarDevice): iluvatar.ai/<chip>-vgpu,
// iluvatar.ai/<chip>.vMem in 256 MiB units (MemoryFactor; "1000" is
// 256,000 MiB) and iluvatar.ai/<chip>.vCore (0 when unset) under the shared
// lock; devices in the legacy register hami.io/node-<chip>-register.
func IluvatarType(chip string) DeviceType {
	return DeviceType{
		Type:          chip,
		Count:         corev1.ResourceName("iluvatar.ai/" + chip + "-vgpu"),
		Memory:        corev1.ResourceName("iluvatar.ai/" + chip + ".vMem"),
		Cores:         corev1.ResourceName("iluvatar.ai/" + chip + ".vCore"),
		MemoryUnitMiB: 256,
		LockName:      LockNvidia,
		Annotations: Annotations{
			Register: "hami.io/node-" + chip + "-register", RegisterFormat: RegisterLegacy, Handshake: "hami.io/node-handshake-" + chip,
			ToAllocate: "hami.io/" + chip + "-devices-to-allocate", Allocated: "hami.io/" + chip + "-devices-allocated",
			UseUUID: "hami.io/use-" + chip + "-uuid", NoUseUUID: "hami.io/no-use-" + chip + "-uuid",
		},
	}
}
