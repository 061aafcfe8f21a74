package gpu

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
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

// sameCardScore is HAMi's Vastai ScoreNode: per container given devices of
// typ, the most of them on one card over their number, in float32; 0 when
// one of them is not a die.
func sameCardScore(n Node, containers []ContainerAllocation, typ string) float32 {
	card := make(map[string]string, len(n.Devices))
	for _, d := range n.Devices {
		if d.Vendor == typ {
			card[d.ID] = d.Card
		}
	}
	var sum float32
	for _, c := range containers {
		perCard := map[string]int{}
		most, total := 0, 0
		for _, a := range c.Devices {
			if a.Type != typ {
				continue
			}
			k := card[a.UUID]
			if k == "" {
				return 0
			}
			perCard[k]++
			most = max(most, perCard[k])
			total++
		}
		if total > 0 {
			sum += float32(most) / float32(total)
		}
	}
	return sum
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

// chooseByCard keeps, of every die that fits, the r.Nums HAMi's Vastai die
// mode prefers (its Fit and computeBestCombination): one die, the first in
// walk order; more, the dies of the card with the most fitting dies first,
// each card's in walk order. HAMi orders cards with as many fitting dies by
// its map's order, plancore by the first die of each in walk order.
func (p *picker) chooseByCard() {
	n := int(p.r.Nums)
	if len(p.picked) < n {
		p.need = p.r.Nums - int32(len(p.picked))
		return
	}
	if len(p.picked) > n && n > 1 {
		count, first := map[string]int{}, map[string]int{}
		for i, pk := range p.picked {
			c := p.st.devs[pk.idx].Card
			if count[c] == 0 {
				first[c] = i
			}
			count[c]++
		}
		slices.SortStableFunc(p.picked, func(a, b pick) int {
			ca, cb := p.st.devs[a.idx].Card, p.st.devs[b.idx].Card
			return cmp.Or(cmp.Compare(count[cb], count[ca]), cmp.Compare(first[ca], first[cb]))
		})
	}
	p.picked = p.picked[:n]
	// Only the dies kept count against the quota.
	p.quotaMem, p.quotaCores = p.st.quotaMem, p.st.quotaCores
	for _, pk := range p.picked {
		p.quotaMem += int64(pk.mem)
		p.quotaCores += int64(p.cores)
	}
	p.need = 0
}
