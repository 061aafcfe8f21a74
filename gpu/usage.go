package gpu

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// PodUsage is what a pod already assigned by HAMi holds.
type PodUsage struct {
	// Node is the node Filter assigned the pod to (hami.io/vgpu-node).
	Node string
	// Allocations are the pod's devices, one per vendor and device, collapsed
	// over its containers as HAMi's CollapseInitContainerUsage does: init
	// containers run one after another, so they count by their peak and one
	// slot; app containers run together, so they add up, one slot each; the
	// pod holds the larger of the two. Sorted by Type, then UUID.
	Allocations []Allocation
	// MIG are the MIG instances the pod holds, in annotation order.
	MIG []Allocation
}

// DecodePodUsage reads the devices a pod holds from the annotations HAMi's
// Filter wrote: hami.io/vgpu-node and each registry type's devices-allocated
// annotation (hami.io/vgpu-devices-allocated for NVIDIA), plus the MIG
// instances of hami.io/vgpu-mig-allocations. A pod without
// hami.io/vgpu-node holds nothing HAMi assigned; a pod that has succeeded
// or failed holds nothing any more (HAMi drops it from its cache).
//
// Every malformed annotation is named at once, by its path
// (metadata.annotations[hami.io/vgpu-devices-allocated].containers[1].devices[0].memoryMiB),
// in a *plancore.InvalidError wrapping ErrInvalidAllocation (and so
// ErrInvalidInput). Every entry is typed by the annotation's vendor, whatever
// its own type field says (HAMi's AMD writes the product name there). It
// never panics. HAMi skips such a pod, counting what it holds as free; a
// caller should instead treat the node's usage as unknown and not fit
// there.
//
// MIG reservations are read as HAMi v2.10 reads them: keys it does not know
// are ignored, and a reservation whose device the devices annotation does
// not list is kept in MIG (HAMi's getNodesUsage restores it), so
// AddPodUsage keeps its slices occupied.
func DecodePodUsage(pod *corev1.Pod, reg Registry) (PodUsage, error) {
	if pod == nil {
		return PodUsage{}, invalid(ErrInvalidAllocation, field.ErrorList{field.Required(field.NewPath("pod"), "a pod is required")})
	}
	node, ok := pod.Annotations[AnnoAssignedNode]
	if !ok {
		return PodUsage{}, nil
	}
	out := PodUsage{Node: node}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return out, nil
	}
	annos := field.NewPath("metadata", "annotations")
	var errs field.ErrorList
	raw := map[string][][]Allocation{}
	for _, t := range reg.types {
		key := t.Annotations.Allocated
		v, ok := pod.Annotations[key]
		if key == "" || !ok {
			continue
		}
		p := annos.Key(key).Child("containers")
		containers, bad := decodeContainers(v, p)
		errs = append(errs, bad...)
		// The annotation names the vendor; an entry's own type may be the
		// device's product name (HAMi's AMD writes it), so it is not checked.
		for ci := range containers {
			for di := range containers[ci] {
				e := &containers[ci][di]
				e.Type = t.Type
				if t.Annotations.CoreMask {
					// The cores are a mask of the device's cores (HAMi's AWS
					// Neuron); HAMi's Fit counts its bits.
					e.CoreMask = uint64(e.Cores)
					e.Cores = int32(bits.OnesCount64(e.CoreMask))
				}
			}
		}
		raw[t.Type] = containers
	}
	if v, ok := pod.Annotations[AnnoMIGAllocations]; ok {
		var bad field.ErrorList
		out.MIG, bad = decodeMIGAllocations(v, reg.migType(), raw[reg.migType()], annos.Key(AnnoMIGAllocations))
		errs = append(errs, bad...)
	}
	if err := invalid(ErrInvalidAllocation, errs); err != nil {
		return PodUsage{}, err
	}
	out.Allocations = collapseUsage(raw, len(pod.Spec.InitContainers))
	return out, nil
}

// usageKey is one device of one vendor.
type usageKey struct{ typ, uuid string }

// collapseUsage folds a pod's per-container allocations into its effective
// usage per device: the larger of the init containers' peak (one slot) and
// the app containers' sum (one slot each).
func collapseUsage(raw map[string][][]Allocation, numInit int) []Allocation {
	initPeak := map[usageKey]Allocation{}
	appSum := map[usageKey]Allocation{}
	for typ, containers := range raw {
		for ci, c := range containers {
			for _, a := range c {
				k := usageKey{typ, a.UUID}
				if ci < numInit {
					cur := initPeak[k]
					cur.MemoryMiB, cur.Cores, cur.Slots = max(cur.MemoryMiB, a.MemoryMiB), max(cur.Cores, a.Cores), 1
					cur.CoreMask |= a.CoreMask
					initPeak[k] = cur
					continue
				}
				cur := appSum[k]
				cur.MemoryMiB, cur.Cores, cur.Slots = addSat32(cur.MemoryMiB, a.MemoryMiB), addSat32(cur.Cores, a.Cores), cur.Slots+1
				cur.CoreMask |= a.CoreMask
				appSum[k] = cur
			}
		}
	}
	keys := map[usageKey]bool{}
	for k := range initPeak {
		keys[k] = true
	}
	for k := range appSum {
		keys[k] = true
	}
	out := make([]Allocation, 0, len(keys))
	for k := range keys {
		i, a := initPeak[k], appSum[k]
		out = append(out, Allocation{UUID: k.uuid, Type: k.typ, MemoryMiB: max(i.MemoryMiB, a.MemoryMiB),
			Cores: max(i.Cores, a.Cores), Slots: max(i.Slots, a.Slots, 1), CoreMask: i.CoreMask | a.CoreMask})
	}
	slices.SortFunc(out, func(a, b Allocation) int { return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.UUID, b.UUID)) })
	return out
}

// AddPodUsage returns a copy of devices with the usage of pods recorded
// against them, as HAMi's getNodesUsage does: each allocation through
// AddUsage (refused the same way, named usage[i].allocs[j]...), and each MIG
// reservation's placement added to its device's MIGInUse, listed by the
// pod's devices or not. A device in MIG mode that a pod uses in more
// containers than it has reservations on it, a device outside MIG mode that
// a reservation names, and every MIG device of the node when a reservation
// names a device the node does not have, are marked unhealthy, as HAMi
// v2.10's getNodesUsage does: their real state is unknown, so nothing is
// placed on them. devices is not modified.
func AddPodUsage(devices []Device, usage ...PodUsage) ([]Device, error) {
	out := slices.Clone(devices)
	byID := make(map[string]int, len(out))
	for i, d := range out {
		byID[d.ID] = i
		out[i].MIGInUse = slices.Clone(d.MIGInUse)
	}
	var errs field.ErrorList
	for k, u := range usage {
		up := field.NewPath("usage").Index(k)
		for j, a := range u.Allocations {
			p := up.Child("allocs").Index(j)
			i, ok := byID[a.UUID]
			if !ok {
				errs = append(errs, field.NotFound(p.Child("uuid"), a.UUID))
				continue
			}
			errs = append(errs, addOne(&out[i], a, p)...)
		}
		addMIGUsage(out, byID, u)
	}
	if err := invalid(ErrInvalidDevice, errs); err != nil {
		return nil, err
	}
	return out, nil
}

// FilterChoice is what Filter decided for a pod: the inputs of
// FilterAnnotations.
type FilterChoice struct {
	// Pod is the pod, for its containers.
	Pod *corev1.Pod
	// Node is the chosen node with its devices.
	Node Node
	// Containers is the chosen assignment (Plan.Containers).
	Containers []ContainerAllocation
	// Now is the time of the decision, written as hami.io/vgpu-time.
	Now time.Time
	// Registry names each vendor's annotations.
	Registry Registry
}

// FilterAnnotations returns the pod annotations HAMi's Filter writes for
// choice: hami.io/vgpu-node, hami.io/vgpu-time (Unix seconds) and, for each
// vendor, its devices-to-allocate annotation (where HAMi writes one) and its
// devices-allocated one holding the same "UUID,Type,mem,cores:" entries,
// containers separated by ";", init containers first (HAMi's
// PatchAnnotations); NVIDIA's MIG instances in hami.io/vgpu-mig-allocations;
// and each row's vendor-specific annotations (Annotations.Extra): Cambricon's
// CAMBRICON_DSMLU_*, Mthreads' gpu-index and predicate-time/-node, Kunlun's
// BAIDU_COM_DEVICE_IDX, Metax's own JSON and predicate-time, AWS Neuron's
// AWS_NEURON_IDS and NEURON_* (its cores written as masks of the device's
// NeuronCores), Enflame's gcu-assigned* and assigned-containers, Ascend's
// huawei.com/<chip> and predicate-time. Times are Now, in the unit HAMi
// writes (Unix nanoseconds for the vendor annotations but Ascend's).
//
// As in HAMi, a vendor whose devices on the node register the vendor's own
// type name as their model (whole-card vendors derived from capacity, Metax
// sGPUs, Enflame DRS, AWS Neuron, for instance) gets one entry per container
// of the pod, empty where the container has none of its devices, and is
// written even when the pod asks none of them (with the vendor-specific
// annotations HAMi writes regardless: Metax's, Enflame's gcu-assigned and
// time, Ascend's); any other vendor (NVIDIA, whose models read "NVIDIA-...") gets
// entries only for the containers holding its devices. Invalid input (a nil
// pod, a zero Now, an empty node name, a container or device the pod or node
// does not have, an allocation typed other than its device) is named in a
// *plancore.InvalidError wrapping ErrInvalidInput, as is every allocation
// the annotations could not carry back to DecodeAllocations and
// DecodePodUsage: an empty device id or one holding ',', ':' or ';',
// negative memory or cores, a core mask naming a core above 30. What
// FilterAnnotations writes always decodes to the allocations it was given.
func FilterAnnotations(c FilterChoice) (map[string]string, error) {
	if errs := c.validate(); len(errs) > 0 {
		return nil, plancore.Invalid(ErrInvalidInput, errs)
	}
	out := map[string]string{AnnoAssignedNode: c.Node.Name, AnnoAssignedTime: strconv.FormatInt(c.Now.Unix(), 10)}
	order := podContainers(c.Pod)
	byName := map[containerKey]ContainerAllocation{}
	for _, ca := range c.Containers {
		byName[containerKey{ca.Container, ca.Init}] = ca
	}
	for _, t := range c.Registry.types {
		if t.Annotations.ToAllocate == "" && t.Annotations.Allocated == "" {
			continue
		}
		padded := false
		for _, d := range c.Node.Devices {
			if d.Vendor == t.Type && d.Model == t.Type {
				padded = true
			}
		}
		var list []ContainerAllocation
		holds := false
		for _, k := range order {
			ca := byName[k]
			var mine []Allocation
			for _, a := range ca.Devices {
				if a.Type == t.Type {
					mine = append(mine, a)
				}
			}
			holds = holds || len(mine) > 0
			if len(mine) > 0 || padded {
				list = append(list, ContainerAllocation{Container: k.name, Init: k.init, Devices: mine})
			}
		}
		if !holds && !padded {
			continue
		}
		if t.Annotations.CoreMask {
			list = withCoreMasks(list, c.Node)
			if errs := wideMasks(list); len(errs) > 0 {
				return nil, plancore.Invalid(ErrInvalidInput, errs)
			}
		}
		enc := EncodeAllocations(list, t.Type)
		if t.Annotations.EntryModel {
			enc = encodeWithModels(list, c.Node)
		}
		for _, key := range []string{t.Annotations.ToAllocate, t.Annotations.Allocated} {
			if key != "" {
				out[key] = enc
			}
		}
		if t.Capabilities.MIG {
			if mig := encodeMIG(list); mig != "" {
				out[AnnoMIGAllocations] = mig
			}
		}
		vendorAnnotations(out, t, list, c)
	}
	return out, nil
}

// containerKey names a container of a pod.
type containerKey struct {
	name string
	init bool
}

// podContainers lists the pod's containers, init containers first.
func podContainers(pod *corev1.Pod) []containerKey {
	var out []containerKey
	for _, c := range pod.Spec.InitContainers {
		out = append(out, containerKey{c.Name, true})
	}
	for _, c := range pod.Spec.Containers {
		out = append(out, containerKey{c.Name, false})
	}
	return out
}

func (c FilterChoice) validate() field.ErrorList {
	var errs field.ErrorList
	if c.Pod == nil {
		return field.ErrorList{field.Required(field.NewPath("pod"), "a pod is required")}
	}
	if c.Now.IsZero() {
		errs = append(errs, field.Required(field.NewPath("now"), "the time of the decision"))
	}
	if c.Node.Name == "" {
		errs = append(errs, field.Required(field.NewPath("node", "name"), "the chosen node"))
	}
	known := map[containerKey]bool{}
	for _, k := range podContainers(c.Pod) {
		known[k] = true
	}
	vendor := map[string]string{}
	for _, d := range c.Node.Devices {
		vendor[d.ID] = d.Vendor
	}
	for i, ca := range c.Containers {
		p := field.NewPath("containers").Index(i)
		if !known[containerKey{ca.Container, ca.Init}] {
			errs = append(errs, field.NotFound(p.Child("container"), ca.Container))
		}
		for j, a := range ca.Devices {
			dp := p.Child("devices").Index(j)
			if bad := unencodable(a, dp); len(bad) > 0 {
				errs = append(errs, bad...)
				continue
			}
			switch v, ok := vendor[a.UUID]; {
			case !ok:
				errs = append(errs, field.NotFound(dp.Child("uuid"), a.UUID))
			case v != a.Type:
				// Written under another vendor's annotation, it would be
				// read back as that vendor's device.
				errs = append(errs, field.Invalid(dp.Child("type"), a.Type, fmt.Sprintf("device %s is %q", a.UUID, v)))
			}
		}
	}
	return errs
}

// allocationSeparators are the separators of the devices-to-allocate
// encoding: containers end with ';', devices with ':', fields are split at
// ','.
const allocationSeparators = ",:;"

// maxEncodedMask is the largest core mask the encoding holds: the mask is
// written in the cores field, which DecodeAllocations reads as a
// non-negative int32.
const maxEncodedMask = math.MaxInt32

// unencodable names what in a, named p, DecodeAllocations could not read
// back once written: an empty id or one holding a separator, negative
// memory or cores, a core mask wider than the cores field.
func unencodable(a Allocation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.UUID == "" || strings.ContainsAny(a.UUID, allocationSeparators) {
		errs = append(errs, field.Invalid(p.Child("uuid"), a.UUID, "must be non-empty and free of ',', ':' and ';', the separators of the devices-allocated annotation"))
	}
	if a.MemoryMiB < 0 {
		errs = append(errs, field.Invalid(p.Child("memoryMiB"), a.MemoryMiB, "must not be negative"))
	}
	if a.Cores < 0 {
		errs = append(errs, field.Invalid(p.Child("cores"), a.Cores, "must not be negative"))
	}
	if a.CoreMask > maxEncodedMask {
		errs = append(errs, field.Invalid(p.Child("coreMask"), a.CoreMask, "the annotation holds cores 0..30 only"))
	}
	return errs
}

// wideMasks names the core masks chosen for a device of more cores than
// the annotation can name (the lowest free cores of a device of 32 or
// more), by container name.
func wideMasks(list []ContainerAllocation) field.ErrorList {
	var errs field.ErrorList
	for _, ca := range list {
		for j, a := range ca.Devices {
			if a.CoreMask > maxEncodedMask {
				errs = append(errs, field.Invalid(field.NewPath("containers").Key(ca.Container).Child("devices").Index(j).Child("coreMask"),
					a.CoreMask, "the annotation holds cores 0..30 only"))
			}
		}
	}
	return errs
}
