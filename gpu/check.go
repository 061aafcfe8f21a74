package gpu

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// CheckPlan reports every invariant that p, the result of Decide(in, o),
// breaks, joined into one error, or nil. It holds what plancore's own fit
// properties check, exported for properties over your own scheduler:
//
//   - every input node has one outcome; the chosen node is one that fits,
//     its assignment is the chosen outcome's, and no node is chosen only when
//     none fits;
//   - a refused node's rejections each count against its devices of the type
//     that failed, and count no more devices than that (a node short of
//     devices altogether says only NodeInsufficientDevice);
//   - a fitting node's allocations are on its own devices, healthy, not
//     cordoned and of the requested type, a container gets a device once
//     unless it asks for the same type twice, and exactly as many devices
//     (or MIG instances) of each type as it asks;
//   - no device is given more slots, memory or cores than it has left, and a
//     100-core request takes a card of 100 cores alone (AMD counts compute
//     units instead, and HAMi's AMD Fit has no such rule); each init container is counted
//     alone, the app containers together (devices in MIG mode are left to
//     the MIG checks of your own tests).
func CheckPlan(in Input, o Options, p Plan) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	byName := map[string]Node{}
	for _, n := range in.Nodes {
		byName[n.Name] = n
	}
	if len(p.Nodes) != len(byName) {
		fail("%d node outcomes for %d nodes", len(p.Nodes), len(byName))
	}
	anyFits := false
	for _, f := range p.Nodes {
		n, ok := byName[f.Node]
		switch {
		case !ok:
			fail("an outcome for node %q, which is not an input node", f.Node)
		case f.Fits:
			anyFits = true
			checkFit(fail, in.Request, n, f)
		default:
			checkRejections(fail, n, f)
		}
		if f.Node == p.Node && (!f.Fits || !slices.EqualFunc(f.Containers, p.Containers, sameContainer)) {
			fail("chosen node %s does not fit, or its assignment is not the plan's", p.Node)
		}
	}
	if (p.Node == "") == anyFits {
		fail("chosen node %q while some node fits: %v", p.Node, anyFits)
	}
	return errors.Join(errs...)
}

func sameContainer(a, b ContainerAllocation) bool {
	return a.Container == b.Container && a.Init == b.Init && slices.EqualFunc(a.Devices, b.Devices, func(x, y Allocation) bool {
		return x.UUID == y.UUID && x.Type == y.Type && x.MemoryMiB == y.MemoryMiB && x.Cores == y.Cores && x.Slots == y.Slots
	})
}

func checkRejections(fail func(string, ...any), n Node, f NodeFit) {
	// Rejections count the devices of the type that failed, except a node
	// short of devices altogether, which is that one reason counting none.
	ofType := 0
	for _, d := range n.Devices {
		if d.Vendor == f.FailedType {
			ofType++
		}
	}
	sum := 0
	for _, r := range f.Rejections {
		if r.Code == ReasonNodeInsufficientDevice {
			if r.Total != 0 || len(f.Rejections) != 1 {
				fail("%s: %s must be the only reason and count no device: %q", f.Node, r.Code, f.Message())
			}
			continue
		}
		sum += r.Count
		if r.Total != ofType {
			fail("%s: rejection %s counts against %d devices, the node has %d of type %s", f.Node, r, r.Total, ofType, f.FailedType)
		}
	}
	if sum > ofType {
		fail("%s: rejections %q count %d devices, the node has %d of type %s", f.Node, f.Message(), sum, ofType, f.FailedType)
	}
}

func checkFit(fail func(string, ...any), req FitRequest, n Node, f NodeFit) {
	devs := map[string]Device{}
	for _, d := range n.Devices {
		devs[d.ID] = d
	}
	app := map[string][]Allocation{}
	for _, c := range f.Containers {
		seen := map[string]bool{}
		for _, a := range c.Devices {
			d, ok := devs[a.UUID]
			switch {
			case !ok:
				fail("%s: allocation on unknown device %s", f.Node, a.UUID)
			case !d.Healthy || d.Cordoned || d.Vendor != a.Type:
				fail("%s: container %s got ineligible device %s (healthy %v, cordoned %v, vendor %s for type %s)",
					f.Node, c.Container, d.ID, d.Healthy, d.Cordoned, d.Vendor, a.Type)
			case seen[a.UUID] && !asksTypeTwice(req, c.Container):
				fail("%s: container %s got device %s twice", f.Node, c.Container, a.UUID)
			}
			seen[a.UUID] = true
		}
		if c.Init {
			checkDeviceCapacity(fail, f.Node, devs, groupAllocations(c.Devices))
		} else {
			for _, a := range c.Devices {
				app[a.UUID] = append(app[a.UUID], a)
			}
		}
	}
	checkDeviceCapacity(fail, f.Node, devs, app)
	checkDeviceCounts(fail, req, f)
}

// checkDeviceCounts: each container is given exactly the devices (or MIG
// instances) of each type its requests ask, no fewer and no more.
func checkDeviceCounts(fail func(string, ...any), req FitRequest, f NodeFit) {
	type key struct {
		container, typ string
		init           bool
	}
	want, got := map[key]int{}, map[key]int{}
	for _, r := range req.Requests {
		want[key{r.Container, r.Type, r.Init}] += int(r.Nums)
	}
	for _, c := range f.Containers {
		for _, a := range c.Devices {
			got[key{c.Container, a.Type, c.Init}]++
		}
	}
	for k, n := range want {
		if got[k] != n {
			fail("%s: container %s asked %d devices of type %s and was given %d", f.Node, k.container, n, k.typ, got[k])
		}
	}
	for k, n := range got {
		if _, asked := want[k]; !asked {
			fail("%s: container %s was given %d devices of type %s, which it did not ask", f.Node, k.container, n, k.typ)
		}
	}
}

func asksTypeTwice(req FitRequest, container string) bool {
	seen := map[string]bool{}
	for _, r := range req.Requests {
		if r.Container != container {
			continue
		}
		if seen[r.Type] {
			return true
		}
		seen[r.Type] = true
	}
	return false
}

func groupAllocations(allocs []Allocation) map[string][]Allocation {
	out := map[string][]Allocation{}
	for _, a := range allocs {
		out[a.UUID] = append(out[a.UUID], a)
	}
	return out
}

func checkDeviceCapacity(fail func(string, ...any), node string, devs map[string]Device, byDev map[string][]Allocation) {
	for _, id := range slices.Sorted(maps.Keys(byDev)) {
		allocs := byDev[id]
		d, ok := devs[id]
		if !ok || d.Mode == ModeMIG {
			continue
		}
		mem, cores, slots := int64(d.UsedMemoryMiB), int64(d.UsedCores), int64(d.Used)
		full := false
		for _, a := range allocs {
			mem += int64(a.MemoryMiB)
			cores += int64(a.Cores)
			slots += int64(max(1, a.Slots))
			full = full || (a.Cores >= 100 && d.Cores == 100)
		}
		switch {
		case slots > int64(d.Count):
			fail("%s/%s: %d slots used and assigned, the device has %d", node, id, slots, d.Count)
		case mem > int64(d.MemoryMiB):
			fail("%s/%s: %d MiB used and assigned, the device has %d", node, id, mem, d.MemoryMiB)
		case cores > int64(d.Cores):
			fail("%s/%s: %d%% cores used and assigned, the device has %d", node, id, cores, d.Cores)
		case full && (d.Used > 0 || len(allocs) > 1):
			fail("%s/%s: a 100-core request shares the card (used %d, %d allocations)", node, id, d.Used, len(allocs))
		}
	}
}
