package gpu

// vastaiType is HAMi's Vastai row (HAMi pkg/device/vastai/device.go,
// GenerateResourceRequests and InitVastaiDevice): a count only, 100 % of the
// memory and cores 0, the shared lock, every registered device 100 cores
// (GetNodeDevices, for the score), devices in HAMi's JSON register
// hami.io/node-va-register. In die mode (the register's custominfo
// DeviceStrategy "die") each device is a die of the card its AIC names
// (DieCards, Device.Card): under mutex a card is exclusive, several dies
// come from the cards with the most fitting dies first (Fit, aicID,
// computeBestCombination), and the node scores the share of each
// container's dies on one card (ScoreSameCard; ScoreNode).
func vastaiType() DeviceType {
	return DeviceType{
		Type: "Vastai", Count: "vastaitech.com/va", LockName: LockNvidia, Score: ScoreSameCard,
		Annotations: Annotations{
			Register: "hami.io/node-va-register", RegisterFormat: RegisterJSON, RegisterCores: 100, DieCards: true, Handshake: "hami.io/node-handshake-va",
			ToAllocate: "hami.io/Vastai-devices-to-allocate", Allocated: "hami.io/Vastai-devices-allocated",
			UseType: "vastaitech.com/use-va", NoUseType: "vastaitech.com/nouse-va",
			UseUUID: "vastaitech.com/use-gpuuuid", NoUseUUID: "vastaitech.com/nouse-gpuuuid",
		},
	}
}
