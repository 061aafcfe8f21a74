package gpu

import "slices"

// Kunlun XPU links (HAMi pkg/device/kunlun/device.go, InterGroupConnection,
// GroupConnection, InterGroupConnection2): pairs across the two groups of
// four, pairs within a group, and the four-XPU sets joined across them.
func kunlunCrossPairs() [][2]int { return [][2]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}} }

func kunlunInnerPairs() [][2]int {
	return [][2]int{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}, {4, 5}, {4, 6}, {4, 7}, {5, 6}, {5, 7}, {6, 7}}
}

func kunlunQuads() [][4]int {
	return [][4]int{{0, 1, 4, 5}, {2, 3, 6, 7}, {0, 2, 4, 6}, {1, 3, 5, 7}, {0, 3, 4, 7}, {1, 2, 5, 6}}
}

// chooseKunlunGraph is HAMi's whole-Kunlun Fit (graghSelect in
// pkg/device/kunlun/topo.go). It works on positions in the request type's
// device list as HAMi's policy sort leaves it (order), as HAMi does: the
// first four positions are the left wing, the next four the right. An XPU
// fits when it is healthy, unused and passes the UUID selectors. For 1, 2
// or 4 XPUs a wing holding exactly the right number of fitting XPUs (for
// one XPU 1, 3, 2 then 4; otherwise the count up to 4) gives its first
// fitting XPUs; else 2 XPUs take the first linked cross pair and 4 XPUs the
// first joined set of four (with six free, one that leaves a linked pair);
// 8 XPUs take indices 0..7 when all eight fit; any other count none. The
// devices are found by their index. It returns the picks, or the reason
// counts: under mutex (shared XPUs) the used XPUs that would otherwise
// fit, else the XPUs refused by the selectors, else one NumaNotFit. A whole
// XPU is taken whole; a vXPU takes the request's memory and cores.
func (p *picker) chooseKunlunGraph(order []int) ([]pick, reasonCounts) {
	var counts reasonCounts
	badUUID, busy := 0, 0
	fits := make([]bool, len(order))
	for pos, i := range order {
		d := &p.st.devs[i]
		switch {
		case !p.sel.uuidOK(d.ID):
			badUUID++
		case p.r.Rule == FitLinkGraph:
			fits[pos] = d.Healthy && d.Used == 0
		case p.vxpuFits(d) && p.mutex && d.Used > 0:
			busy++
		default:
			fits[pos] = p.vxpuFits(d)
		}
	}
	idx := p.kunlunIndices(order, fits)
	switch {
	case len(idx) > 0:
	case busy > 0:
		counts[rExclusiveDeviceAllocateConflict] = busy
		return nil, counts
	case badUUID > 0:
		counts[rCardUUIDMismatch] = badUUID
		return nil, counts
	default:
		counts[rNumaNotFit] = 1
		return nil, counts
	}
	picks := make([]pick, 0, len(idx))
	for _, want := range idx {
		for _, i := range order {
			if d := p.st.devs[i]; d.Index == want {
				pk := pick{idx: i, mem: d.MemoryMiB, cores: d.Cores}
				if p.r.Rule == FitLinkGraphShared {
					pk.mem, pk.cores = p.r.MemoryMiB, p.r.Cores
				}
				picks = append(picks, pk)
				break
			}
		}
	}
	return picks, counts
}

// vxpuFits is HAMi's FitVXPU: healthy, room for the request's memory, and
// on a used device the same memory as the requests it serves (their
// average).
func (p *picker) vxpuFits(d *Device) bool {
	switch {
	case !d.Healthy || int64(p.r.MemoryMiB)+int64(d.UsedMemoryMiB) > int64(d.MemoryMiB):
		return false
	case d.Used == 0:
		return true
	}
	return d.UsedMemoryMiB/d.Used == p.r.MemoryMiB
}

// kunlunIndices is graghSelect's choice of device indices.
func (p *picker) kunlunIndices(order []int, fits []bool) []int {
	n := int(p.r.Nums)
	left, right := 0, 0
	for pos, ok := range fits {
		switch {
		case ok && pos < 4:
			left++
		case ok:
			right++
		}
	}
	switch n {
	case 8:
		if left+right == 8 {
			return []int{0, 1, 2, 3, 4, 5, 6, 7}
		}
		return nil
	case 1, 2, 4:
	default:
		return nil
	}
	if left >= n || right >= n {
		for slots := n; slots <= 4; slots++ {
			want := slots
			if n%2 == 1 {
				want = []int{1, 3, 2, 4}[slots-1]
			}
			if left == want {
				return p.kunlunFrom(order, fits, 0)
			}
			if right == want {
				return p.kunlunFrom(order, fits, 4)
			}
		}
	}
	return p.kunlunLinked(order, fits)
}

// kunlunFrom returns the indices of the first r.Nums fitting devices from
// position start (HAMi's devicepick).
func (p *picker) kunlunFrom(order []int, fits []bool, start int) []int {
	var out []int
	for pos := start; pos < min(len(order), 8) && len(out) < int(p.r.Nums); pos++ {
		if fits[pos] {
			out = append(out, p.st.devs[order[pos]].Index)
		}
	}
	return out
}

// kunlunLinked is HAMi's interconnect: two XPUs on a cross pair, four on a
// joined set.
func (p *picker) kunlunLinked(order []int, fits []bool) []int {
	var free []int
	for pos, ok := range fits {
		if ok {
			free = append(free, p.st.devs[order[pos]].Index)
		}
	}
	switch p.r.Nums {
	case 2:
		cross := kunlunCrossPairs()
		for _, a := range free {
			for _, b := range free {
				if a != b && (slices.Contains(cross, [2]int{a, b}) || slices.Contains(cross, [2]int{b, a})) {
					return []int{a, b}
				}
			}
		}
	case 4:
		return kunlunQuad(free)
	}
	return nil
}

// kunlunQuad picks a joined set of four free XPUs: with four or five free
// the first that is free, with six the first that leaves a linked pair free
// (else the last free set), otherwise none.
func kunlunQuad(free []int) []int {
	has := func(xs ...int) bool {
		for _, x := range xs {
			if !slices.Contains(free, x) {
				return false
			}
		}
		return true
	}
	var last []int
	for _, q := range kunlunQuads() {
		if !has(q[:]...) {
			continue
		}
		switch len(free) {
		case 4, 5:
			return q[:]
		case 6:
			last = q[:]
			var rest []int
			for _, f := range free {
				if !slices.Contains(q[:], f) {
					rest = append(rest, f)
				}
			}
			for _, pr := range slices.Concat(kunlunCrossPairs(), kunlunInnerPairs()) {
				if slices.Contains(rest, pr[0]) && slices.Contains(rest, pr[1]) {
					return q[:]
				}
			}
		}
	}
	return last
}
