package gpu

import (
	"encoding/json"
	"fmt"
	"strings"
)

// vastaiType is HAMi's Vastai row (HAMi pkg/device/vastai/device.go,
// GenerateResourceRequests and InitVastaiDevice): a count only, 100 % of the
// memory and cores 0, the shared lock, every registered device 100 cores
// (GetNodeDevices, for the score), devices in HAMi's JSON register
// hami.io/node-va-register. In die mode (the register's custominfo
// DeviceStrategy "die") each device is a die of the card its AIC names
// (DieCards, Device.Card): under mutex a card is exclusive, several dies
// come from the cards with the most fitting dies first (Fit, aicID,
// computeBestCombination; chooseByGroup), and the node scores the share of
// each container's dies on one card (ScoreSameCard; ScoreNode,
// groupShareScore).
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

// dieCard is the card a die sits on, from its register's custominfo as
// HAMi's Vastai Fit reads it (isDieMode, aicID): the string AIC of a device
// whose DeviceStrategy is the string "die", else "". A custominfo that is
// not a JSON object fails HAMi's decoding of the whole register.
func dieCard(raw json.RawMessage) (string, error) {
	var info map[string]any
	if err := json.Unmarshal(raw, &info); err != nil {
		return "", fmt.Errorf("want a JSON object: %v", err)
	}
	if s, _ := info["DeviceStrategy"].(string); s != "die" {
		return "", nil
	}
	aic, _ := info["AIC"].(string)
	if strings.ContainsAny(aic, ",:;") {
		return "", fmt.Errorf("the AIC %q holds ',', ':' or ';'", aic)
	}
	return aic, nil
}

// cardInUse reports whether a die of card is in use: under mutex HAMi's
// Vastai Fit refuses an idle die on a card another die of which is in use
// (a card is exclusive, not a die). "" is no card.
func (p *picker) cardInUse(card string) bool {
	if card == "" {
		return false
	}
	for _, d := range p.st.devs {
		if d.Card == card && d.Vendor == p.r.Type && d.Used > 0 {
			return true
		}
	}
	return false
}
