package gpu

// birenType is HAMi's Biren row (HAMi pkg/device/biren/device.go,
// GenerateResourceRequests and InitBirenDevice): a count only, 100 % of the
// memory and cores 0, the shared lock, every registered device 100 cores
// (GetNodeDevices, for the score), devices in HAMi's JSON register
// hami.io/node-biren-register.
func birenType() DeviceType {
	return DeviceType{
		Type: "Biren", Count: "birentech.com/gpu", LockName: LockNvidia,
		Annotations: Annotations{
			Register: "hami.io/node-biren-register", RegisterFormat: RegisterJSON, RegisterCores: 100, Handshake: "hami.io/node-handshake-biren",
			ToAllocate: "hami.io/Biren-devices-to-allocate", Allocated: "hami.io/Biren-devices-allocated",
			UseType: "birentech.com/use-biren", NoUseType: "birentech.com/nouse-biren",
			UseUUID: "birentech.com/use-gpuuuid", NoUseUUID: "birentech.com/nouse-gpuuuid",
		},
	}
}
