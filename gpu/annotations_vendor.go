package gpu

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Vendor-specific pod annotations HAMi's PatchAnnotations writes (the
// names are HAMi's).
const (
	// AnnoMthreadsGPUIndex lists the indices of the Mthreads devices of the
	// last container holding any (HAMi pkg/device/mthreads/device.go).
	AnnoMthreadsGPUIndex      = "mthreads.com/gpu-index"
	AnnoMthreadsPredicateTime = "mthreads.com/predicate-time"
	AnnoMthreadsPredicateNode = "mthreads.com/predicate-node"
	// AnnoKunlunDeviceIndex lists the indices of the whole Kunlun XPUs of the
	// last container holding any (HAMi pkg/device/kunlun/device.go).
	AnnoKunlunDeviceIndex = "BAIDU_COM_DEVICE_IDX"
	// AnnoMetaxAllocated is Metax's own JSON of the sGPUs given, one list per
	// container (HAMi pkg/device/metax/sdevice.go and protocol.go).
	AnnoMetaxAllocated     = "metax-tech.com/gpu-devices-allocated"
	AnnoMetaxPredicateTime = "metax-tech.com/predicate-time"
	// AnnoNeuronIDs lists the Neuron devices (device-count requests) or
	// NeuronCores given, over every container (HAMi
	// pkg/device/awsneuron/device.go).
	AnnoNeuronIDs           = "AWS_NEURON_IDS"
	AnnoNeuronResourceType  = "NEURON_RESOURCE_TYPE"
	AnnoNeuronAllocTime     = "NEURON_ALLOC_TIME"
	AnnoNeuronAllocated     = "NEURON_ALLOCATED"
	AnnoNeuronPredicateNode = "aws.amazon.com/predicate-node"
	// Enflame DRS (HAMi pkg/device/enflame/device.go).
	AnnoEnflameAssigned       = "enflame.com/gcu-assigned"
	AnnoEnflameAssignedTime   = "enflame.com/gcu-assigned-time"
	AnnoEnflameAssignedIndex  = "enflame.com/gcu-assigned-index"
	AnnoEnflameAssignedID     = "enflame.com/gcu-assigned-id"
	AnnoEnflameAssignedMinor  = "enflame.com/gcu-assigned-minor"
	AnnoEnflameRequestSize    = "enflame.com/gcu-request-size"
	AnnoEnflameAssignedByName = "assigned-containers"
)

// vendorAnnotations adds the vendor-specific annotations of t's Extra rule
// for list, the type's entries per container as written to its
// devices-allocated annotation.
func vendorAnnotations(out map[string]string, t DeviceType, list []ContainerAllocation, c FilterChoice) {
	switch t.Annotations.Extra {
	case ExtraCambricon:
		cambriconAnnotations(out, list, c.Node)
	case ExtraMthreads:
		if idx := lastIndexList(list, c.Node); idx != "" {
			out[AnnoMthreadsGPUIndex] = idx
			out[AnnoMthreadsPredicateTime] = strconv.FormatInt(c.Now.UnixNano(), 10)
			out[AnnoMthreadsPredicateNode] = c.Node.Name
		}
	case ExtraKunlun:
		if idx := lastIndexList(list, c.Node); idx != "" {
			out[AnnoKunlunDeviceIndex] = idx
		}
	case ExtraMetaxSGPU:
		out[AnnoMetaxAllocated] = metaxAllocated(list)
		out[AnnoMetaxPredicateTime] = strconv.FormatInt(c.Now.UnixNano(), 10)
	case ExtraAWSNeuron:
		neuronAnnotations(out, t, list, c)
	case ExtraEnflameDRS:
		enflameAnnotations(out, list, c)
	case ExtraAscend:
		ascendAnnotations(out, t, list, c)
	}
}

// AnnoAscendVNPUMode is the pod annotation choosing Ascend's soft split
// ("hami-core"); without it a vNPU is a hard-split template.
const AnnoAscendVNPUMode = "huawei.com/vnpu-mode"

// ascendRuntimeJSON is one device of huawei.com/<chip> (HAMi's RuntimeInfo).
type ascendRuntimeJSON struct {
	UUID   string `json:"UUID,omitempty"`
	Temp   string `json:"temp,omitempty"`
	Memory int64  `json:"memory,omitempty"`
	Core   int32  `json:"core,omitempty"`
}

// ascendAnnotations writes HAMi's Ascend annotations: predicate-time (Unix
// seconds) and huawei.com/<type>, every device given with its memory, cores
// and, unless the pod asks the hami-core soft split, the vNPU template its
// memory rounds up to ("" for a whole NPU). A list of no device is JSON
// null, as HAMi marshals it.
func ascendAnnotations(out map[string]string, t DeviceType, list []ContainerAllocation, c FilterChoice) {
	out["predicate-time"] = strconv.FormatInt(c.Now.Unix(), 10)
	soft := c.Pod.Annotations[AnnoAscendVNPUMode] == "hami-core"
	var info []ascendRuntimeJSON
	for _, ca := range list {
		for _, a := range ca.Devices {
			ri := ascendRuntimeJSON{UUID: a.UUID, Memory: int64(a.MemoryMiB), Core: a.Cores}
			if !soft {
				ri.Temp, _ = t.VNPU.Template(a.MemoryMiB)
			}
			info = append(info, ri)
		}
	}
	b, _ := json.Marshal(info)
	out["huawei.com/"+t.Type] = string(b)
}

// deviceByID returns the node's device of that ID.
func deviceByID(n Node, id string) (Device, bool) {
	for _, d := range n.Devices {
		if d.ID == id {
			return d, true
		}
	}
	return Device{}, false
}

// lastIndexList is the comma-separated device indices of the last
// container holding any of list's devices ("" when none does): HAMi's
// Mthreads and Kunlun PatchAnnotations overwrite the annotation container
// by container.
func lastIndexList(list []ContainerAllocation, n Node) string {
	out := ""
	for _, ca := range list {
		if len(ca.Devices) == 0 {
			continue
		}
		idx := make([]string, len(ca.Devices))
		for i, a := range ca.Devices {
			d, _ := deviceByID(n, a.UUID)
			idx[i] = strconv.Itoa(d.Index)
		}
		out = strings.Join(idx, ",")
	}
	return out
}

// metaxDeviceJSON is one sGPU of Metax's allocation annotation
// (ContainerMetaxSDevice).
type metaxDeviceJSON struct {
	UUID    string `json:"uuid"`
	Compute int32  `json:"compute,omitempty"`
	VRam    int32  `json:"vRam,omitempty"`
}

// metaxAllocated is Metax's JSON of list: one array per container, empty
// where the container holds none.
func metaxAllocated(list []ContainerAllocation) string {
	pod := make([][]metaxDeviceJSON, len(list))
	for i, ca := range list {
		pod[i] = make([]metaxDeviceJSON, len(ca.Devices))
		for j, a := range ca.Devices {
			pod[i][j] = metaxDeviceJSON{UUID: a.UUID, Compute: a.Cores, VRam: a.MemoryMiB}
		}
	}
	return mustJSON(pod)
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

// podContainer returns the pod's container k, or nil.
func podContainer(pod *corev1.Pod, k containerKey) *corev1.Container {
	cs := pod.Spec.Containers
	if k.init {
		cs = pod.Spec.InitContainers
	}
	for i := range cs {
		if cs[i].Name == k.name {
			return &cs[i]
		}
	}
	return nil
}

// enflameContainerJSON is one container of Enflame's assigned-containers
// annotation (HAMi's assignedContainerInfo).
type enflameContainerJSON struct {
	Allocated   bool   `json:"allocated"`
	Request     int32  `json:"request"`
	ProfileID   string `json:"profileID,omitempty"`
	ProfileName string `json:"profileName,omitempty"`
}

// enflameAnnotations writes HAMi's Enflame DRS annotations: gcu-assigned
// "false" and the time; per container holding a device, its first device's
// slices and profile in assigned-containers (by container name); from the
// first such container, the device's index (as gcu-assigned-index and
// -id), minor and the slices (gcu-request-size).
func enflameAnnotations(out map[string]string, list []ContainerAllocation, c FilterChoice) {
	out[AnnoEnflameAssigned] = "false"
	out[AnnoEnflameAssignedTime] = strconv.FormatInt(c.Now.UnixNano(), 10)
	ids := map[string]string{}
	for _, pr := range c.Node.SliceProfiles {
		ids[pr.Name] = pr.ID
	}
	assigned := map[string]enflameContainerJSON{}
	for _, ca := range list {
		if len(ca.Devices) == 0 {
			continue
		}
		a := ca.Devices[0]
		slices := max(a.Slots, 1)
		assigned[ca.Container] = enflameContainerJSON{Request: slices, ProfileID: ids[a.SliceProfile], ProfileName: a.SliceProfile}
		d, _ := deviceByID(c.Node, a.UUID)
		if _, done := out[AnnoEnflameAssignedIndex]; !done {
			out[AnnoEnflameAssignedIndex], out[AnnoEnflameAssignedID] = strconv.Itoa(d.Index), strconv.Itoa(d.Index)
		}
		if _, done := out[AnnoEnflameAssignedMinor]; !done && d.Minor != "" {
			out[AnnoEnflameAssignedMinor] = d.Minor
		}
		if _, done := out[AnnoEnflameRequestSize]; !done {
			out[AnnoEnflameRequestSize] = fmt.Sprint(slices)
		}
	}
	if len(assigned) > 0 {
		b, _ := json.Marshal(assigned)
		out[AnnoEnflameAssignedByName] = string(b)
	}
}
