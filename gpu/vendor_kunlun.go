package gpu

import "slices"

// kunlunTypes are HAMi's two Kunlunxin rows.
//
// kunlun, a whole XPU (HAMi pkg/device/kunlun/device.go,
// GenerateResourceRequests, InitKunlunDevice, GetNodeDevices, Fit and
// PatchAnnotations; topo.go): 100 % of the memory and cores 0, no lock, no
// devices-to-allocate annotation (the held devices are in
// hami.io/kunlun-allocated, the last container's indices in
// BAIDU_COM_DEVICE_IDX), devices derived from the node's capacity of
// kunlunxin.com/xpu (100 slots, 98,304 MiB, the second half on NUMA node
// 1), unused XPUs given by the link graph (FitLinkGraph), the node scored
// by the groups of four the placement leaves half used (ScoreLinkGroups;
// device.go ScoreNode, topo.go calcscore).
//
// XPU, a vXPU (HAMi pkg/device/kunlun/vdevice.go, GenerateResourceRequests,
// trimMemory and InitKunlunVDevice): memory rounded up to 24,576, 49,152 or
// 98,304 MiB, cores its share of 98,304 (an unset memory is the whole
// card, cores 100), the shared lock, devices in HAMi's JSON register
// hami.io/node-register-xpu, given by the link graph and shared only within
// one memory tier (FitLinkGraphShared; vdevice.go Fit and FitVXPU).
func kunlunTypes() []DeviceType {
	return []DeviceType{
		{
			Type: "kunlun", Count: "kunlunxin.com/xpu", FitRule: FitLinkGraph, Score: ScoreLinkGroups,
			Annotations: Annotations{
				RegisterFormat: RegisterCapacity,
				Capacity:       CapacityRule{Resource: "kunlunxin.com/xpu", PerDevice: 1, IDInfix: "kunlun", MemoryMiB: 98304, Cores: 100, Slots: 100, HalfNUMA: true},
				Allocated:      "hami.io/kunlun-allocated",
				UseUUID:        "baidu.com/use-gpuuuid", NoUseUUID: "baidu.com/nouse-gpuuuid",
				Extra: ExtraKunlun,
			},
		},
		{
			Type: "XPU", Count: "kunlunxin.com/vxpu", Memory: "kunlunxin.com/vxpu-memory",
			MemoryRule: MemoryTiers, MemoryTiersMiB: []int32{24576, 49152, 98304}, LockName: LockNvidia, FitRule: FitLinkGraphShared,
			Annotations: Annotations{
				Register: "hami.io/node-register-xpu", RegisterFormat: RegisterJSON, Handshake: "hami.io/node-handshake-xpu",
				ToAllocate: "hami.io/xpu-devices-to-allocate", Allocated: "hami.io/xpu-devices-allocated",
				UseUUID: "hami.io/use-xpu-uuid", NoUseUUID: "hami.io/no-use-xpu-uuid",
			},
		},
	}
}

// AnnoKunlunDeviceIndex lists the indices of the whole Kunlun XPUs of the
// last container holding any (HAMi pkg/device/kunlun/device.go,
// PatchAnnotations).
const AnnoKunlunDeviceIndex = "BAIDU_COM_DEVICE_IDX"

// kunlunAnnotations writes ExtraKunlun: the last container's XPU indices.
func kunlunAnnotations(out map[string]string, list []ContainerAllocation, c FilterChoice) {
	if idx := lastIndexList(list, c.Node); idx != "" {
		out[AnnoKunlunDeviceIndex] = idx
	}
}

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

// linkGroupScore is HAMi's whole-Kunlun ScoreNode. It compares the "bubbles"
// of two sets of XPU indices, the XPUs in use before the pod and the XPUs
// given to it (linkBubbles), and rewards a placement that does not add
// any: 3000 when the given XPUs have one bubble fewer, 2000 as many, 1000
// one more (or any other difference), 0 two more. A node holding a device
// of another type scores 0, as HAMi's does.
func linkGroupScore(n Node, containers []ContainerAllocation, typ string) float32 {
	var inUse, given []int
	index := make(map[string]int, len(n.Devices))
	for _, d := range n.Devices {
		if d.Vendor != typ {
			return 0
		}
		index[d.ID] = d.Index
		if d.Used > 0 && !slices.Contains(inUse, d.Index) {
			inUse = append(inUse, d.Index)
		}
	}
	for _, c := range containers {
		for _, a := range c.Devices {
			if i, ok := index[a.UUID]; ok && a.Type == typ && !slices.Contains(given, i) {
				given = append(given, i)
			}
		}
	}
	switch linkBubbles(given) - linkBubbles(inUse) {
	case -1:
		return 3000
	case 0:
		return 2000
	case 2:
		return 0
	}
	return 1000
}

// linkBubbles is HAMi's countbubble: each group of four XPUs (indices below
// 4, the others) costs 0 when the set holds four of it, 2 when it holds one,
// 1 otherwise (none, two or three); an empty set costs 1.
func linkBubbles(indices []int) int {
	left, right := 0, 0
	for _, i := range indices {
		if i < 4 {
			left++
		} else {
			right++
		}
	}
	if left == 0 && right == 0 {
		return 1
	}
	cost := func(k int) int {
		switch k {
		case 4:
			return 0
		case 1:
			return 2
		}
		return 1
	}
	return cost(left) + cost(right)
}
