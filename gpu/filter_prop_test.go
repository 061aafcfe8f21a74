package gpu_test

import (
	"fmt"
	"math/bits"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/gpu"
)

// filterKey names a container of a pod.
type filterKey struct {
	name string
	init bool
}

// TestFilterAnnotationsDecode is the property that everything
// FilterAnnotations writes reads back: each vendor's devices-allocated and
// devices-to-allocate annotation decodes (DecodeAllocations) to the
// allocations it was given, container by container in the pod's order, and
// the whole pod decodes (DecodePodUsage) on the chosen node. Devices ids,
// amounts and core masks are drawn to include what the encoding cannot
// carry (separators, empty ids, negative amounts, masks above core 30):
// FilterAnnotations must refuse those. Fails when the id check in
// unencodable is dropped (an id holding ':' splits into two entries), when
// its amount checks are dropped (a negative amount does not decode), or when
// wideMasks is dropped (a mask above core 30 is written saturated).
func TestFilterAnnotationsDecode(t *testing.T) {
	reg := gpu.DefaultRegistry()
	ids := []string{"trn-0", "GPU-0", "mlu-0", "trn-1", "GPU-1", "", "a:b", "c,d", "e;f"}
	types := []string{"AWSNeuron", "NVIDIA", "MLU"}
	rapid.Check(t, func(t *rapid.T) {
		var node gpu.Node
		node.Name = "n"
		for i := range rapid.IntRange(1, 4).Draw(t, "devices") {
			typ := rapid.SampledFrom(types).Draw(t, "vendor")
			model := rapid.SampledFrom([]string{typ, typ + "-X"}).Draw(t, "model")
			node.Devices = append(node.Devices, gpu.Device{ID: rapid.SampledFrom(ids).Draw(t, "id"), Index: i, Vendor: typ, Model: model,
				Count: 10, MemoryMiB: 1 << 20, Cores: rapid.SampledFrom([]int32{40, 2, 100}).Draw(t, "cores"), Healthy: true})
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}}
		var keys []filterKey
		for i := range rapid.IntRange(0, 2).Draw(t, "inits") {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("i%d", i)})
			keys = append(keys, filterKey{fmt.Sprintf("i%d", i), true})
		}
		for i := range rapid.IntRange(1, 3).Draw(t, "apps") {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i)})
			keys = append(keys, filterKey{fmt.Sprintf("c%d", i), false})
		}
		var containers []gpu.ContainerAllocation
		for _, k := range keys {
			if !rapid.Bool().Draw(t, "holds") {
				continue
			}
			ca := gpu.ContainerAllocation{Container: k.name, Init: k.init}
			for range rapid.IntRange(1, 2).Draw(t, "allocs") {
				d := rapid.SampledFrom(node.Devices).Draw(t, "device")
				ca.Devices = append(ca.Devices, gpu.Allocation{UUID: d.ID, Type: d.Vendor,
					MemoryMiB: rapid.SampledFrom([]int32{0, 1024, 1<<31 - 1, -1}).Draw(t, "mem"),
					Cores:     rapid.SampledFrom([]int32{35, 1, 2, 0, -1}).Draw(t, "cores"),
					CoreMask:  rapid.SampledFrom([]uint64{0, 0, 1, 3, 1 << 30, 1 << 31, 1 << 40}).Draw(t, "mask")})
			}
			containers = append(containers, ca)
		}
		annos, err := gpu.FilterAnnotations(gpu.FilterChoice{Pod: pod, Node: node, Containers: containers, Now: time.Unix(1e9, 0), Registry: reg})
		if err != nil {
			if len(invalidFields(err)) == 0 {
				t.Fatalf("refused without a named field: %v", err)
			}
			return
		}
		uses := map[string]int{}
		for _, ca := range containers {
			for _, a := range ca.Devices {
				uses[a.UUID]++
			}
		}
		for _, typ := range types {
			dt, _ := reg.Lookup(typ)
			checkEntries(t, dt, annos, expectedEntries(dt, node, keys, containers), node, uses)
		}
		p := pod.DeepCopy()
		p.Annotations = annos
		u, err := gpu.DecodePodUsage(p, reg)
		if err != nil || u.Node != node.Name {
			t.Fatalf("the pod does not decode: %+v, %v", u, err)
		}
	})
}

// expectedEntries lists, in the pod's container order, the allocations of
// dt's vendor each listed container holds: every container for a vendor
// whose devices carry the vendor's name as their model, else the holders.
func expectedEntries(dt gpu.DeviceType, node gpu.Node, keys []filterKey, containers []gpu.ContainerAllocation) [][]gpu.Allocation {
	padded := false
	for _, d := range node.Devices {
		padded = padded || (d.Vendor == dt.Type && d.Model == dt.Type)
	}
	var out [][]gpu.Allocation
	holds := false
	for _, k := range keys {
		var mine []gpu.Allocation
		for _, ca := range containers {
			if ca.Container == k.name && ca.Init == k.init {
				for _, a := range ca.Devices {
					if a.Type == dt.Type {
						mine = append(mine, a)
					}
				}
			}
		}
		holds = holds || len(mine) > 0
		if len(mine) > 0 || padded {
			out = append(out, mine)
		}
	}
	if !holds && !padded {
		return nil
	}
	return out
}

// deviceCores is the cores of the node's first device named id.
func deviceCores(n gpu.Node, id string) int32 {
	for _, d := range n.Devices {
		if d.ID == id {
			return d.Cores
		}
	}
	return 0
}

// checkEntries checks that dt's annotations in annos decode to want.
func checkEntries(t *rapid.T, dt gpu.DeviceType, annos map[string]string, want [][]gpu.Allocation, node gpu.Node, uses map[string]int) {
	for _, key := range []string{dt.Annotations.ToAllocate, dt.Annotations.Allocated} {
		v, ok := annos[key]
		if key == "" || (!ok && len(want) == 0) {
			continue
		}
		got, err := gpu.DecodeAllocations(v)
		if err != nil {
			t.Fatalf("%s=%q does not decode: %v", key, v, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s=%q: %d containers, want %d", key, v, len(got), len(want))
		}
		for i := range want {
			if len(got[i]) != len(want[i]) {
				t.Fatalf("%s=%q: container %d has %d entries, want %v", key, v, i, len(got[i]), want[i])
			}
			for j, w := range want[i] {
				g := got[i][j]
				cores := g.Cores == w.Cores
				if dt.Annotations.CoreMask {
					// The cores field carries the mask: the one given, or
					// Cores of the device's lowest free cores (all of them
					// when no other allocation shares the device).
					n, total := bits.OnesCount32(uint32(g.Cores)), int(deviceCores(node, w.UUID))
					cores = (w.CoreMask != 0 && uint64(g.Cores) == w.CoreMask) ||
						(w.CoreMask == 0 && n <= int(w.Cores) && (uses[w.UUID] > 1 || n == min(int(w.Cores), total)))
				}
				if g.UUID != w.UUID || g.MemoryMiB != w.MemoryMiB || !cores {
					t.Fatalf("%s=%q: container %d entry %d reads %+v, want %+v", key, v, i, j, g, w)
				}
			}
		}
	}
}
