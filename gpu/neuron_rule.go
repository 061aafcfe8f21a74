package gpu

import "strings"

// chooseNeuronRun is HAMi's AWS Neuron graphSelect for a request of more
// than one device. It works on positions in the type's device list as
// HAMi's policy sort leaves it (order), as HAMi does: a run is free when
// every device at its positions is unused and healthy, and the run's
// positions are then taken as device indices. On an Inferentia node any
// start is tried, lowest first; elsewhere only runs of 4, 8 or 16 (or 1)
// starting at a multiple of their length. No run is no placement (HAMi's
// NumaNotFit). A device taken is
// taken whole: all its cores. HAMi checks no UUID selector, mutex or core
// here.
func (p *picker) chooseNeuronRun(order []int) []pick {
	n := int(p.r.Nums)
	step := 1
	if it := p.st.instanceType; !strings.Contains(it, "inf") && !strings.Contains(it, "Inf") {
		switch n {
		case 1, 4, 8, 16:
			step = n
		default:
			return nil
		}
	}
	for start := 0; start+n <= len(order); start += step {
		free := true
		for pos := start; pos < start+n && free; pos++ {
			d := &p.st.devs[order[pos]]
			free = d.Used == 0 && d.Healthy
		}
		if !free {
			continue
		}
		if picks := p.neuronByIndex(order, start, n); picks != nil {
			return picks
		}
	}
	return nil
}

// neuronByIndex returns the devices of indices start..start+n-1, or nil
// when one is missing, used or unhealthy. HAMi takes them as they are,
// though the run it found free was of positions, not indices: it gives
// fewer devices than asked when an index is missing, and a device in use
// when the sort moved a used device's index into the run, over-assigning
// it. plancore goes on to the next run instead.
func (p *picker) neuronByIndex(order []int, start, n int) []pick {
	picks := make([]pick, 0, n)
	for want := start; want < start+n; want++ {
		found := false
		for _, i := range order {
			if d := p.st.devs[i]; d.Index == want {
				if d.Used > 0 || !d.Healthy {
					return nil
				}
				picks = append(picks, pick{idx: i, mem: d.MemoryMiB, cores: d.Cores})
				found = true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return picks
}
