package gpu

import (
	"cmp"
	"slices"
)

// A device may sit in a group its register names: Vastai's dies on a card
// (Device.Card) and Ascend 910's NPUs in a network (Device.Network). HAMi's
// Fits for both walk every fitting device and then take the request's
// devices from the groups with the most fitting devices first, and their
// ScoreNode scores each container by the share of its devices in one
// group. Both rules are written once here, keyed by the group.

// groupKey reads a device's group.
type groupKey func(d *Device) string

func cardOf(d *Device) string    { return d.Card }
func networkOf(d *Device) string { return d.Network }

// chooseByGroup keeps, of every device that fits, the r.Nums HAMi prefers:
// one device, the first in walk order; more, the devices of the group with
// the most fitting devices first, each group's in walk order. HAMi orders
// groups with as many fitting devices by its map's order, so at random;
// plancore by the first device of each in walk order.
func (p *picker) chooseByGroup(group groupKey) {
	n := int(p.r.Nums)
	if len(p.picked) < n {
		p.need = p.r.Nums - int32(len(p.picked))
		return
	}
	if len(p.picked) > n && n > 1 {
		count, first := map[string]int{}, map[string]int{}
		for i, pk := range p.picked {
			g := group(&p.st.devs[pk.idx])
			if count[g] == 0 {
				first[g] = i
			}
			count[g]++
		}
		slices.SortStableFunc(p.picked, func(a, b pick) int {
			ga, gb := group(&p.st.devs[a.idx]), group(&p.st.devs[b.idx])
			return cmp.Or(cmp.Compare(count[gb], count[ga]), cmp.Compare(first[ga], first[gb]))
		})
	}
	p.picked = p.picked[:n]
	// Only the devices kept count against the quota.
	p.quotaMem, p.quotaCores = p.st.quotaMem, p.st.quotaCores
	for _, pk := range p.picked {
		p.quotaMem += int64(pk.mem)
		p.quotaCores += int64(p.cores)
	}
	p.need = 0
}

// groupShareScore is HAMi's ScoreNode of grouped devices: per container
// given devices of typ, the most of them in one group over their number, in
// float32, summed; 0 when one of them is in no group.
func groupShareScore(n Node, containers []ContainerAllocation, typ string, group groupKey) float32 {
	groupOf := make(map[string]string, len(n.Devices))
	for i := range n.Devices {
		if d := &n.Devices[i]; d.Vendor == typ {
			groupOf[d.ID] = group(d)
		}
	}
	var sum float32
	for _, c := range containers {
		perGroup := map[string]int{}
		most, total := 0, 0
		for _, a := range c.Devices {
			if a.Type != typ {
				continue
			}
			g := groupOf[a.UUID]
			if g == "" {
				return 0
			}
			perGroup[g]++
			most = max(most, perGroup[g])
			total++
		}
		if total > 0 {
			sum += float32(most) / float32(total)
		}
	}
	return sum
}
