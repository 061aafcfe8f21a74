package gpu

// modulePairSize is the number of devices of one Ascend 910C module.
const modulePairSize = 2

// chooseModulePairs keeps, of every device that fits, whole modules (two
// devices of one index/2, both fitting) until the request's devices are
// reached, and returns how many it kept: HAMi's computeBestCombination910C.
// HAMi takes the whole modules in its map's order, so at random; plancore
// takes them in walk order (the module of the best candidate first), each
// module's devices in walk order.
func (p *picker) chooseModulePairs() int {
	var modules []int
	members := map[int][]pick{}
	for _, pk := range p.picked {
		m := p.st.devs[pk.idx].Index / modulePairSize
		if _, seen := members[m]; !seen {
			modules = append(modules, m)
		}
		members[m] = append(members[m], pk)
	}
	var chosen []pick
	left := int(p.r.Nums)
	for _, m := range modules {
		if left <= 0 {
			break
		}
		if len(members[m]) == modulePairSize {
			chosen = append(chosen, members[m]...)
			left -= modulePairSize
		}
	}
	p.picked, p.need = chosen, 0
	return len(chosen)
}

// modulePairsReasons is HAMi's 910C refusal: the walk's reasons and the
// devices the whole modules came to (even none) as
// AllocatedCardsInsufficientRequest, all out of the devices asked.
func modulePairsReasons(counts reasonCounts, got int, nums int32) []Rejection {
	counts[rAllocatedCardsInsufficientRequest] = 0
	out := renderReasons(counts, int(nums))
	out = append(out, Rejection{Code: ReasonAllocatedCardsInsufficientRequest, Count: got, Total: int(nums)})
	sortRejections(out)
	return out
}
