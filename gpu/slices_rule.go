package gpu

import (
	"cmp"
	"math"
	"slices"
)

// sliceCandidate is one usable slice profile of a node, as HAMi's Enflame
// collectDRSProfiles builds it: its size in slices, memory in GiB and its
// share of the largest profile's slices as a core percentage, rounded up.
type sliceCandidate struct {
	SliceProfile
	slices, memGiB, corePercent int
}

// sliceCandidates returns the node's profiles that name both a slice count
// and a memory, smallest slices first, then smallest memory, then name
// (HAMi's order for equal slices and memory is its map's, so random).
func sliceCandidates(profiles []SliceProfile) []sliceCandidate {
	largest := 0
	for _, pr := range profiles {
		n, _ := parseSliceProfile(pr.Name)
		largest = max(largest, n)
	}
	if largest <= 0 {
		return nil
	}
	var out []sliceCandidate
	for _, pr := range profiles {
		n, m := parseSliceProfile(pr.Name)
		if n <= 0 || m <= 0 {
			continue
		}
		out = append(out, sliceCandidate{SliceProfile: pr, slices: n, memGiB: m,
			corePercent: int(math.Ceil(float64(n) * 100 / float64(largest)))})
	}
	slices.SortFunc(out, func(a, b sliceCandidate) int {
		return cmp.Or(cmp.Compare(a.slices, b.slices), cmp.Compare(a.memGiB, b.memGiB), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// selectSliceProfile is HAMi's Enflame selectProfileByRequest plus the
// bounds its Fit checks: a request naming its slices takes the profile of
// exactly that size; otherwise the first profile (in sliceCandidates order)
// with at least the asked memory and core percentage, the memory read as
// GiB unless it exceeds twice the memory of the last (largest) profile,
// then as MiB rounded up to GiB (normalizeMemoryRequestToGB). An unset
// memory or cores (0) does not constrain.
func selectSliceProfile(profiles []SliceProfile, r Request) (sliceCandidate, bool) {
	cands := sliceCandidates(profiles)
	if len(cands) == 0 {
		return sliceCandidate{}, false
	}
	ok := func(c sliceCandidate) bool {
		return c.slices <= math.MaxInt32 && c.memGiB <= math.MaxInt32/1024
	}
	if r.Slices > 0 {
		for _, c := range cands {
			if c.slices == int(r.Slices) {
				return c, ok(c)
			}
		}
		return sliceCandidate{}, false
	}
	memGiB := int(r.MemoryMiB)
	if top := cands[len(cands)-1].memGiB; memGiB > 2*top {
		memGiB = int(math.Ceil(float64(memGiB) / 1024))
	}
	for _, c := range cands {
		if (memGiB > 0 && c.memGiB < memGiB) || (r.Cores > 0 && c.corePercent < int(r.Cores)) {
			continue
		}
		return c, ok(c)
	}
	return sliceCandidate{}, false
}

// roomSlices is room under FitSliceProfiles (HAMi's Enflame Fit, after its
// health, UUID, slot and mutex checks): the device must hold the profile's
// memory, and its cores when it has any; the allocation takes the profile's
// memory, core percentage and slices. HAMi's Enflame Fit has no quota,
// exclusivity or exhausted-compute check.
func (p *picker) roomSlices(idx int) (pick, int) {
	d := &p.st.devs[idx]
	mem, cores := int32(p.slice.memGiB*1024), int32(p.slice.corePercent)
	switch {
	case int64(d.MemoryMiB)-int64(d.UsedMemoryMiB) < int64(mem):
		return pick{}, rCardInsufficientMemory
	case d.Cores > 0 && int64(d.Cores)-int64(d.UsedCores) < int64(cores):
		return pick{}, rCardInsufficientCore
	}
	return pick{idx: idx, mem: mem, cores: cores, profile: p.slice.Name, slots: int32(p.slice.slices)}, -1
}
