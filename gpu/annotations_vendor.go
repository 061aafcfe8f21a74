package gpu

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Each vendor's own pod annotations and the function writing them are in
// its vendor_<name>.go, beside its row.

// vendorAnnotations adds the vendor-specific annotations of t's Extra rule
// for list, the type's entries per container as written to its
// devices-allocated annotation.
func vendorAnnotations(out map[string]string, t DeviceType, list []ContainerAllocation, c FilterChoice) {
	switch t.Annotations.Extra {
	case ExtraCambricon:
		cambriconAnnotations(out, list, c.Node)
	case ExtraMthreads:
		mthreadsAnnotations(out, list, c)
	case ExtraKunlun:
		kunlunAnnotations(out, list, c)
	case ExtraMetaxSGPU:
		metaxAnnotations(out, list, c)
	case ExtraAWSNeuron:
		neuronAnnotations(out, t, list, c)
	case ExtraEnflameDRS:
		enflameAnnotations(out, list, c)
	case ExtraAscend:
		ascendAnnotations(out, t, list, c)
	}
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
