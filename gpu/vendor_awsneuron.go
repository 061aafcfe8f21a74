package gpu

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// awsNeuronType is HAMi's AWS Neuron row (HAMi
// pkg/device/awsneuron/device.go, GenerateResourceRequests,
// splitCoreRequest and InitAWSNeuronDevice): aws.amazon.com/neuron asks for
// that many devices; without it, aws.amazon.com/neuroncore asks for
// NeuronCores, at most 2 on one device or a multiple of 2 over several; a
// device-count request takes every core of its devices. No lock, no
// devices-to-allocate annotation; several devices are a run of unused ones
// by the node's instance type (FitNeuronRuns, Fit and graphSelect). Held devices in
// hami.io/aws-neuron-devices-allocated, whose cores are a bit mask of the
// device's NeuronCores). Its devices come from the node's capacity of
// aws.amazon.com/neuron, each with the capacity of aws.amazon.com/neuroncore
// divided evenly (GetNodeDevices); Filter also writes AWS_NEURON_IDS and its
// companions (PatchAnnotations).
func awsNeuronType() DeviceType {
	return DeviceType{
		Type: "AWSNeuron", Count: "aws.amazon.com/neuron", Cores: "aws.amazon.com/neuroncore",
		CountRule: CountFromCores, CoresPerDevice: 2, FitRule: FitNeuronRuns,
		Annotations: Annotations{
			RegisterFormat: RegisterNeuron, CoreMask: true, Extra: ExtraAWSNeuron,
			Allocated: "hami.io/aws-neuron-devices-allocated",
			UseUUID:   "aws.amazon.com/use-neuron-uuid", NoUseUUID: "aws.amazon.com/nouse-neuron-uuid",
		},
	}
}

// AWS Neuron's own pod annotations (HAMi pkg/device/awsneuron/device.go,
// PatchAnnotations).
const (
	// AnnoNeuronIDs lists the Neuron devices (device-count requests) or
	// NeuronCores given, over every container.
	AnnoNeuronIDs           = "AWS_NEURON_IDS"
	AnnoNeuronResourceType  = "NEURON_RESOURCE_TYPE"
	AnnoNeuronAllocTime     = "NEURON_ALLOC_TIME"
	AnnoNeuronAllocated     = "NEURON_ALLOCATED"
	AnnoNeuronPredicateNode = "aws.amazon.com/predicate-node"
)

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

// neuronDevices derives AWS Neuron devices from the node's capacity, as
// HAMi's AWS Neuron GetNodeDevices: one per unit of the Count resource,
// each with the Cores capacity divided evenly (whole cores, rounded down)
// as its cores and slots, no memory, healthy, named "<node>-<type>-<i>".
// HAMi records the first node's cores per device for every node; plancore
// reads each node's own. HAMi's device cores are a bit mask of that many
// cores, compared by their count; plancore keeps the count.
func neuronDevices(node *corev1.Node, t DeviceType) []Device {
	q, ok := node.Status.Capacity[t.Count]
	if !ok {
		return nil
	}
	count, ok := q.AsInt64()
	if !ok || count <= 0 {
		return nil
	}
	var cores int64
	if cq, ok := node.Status.Capacity[t.Cores]; ok {
		if c, ok := cq.AsInt64(); ok && c > 0 {
			cores = c
		}
	}
	// A node cannot hold more devices than this; a larger capacity is a typo.
	count = min(count, MaxCapacityDevices)
	per := int32(min(cores/count, 63))
	out := make([]Device, 0, count)
	for i := range int(count) {
		out = append(out, Device{ID: fmt.Sprintf("%s-%s-%d", node.Name, t.Type, i), Index: i, Vendor: t.Type, Model: t.Type,
			Count: per, Cores: per, Healthy: true})
	}
	return out
}

// withCoreMasks returns list with each allocation's cores turned into the
// bit mask of the device's cores it holds (Cores and CoreMask both the mask,
// as HAMi's AWS Neuron writes Usedcores): the lowest cores free of the
// device's CoresInUse and of what the pod's earlier containers took. Init
// containers run alone, so each starts from the device's own usage, as
// HAMi fits each on a copy of the node; app containers accumulate. For the
// two cores of every Neuron device HAMi supports this is its addCoreUsage
// (one core: the free one, core 0 first; two: both).
func withCoreMasks(list []ContainerAllocation, n Node) []ContainerAllocation {
	app := map[string]uint64{}
	out := make([]ContainerAllocation, len(list))
	for i, ca := range list {
		out[i] = ContainerAllocation{Container: ca.Container, Init: ca.Init, Devices: make([]Allocation, len(ca.Devices))}
		used := app
		if ca.Init {
			used = map[string]uint64{}
		}
		for j, a := range ca.Devices {
			d, _ := deviceByID(n, a.UUID)
			mask := a.CoreMask
			if mask == 0 {
				mask = lowestFree(d.CoresInUse|used[a.UUID], int(a.Cores), int(d.Cores))
			}
			used[a.UUID] |= mask
			a.CoreMask, a.Cores = mask, int32(min(mask, 1<<31-1))
			out[i].Devices[j] = a
		}
	}
	return out
}

// lowestFree is the mask of the lowest n cores of a device of total cores
// not in used (fewer when fewer are free).
func lowestFree(used uint64, n, total int) uint64 {
	var mask uint64
	for b := 0; b < min(total, 64) && bits.OnesCount64(mask) < n; b++ {
		if used&(1<<b) == 0 {
			mask |= 1 << b
		}
	}
	return mask
}

// neuronAnnotations writes AWS_NEURON_IDS and its companions as HAMi's AWS
// Neuron PatchAnnotations: over every container in order, a container whose
// limits ask Neuron devices lists its devices' indices, any other lists the
// NeuronCores its masks hold (device index × cores per device + core) and
// sets NEURON_RESOURCE_TYPE to the core resource. HAMi's cores per device is
// the first node's; plancore's is the device's own (its Count).
func neuronAnnotations(out map[string]string, t DeviceType, list []ContainerAllocation, c FilterChoice) {
	var ids []string
	for _, ca := range list {
		ctr := podContainer(c.Pod, containerKey{ca.Container, ca.Init})
		byDevice := false
		if ctr != nil {
			if q, ok := ctr.Resources.Limits[t.Count]; ok {
				n, _ := q.AsInt64()
				byDevice = n > 0
			}
		}
		for _, a := range ca.Devices {
			d, _ := deviceByID(c.Node, a.UUID)
			if byDevice {
				ids = append(ids, strconv.Itoa(d.Index))
				continue
			}
			for b := range 64 {
				if a.CoreMask&(1<<b) != 0 {
					ids = append(ids, strconv.Itoa(int(d.Count)*d.Index+b))
					out[AnnoNeuronResourceType] = string(t.Cores)
				}
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	out[AnnoNeuronIDs] = strings.Join(ids, ",")
	out[AnnoNeuronAllocTime] = strconv.FormatInt(c.Now.UnixNano(), 10)
	out[AnnoNeuronAllocated] = "false"
	out[AnnoNeuronPredicateNode] = c.Node.Name
}
