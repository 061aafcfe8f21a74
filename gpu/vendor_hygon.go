package gpu

// hygonType is HAMi's Hygon DCU row (HAMi pkg/device/hygon/device.go,
// GenerateResourceRequests, InitDCUDevice and GetNodeDevices): memory in MiB
// (memoryFactor 1 in the chart), cores 100 when unset (a whole card), the
// shared node lock, devices in the legacy register encoding.
func hygonType() DeviceType {
	return DeviceType{
		Type: "DCU", Count: "hygon.com/dcunum", Memory: "hygon.com/dcumem", Cores: "hygon.com/dcucores",
		DefaultCores: 100, LockName: LockNvidia,
		Annotations: Annotations{
			Register: "hami.io/node-dcu-register", RegisterFormat: RegisterLegacy, Handshake: "hami.io/node-handshake-dcu",
			ToAllocate: "hami.io/dcu-devices-to-allocate", Allocated: "hami.io/dcu-devices-allocated",
			UseType: "hygon.com/use-dcutype", NoUseType: "hygon.com/nouse-dcutype",
			UseUUID: "hygon.com/use-gpuuuid", NoUseUUID: "hygon.com/nouse-gpuuuid",
		},
	}
}
