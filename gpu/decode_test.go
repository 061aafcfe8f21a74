package gpu_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/gpu"
)

// Register samples written in the formats HAMi's device plugins use.
const (
	nvidiaRegister = `[{"id":"GPU-a","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-NVIDIA A10","health":true,"mode":"hami-core"},` +
		`{"id":"GPU-b","index":1,"count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-NVIDIA A10","numa":1,"health":true,"mode":"hami-core"},` +
		`{"id":"GPU-m","index":2,"count":7,"devmem":40960,"devcore":100,"type":"NVIDIA-A100-SXM4-40GB","numa":1,"health":true,"mode":"mig",` +
		`"migProfiles":[{"name":"1g.5gb","memoryMB":4864,"core":14,"sliceCount":1,"placements":[{"start":0,"size":1},{"start":1,"size":1}]}]}]`
	dcuRegister   = "DCU-0,4,16384,100,DCU-Z100,0,true:DCU-1,4,16384,100,DCU-Z100,1,false,1,hami-core:"
	metaxRegister = `[{"uuid":"MX-0","model":"C500","totalDevCount":16,"totalCompute":100,"totalVRam":65536,"numa":1,"healthy":true,"qosPolicy":"best-effort"}]`
	pairScores    = `[{"uuid":"GPU-a","score":{"GPU-b":200}},{"uuid":"GPU-b","score":{"GPU-a":200}}]`
)

func hamiNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{
			"hami.io/node-nvidia-register":    nvidiaRegister,
			"hami.io/node-dcu-register":       dcuRegister,
			"metax-tech.com/node-gpu-devices": metaxRegister,
			"hami.io/node-nvidia-score":       pairScores,
			"hami.io/device-cordon":           " GPU-b ,DCU-0",
			"hami.io/node-handshake":          "Requesting_2026-06-14 10:00:00",
			"hami.io/node-handshake-dcu":      "Reported 2026-06-14 10:00:00",
		}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			"cambricon.com/mlu.smlu.vcore":   resource.MustParse("200"),
			"cambricon.com/mlu.smlu.vmemory": resource.MustParse("128"),
		}},
	}
}

func TestDecodeNode(t *testing.T) {
	got, err := gpu.DecodeNode(hamiNode(), gpu.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	nv := func(id string, idx, numa int, cordoned bool) gpu.Device {
		return gpu.Device{ID: id, Index: idx, Vendor: "NVIDIA", Model: "NVIDIA-NVIDIA A10", Count: 10, MemoryMiB: 24576, Cores: 100,
			NUMA: numa, Healthy: true, Mode: "hami-core", Cordoned: cordoned}
	}
	mig := gpu.Device{ID: "GPU-m", Index: 2, Vendor: "NVIDIA", Model: "NVIDIA-A100-SXM4-40GB", Count: 7, MemoryMiB: 40960, Cores: 100, NUMA: 1,
		Healthy: true, Mode: "mig", MIGProfiles: []gpu.MIGProfile{{Name: "1g.5gb", MemoryMiB: 4864, Cores: 14, SliceCount: 1,
			Placements: []gpu.MIGPlacement{{Start: 0, Size: 1}, {Start: 1, Size: 1}}}}}
	mlu := func(i int) gpu.Device {
		// 128 units of 256 MiB over 200 cores, 100 cores a card.
		return gpu.Device{ID: "n1-cambricon-mlu-" + string(rune('0'+i)), Index: i, Vendor: "MLU", Model: "MLU", Count: 100,
			MemoryMiB: 128 * 256 * 100 / 200, Cores: 100, Healthy: true}
	}
	want := gpu.Node{
		Name: "n1",
		Devices: []gpu.Device{
			// Registry order: DCU, MLU, Metax-SGPU, NVIDIA.
			{ID: "DCU-0", Index: 0, Vendor: "DCU", Model: "DCU-Z100", Count: 4, MemoryMiB: 16384, Cores: 100, Healthy: true, Mode: "hami-core"},
			{ID: "DCU-1", Index: 1, Vendor: "DCU", Model: "DCU-Z100", Count: 4, MemoryMiB: 16384, Cores: 100, NUMA: 1, Mode: "hami-core"},
			mlu(0), mlu(1),
			{ID: "MX-0", Index: 0, Vendor: "Metax-SGPU", Model: "Metax-SGPU", Count: 16, MemoryMiB: 65536, Cores: 100, NUMA: 1, Healthy: true},
			nv("GPU-a", 0, 0, false), nv("GPU-b", 1, 1, true), mig,
		},
		PairScores: []gpu.PairScore{{From: "GPU-a", To: "GPU-b", Score: 200}, {From: "GPU-b", To: "GPU-a", Score: 200}},
		Handshakes: []gpu.Handshake{
			{Type: "DCU", Value: "Reported 2026-06-14 10:00:00", AllocatableZero: true},
			{Type: "NVIDIA", Value: "Requesting_2026-06-14 10:00:00", Requesting: true, Since: time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC), AllocatableZero: true},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("node (-want +got):\n%s", diff)
	}
	// The cordon list names DCU-0 too, but HAMi applies it to NVIDIA only.
	// After HAMi's 60 s handshake timeout the NVIDIA devices go.
	fresh := gpu.DropStaleVendors(got, time.Date(2026, 6, 14, 10, 0, 59, 0, time.UTC))
	if len(fresh.Devices) != len(got.Devices) {
		t.Fatalf("devices dropped before the handshake timed out: %d of %d left", len(fresh.Devices), len(got.Devices))
	}
	stale := gpu.DropStaleVendors(got, time.Date(2026, 6, 14, 10, 1, 0, 0, time.UTC))
	for _, d := range stale.Devices {
		if d.Vendor == "NVIDIA" {
			t.Fatalf("NVIDIA device %s kept after the handshake timed out", d.ID)
		}
	}
	if len(stale.Devices) != len(got.Devices)-3 {
		t.Fatalf("%d devices left, want %d", len(stale.Devices), len(got.Devices)-3)
	}
}

// TestDecodeNodeUnreadableVendors: a vendor whose register (or, for
// NVIDIA, link scores) HAMi's reader fails on is listed as unreadable with
// each problem, its devices left out, and the node's other vendors read.
// Keys HAMi does not know (Metax's "color") are ignored, as encoding/json
// ignores them, and an unparsable handshake time is no problem.
func TestDecodeNodeUnreadableVendors(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{
		"hami.io/node-nvidia-register":    `[{"id":"GPU-a","count":10,"devmem":1000,"devcore":100,"health":true}]`,
		"hami.io/node-dcu-register":       "DCU-0,4,x,100,DCU,0,true:DCU-1,4:",
		"hami.io/node-amd-register":       `[{"id":"A,0","count":1,"health":true},{"id":"A1","index":-1}]`,
		"metax-tech.com/node-gpu-devices": `[{"uuid":"M","totalDevCount":4,"totalVRam":1024,"totalCompute":100,"healthy":true,"color":"red"}]`,
		"hami.io/node-nvidia-score":       `{}`,
		"hami.io/node-handshake":          "Requesting_yesterday",
	}}}
	got, err := gpu.DecodeNode(n, gpu.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, u := range got.Unreadable {
		types = append(types, u.Type+" "+u.Annotation)
		if u.Reason.Code != gpu.ReasonVendorUnreadable || !strings.Contains(u.Reason.Message, u.Type) {
			t.Errorf("%s: reason %v", u.Type, u.Reason)
		}
	}
	wantTypes := []string{"AMD hami.io/node-amd-register", "DCU hami.io/node-dcu-register", "NVIDIA hami.io/node-nvidia-score"}
	if diff := cmp.Diff(wantTypes, types); diff != "" {
		t.Errorf("unreadable vendors (-want +got):\n%s", diff)
	}
	want := []string{
		"metadata.annotations[hami.io/node-amd-register][1].index",
		"node.devices[0].id",
		"metadata.annotations[hami.io/node-dcu-register][0].devmem",
		"metadata.annotations[hami.io/node-dcu-register][1]",
		"metadata.annotations[hami.io/node-nvidia-score]",
	}
	if diff := cmp.Diff(want, unreadableFields(got)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	var ids []string
	for _, d := range got.Devices {
		ids = append(ids, d.ID)
	}
	if diff := cmp.Diff([]string{"M"}, ids); diff != "" {
		t.Errorf("devices read (-want +got):\n%s", diff)
	}
	if len(got.Handshakes) != 1 || got.Handshakes[0].Requesting {
		t.Errorf("handshakes %+v, want one not Requesting", got.Handshakes)
	}
	if _, err := gpu.DecodeNode(nil, gpu.DefaultRegistry()); !errors.Is(err, gpu.ErrInvalidDevice) {
		t.Fatalf("nil node: err = %v", err)
	}
}

// unreadableFields lists the paths of every problem of n's unreadable
// vendors, in order.
func unreadableFields(n gpu.Node) []string {
	var out []string
	for _, u := range n.Unreadable {
		for _, e := range u.Problems {
			out = append(out, e.Field)
		}
	}
	return out
}

// TestNodeRoundTrip: devices encoded as HAMi's plugins register them decode
// to the same devices. A field EncodeNode drops or DecodeNode misreads (say,
// the legacy encoding's index) makes it fail.
func TestNodeRoundTrip(t *testing.T) {
	reg := gpu.DefaultRegistry()
	rapid.Check(t, func(t *rapid.T) {
		vendors := []string{"NVIDIA", "DCU", "Metax-SGPU", "AMD", "BI-V150", "XPU"}
		var devs []gpu.Device
		for i := range rapid.IntRange(0, 8).Draw(t, "n") {
			v := rapid.SampledFrom(vendors).Draw(t, "vendor")
			d := gpu.Device{
				ID: rapid.StringMatching(`[A-Za-z0-9-]{1,12}`).Draw(t, "id") + "-" + string(rune('a'+i)), Vendor: v,
				Model:     rapid.StringMatching(`[A-Za-z0-9 -]{1,10}`).Draw(t, "model"),
				Count:     rapid.Int32Range(0, 100).Draw(t, "count"),
				MemoryMiB: rapid.Int32Range(0, 1<<20).Draw(t, "mem"), Cores: rapid.Int32Range(0, 100).Draw(t, "cores"),
				NUMA: rapid.IntRange(0, 3).Draw(t, "numa"), Healthy: rapid.Bool().Draw(t, "healthy"),
			}
			switch v {
			case "Metax-SGPU":
				// Metax's register carries no index or mode (the position is the
				// index), and HAMi types its devices by the vendor, not the model.
				d.Index, d.Model = 0, "Metax-SGPU"
			case "DCU", "BI-V150":
				d.Index, d.Mode = rapid.IntRange(0, 16).Draw(t, "index"), rapid.SampledFrom([]string{"hami-core", "mps"}).Draw(t, "mode")
			default:
				d.Index, d.Mode = rapid.IntRange(0, 16).Draw(t, "index"), rapid.SampledFrom([]string{"", "hami-core", "mig"}).Draw(t, "mode")
				d.Cordoned = v == "NVIDIA" && rapid.Bool().Draw(t, "cordoned")
			}
			devs = append(devs, d)
		}
		// Decoding groups devices by vendor in registry order; a Metax
		// device's index is its position among Metax devices.
		var want []gpu.Device
		for _, typ := range reg.Types() {
			k := 0
			for _, d := range devs {
				if d.Vendor == typ.Type {
					if typ.Type == "Metax-SGPU" {
						d.Index = k
					}
					k++
					want = append(want, d)
				}
			}
		}
		annos, err := gpu.EncodeNode(gpu.Node{Name: "n", Devices: devs}, reg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: annos}}, reg)
		if err != nil {
			t.Fatalf("%v\n%v", err, annos)
		}
		if diff := cmp.Diff(want, got.Devices); diff != "" {
			t.Fatalf("devices (-want +got):\n%s\n%v", diff, annos)
		}
	})
}

// nvPod is a pod with one init and two app containers.
func nvPod(annos map[string]string) *corev1.Pod {
	p := podWith([]corev1.Container{ctr("init", nil)}, []corev1.Container{ctr("a", nil), ctr("b", nil)})
	p.Annotations = annos
	return p
}

func TestDecodePodUsage(t *testing.T) {
	reg := gpu.DefaultRegistry()
	pod := nvPod(map[string]string{
		"hami.io/vgpu-node": "n1",
		// init: 6000 on GPU-a; app a: 2000 on GPU-a, 1000 on GPU-m; app b: 3000 on GPU-a.
		"hami.io/vgpu-devices-allocated": "GPU-a,NVIDIA,6000,10:;GPU-a,NVIDIA,2000,20:GPU-m,NVIDIA,4864,14:;GPU-a,NVIDIA,3000,30:;",
		"hami.io/vgpu-mig-allocations":   `[{"containerIndex":1,"deviceIndex":1,"gpuUUID":"GPU-m","profile":"1g.5gb","placement":{"start":1,"size":1}}]`,
		"hami.io/dcu-devices-allocated":  ";DCU-1,DCU,100,50:;;",
	})
	got, err := gpu.DecodePodUsage(pod, reg)
	if err != nil {
		t.Fatal(err)
	}
	want := gpu.PodUsage{
		Node: "n1",
		Allocations: []gpu.Allocation{
			{UUID: "DCU-1", Type: "DCU", MemoryMiB: 100, Cores: 50, Slots: 1},
			// GPU-a: init peak 6000/10, app sum 5000/50 over two slots.
			{UUID: "GPU-a", Type: "NVIDIA", MemoryMiB: 6000, Cores: 50, Slots: 2},
			{UUID: "GPU-m", Type: "NVIDIA", MemoryMiB: 4864, Cores: 14, Slots: 1},
		},
		MIG: []gpu.Allocation{{UUID: "GPU-m", Type: "NVIDIA", MemoryMiB: 4864, Cores: 14, MIGProfile: "1g.5gb", MIGPlacement: gpu.MIGPlacement{Start: 1, Size: 1}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("usage (-want +got):\n%s", diff)
	}
	node, err := gpu.DecodeNode(hamiNode(), reg)
	if err != nil {
		t.Fatal(err)
	}
	devs, err := gpu.AddPodUsage(node.Devices, got)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		switch d.ID {
		case "GPU-a":
			if d.Used != 2 || d.UsedMemoryMiB != 6000 || d.UsedCores != 50 {
				t.Errorf("GPU-a usage %d/%d/%d, want 2/6000/50", d.Used, d.UsedMemoryMiB, d.UsedCores)
			}
		case "GPU-m":
			if !cmp.Equal(d.MIGInUse, []gpu.MIGPlacement{{Start: 1, Size: 1}}) || !d.Healthy {
				t.Errorf("GPU-m MIG in use %v healthy %v", d.MIGInUse, d.Healthy)
			}
		}
	}
	for name, p := range map[string]*corev1.Pod{
		"unassigned": nvPod(map[string]string{"hami.io/vgpu-devices-allocated": "GPU-a,NVIDIA,1,1:;"}),
		"finished": func() *corev1.Pod {
			p := nvPod(map[string]string{"hami.io/vgpu-node": "n1", "hami.io/vgpu-devices-allocated": "GPU-a,NVIDIA,1,1:;"})
			p.Status.Phase = corev1.PodSucceeded
			return p
		}(),
	} {
		u, err := gpu.DecodePodUsage(p, reg)
		if err != nil || len(u.Allocations) != 0 {
			t.Errorf("%s pod holds %v (err %v), want nothing", name, u.Allocations, err)
		}
	}
}

func TestDecodePodUsageNamesEveryProblem(t *testing.T) {
	pod := nvPod(map[string]string{
		"hami.io/vgpu-node":              "n1",
		"hami.io/vgpu-devices-allocated": "GPU-a,NVIDIA,x,10:;GPU-b,AMD,1,1:;",
		"hami.io/vgpu-mig-allocations":   `[{"containerIndex":5,"deviceIndex":0,"gpuUUID":"GPU-z","profile":"1g","placement":{"start":0,"size":1}},{"containerIndex":0}]`,
		"hami.io/amd-devices-allocated":  "A,AMD,1:",
	})
	_, err := gpu.DecodePodUsage(pod, gpu.DefaultRegistry())
	if !errors.Is(err, gpu.ErrInvalidAllocation) {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		"metadata.annotations[hami.io/amd-devices-allocated].containers[0].devices[0]",
		"metadata.annotations[hami.io/vgpu-devices-allocated].containers[0].devices[0].memoryMiB",
		"metadata.annotations[hami.io/vgpu-mig-allocations][1]",
	}
	if diff := cmp.Diff(want, invalidFields(err)); diff != "" {
		t.Fatalf("fields (-want +got):\n%s", diff)
	}
}

func TestFilterAnnotations(t *testing.T) {
	reg := gpu.DefaultRegistry()
	node, err := gpu.DecodeNode(hamiNode(), reg)
	if err != nil {
		t.Fatal(err)
	}
	pod := nvPod(nil)
	now := time.Unix(1781431200, 0)
	choice := gpu.FilterChoice{Pod: pod, Node: node, Now: now, Registry: reg, Containers: []gpu.ContainerAllocation{
		{Container: "init", Init: true, Devices: []gpu.Allocation{{UUID: "GPU-a", Type: "NVIDIA", MemoryMiB: 6000, Cores: 10}}},
		{Container: "b", Devices: []gpu.Allocation{
			{UUID: "GPU-m", Type: "NVIDIA", MemoryMiB: 4864, Cores: 14, MIGProfile: "1g.5gb", MIGPlacement: gpu.MIGPlacement{Start: 1, Size: 1}},
			{UUID: "n1-cambricon-mlu-1", Type: "MLU", MemoryMiB: 512, Cores: 20},
		}},
	}}
	got, err := gpu.FilterAnnotations(choice)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"hami.io/vgpu-node": "n1",
		"hami.io/vgpu-time": "1781431200",
		// NVIDIA devices register models "NVIDIA-...": entries only for the
		// containers holding one.
		"hami.io/vgpu-devices-to-allocate": "GPU-a,NVIDIA,6000,10:;GPU-m,NVIDIA,4864,14:;",
		"hami.io/vgpu-devices-allocated":   "GPU-a,NVIDIA,6000,10:;GPU-m,NVIDIA,4864,14:;",
		"hami.io/vgpu-mig-allocations":     `[{"containerIndex":1,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"1g.5gb","placement":{"start":1,"size":1}}]`,
		// MLU devices register the model "MLU": one entry per container.
		"hami.io/cambricon-mlu-devices-to-allocate": ";;n1-cambricon-mlu-1,MLU,512,20:;",
		"hami.io/cambricon-mlu-devices-allocated":   ";;n1-cambricon-mlu-1,MLU,512,20:;",
		"CAMBRICON_DSMLU_ASSIGNED":                  "false",
		"CAMBRICON_DSMLU_PROFILE":                   "1_20_2",
		// HAMi types Metax sGPUs "Metax-SGPU": the node's Metax sGPU gets
		// its (empty) entries and Metax's own JSON although the pod asks none.
		"hami.io/metax-sgpu-devices-to-allocate": ";;;",
		"hami.io/metax-sgpu-devices-allocated":   ";;;",
		"metax-tech.com/gpu-devices-allocated":   "[[],[],[]]",
		"metax-tech.com/predicate-time":          "1781431200000000000",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("annotations (-want +got):\n%s", diff)
	}
	// What Filter wrote is what the pod then holds.
	pod.Annotations = got
	u, err := gpu.DecodePodUsage(pod, reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.MIG) != 1 || u.MIG[0].MIGPlacement != (gpu.MIGPlacement{Start: 1, Size: 1}) || u.Node != "n1" || len(u.Allocations) != 3 {
		t.Fatalf("usage after Filter = %+v", u)
	}

	bad := choice
	bad.Now, bad.Node.Name = time.Time{}, ""
	bad.Containers = append(bad.Containers, gpu.ContainerAllocation{Container: "ghost", Devices: []gpu.Allocation{{UUID: "GPU-x", Type: "NVIDIA"}}})
	_, err = gpu.FilterAnnotations(bad)
	if !errors.Is(err, gpu.ErrInvalidInput) {
		t.Fatalf("err = %v", err)
	}
	if diff := cmp.Diff([]string{"now", "node.name", "containers[2].container", "containers[2].devices[0].uuid"}, invalidFields(err)); diff != "" {
		t.Fatalf("fields (-want +got):\n%s", diff)
	}
}

func FuzzDecodeNode(f *testing.F) {
	f.Add(nvidiaRegister, dcuRegister, metaxRegister, pairScores, "GPU-a", "Requesting_2026-06-14 10:00:00")
	f.Add(`[]`, "DCU-0,1,2,3,t,0,true:", `[]`, `[]`, "", "")
	f.Add(`[{"id":"x","migProfiles":[{"name":"p","placements":[{"start":0,"size":0}]}]}]`, ":", "[{}]", `[{"uuid":"a","score":{"b":1}}]`, ",,", "Requesting_")
	// HAMi v2.9's register (devicepairscore, migtemplate), a newer plugin's
	// MIG profile keys, and the handshakes CheckHealth keeps.
	f.Add(`[{"id":"GPU-a","count":10,"devmem":32768,"devcore":100,"type":"NVIDIA-Tesla V100-PCIE-32GB","health":true,"mode":"mig","migtemplate":[[{"name":"1g.5gb","memory":5120,"count":7}]],"devicepairscore":{}}]`,
		"DCU-0,4,16384,100,DCU-Z100,0,true:", `[{"uuid":"m","healthy":true,"qosPolicy":"x","future":1}]`, `[{"uuid":"GPU-a","score":{"GPU-b":-1},"extra":true}]`, "", "Requesting_2024.01.10 04:06:57")
	f.Add(`[{"id":"GPU-m","count":7,"devmem":40960,"devcore":100,"health":true,"mode":"mig","migProfiles":[{"name":"1g.5gb","memoryMB":4864,"core":14,"sliceCount":1,"instanceCount":7,"multiprocessorCount":14,"placements":[{"start":6,"size":1}]}]}]`,
		"", "", "", "", "Requesting")
	f.Fuzz(func(t *testing.T, nv, dcu, metax, scores, cordon, hs string) {
		checkDecodeNode(t, map[string]string{
			"hami.io/node-nvidia-register": nv, "hami.io/node-dcu-register": dcu, "metax-tech.com/node-gpu-devices": metax,
			"hami.io/node-nvidia-score": scores, "hami.io/device-cordon": cordon, "hami.io/node-handshake": hs,
		})
	})
}

// FuzzDecodeGroupedRegisters fuzzes the registers whose custominfo names a
// device's group: an Ascend 910 chip's NetworkID and Vastai's dies.
func FuzzDecodeGroupedRegisters(f *testing.F) {
	f.Add(`[{"id":"npu-0","count":1,"devmem":1,"type":"Ascend910B3","health":true,"custominfo":{"NetworkID":3}},{"id":"npu-1","health":true,"custominfo":{"NetworkID":"x"}}]`,
		`[{"id":"va-0","count":1,"health":true,"custominfo":{"DeviceStrategy":"die","AIC":"c1"}}]`)
	f.Add(`[{"id":"npu-0","custominfo":{"NetworkID":1e400}},{"id":"npu-1","custominfo":{"NetworkID":[1, {"a": null}]}},{"id":"npu-2","custominfo":null}]`,
		`[{"id":"va-0","custominfo":{"DeviceStrategy":"die","AIC":"a,b"}}]`)
	f.Add(`[{"id":"npu-0","custominfo":[1]}]`, `[{"id":"va-0","custominfo":"die"}]`)
	f.Fuzz(func(t *testing.T, ascend, vastai string) {
		checkDecodeNode(t, map[string]string{"hami.io/node-register-Ascend910B3": ascend, "hami.io/node-va-register": vastai})
	})
}

// checkDecodeNode decodes a node carrying annos with the default registry
// and checks what every decoded node must satisfy.
func checkDecodeNode(t *testing.T, annos map[string]string) {
	t.Helper()
	reg := gpu.DefaultRegistry()
	got, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: annos}}, reg)
	if err != nil {
		t.Fatalf("DecodeNode refused a node: %v", err)
	}
	// An unreadable vendor names its problems and offers no device.
	for _, u := range got.Unreadable {
		if len(u.Problems) == 0 || u.Reason.Code != gpu.ReasonVendorUnreadable {
			t.Fatalf("unreadable %s without a named problem: %+v", u.Type, u)
		}
		for _, d := range got.Devices {
			if d.Vendor == u.Type {
				t.Fatalf("device %s of unreadable vendor %s offered", d.ID, u.Type)
			}
		}
	}
	// A decoded node is valid fit input, and re-encodes to the same devices.
	if _, err := fitOne(got, gpu.FitRequest{}); err != nil {
		t.Fatalf("decoded node refused by the fit: %v", err)
	}
	encoded, err := gpu.EncodeNode(got, reg)
	if err != nil {
		t.Fatal(err)
	}
	again, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: encoded}}, reg)
	if err != nil {
		t.Fatalf("re-decode: %v", err)
	}
	if diff := cmp.Diff(got.Devices, again.Devices, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("round trip (-first +second):\n%s", diff)
	}
}

func FuzzDecodePodUsage(f *testing.F) {
	f.Add("n1", "GPU-a,NVIDIA,6000,10:;GPU-a,NVIDIA,2000,20:GPU-m,NVIDIA,4864,14:;;", `[{"containerIndex":1,"deviceIndex":1,"gpuUUID":"GPU-m","profile":"1g.5gb","placement":{"start":1,"size":1}}]`, ";DCU-1,DCU,100,50:;;")
	f.Add("", ";;;", "[]", "")
	f.Add("n", "a,b,c,d:e,f;", `[{"containerIndex":-1}]`, "x,DCU,-1,0:")
	// A reservation the devices annotation does not list, with a key HAMi
	// does not know, and an item with a field after the fourth.
	f.Add("n1", ";GPU-m,NVIDIA,4864,14,x:;", `[{"containerIndex":2,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"3g.20gb","placement":{"start":0,"size":4},"state":1}]`, "")
	reg := gpu.DefaultRegistry()
	f.Fuzz(func(t *testing.T, node, nv, mig, dcu string) {
		pod := nvPod(map[string]string{"hami.io/vgpu-node": node, "hami.io/vgpu-devices-allocated": nv,
			"hami.io/vgpu-mig-allocations": mig, "hami.io/dcu-devices-allocated": dcu})
		u, err := gpu.DecodePodUsage(pod, reg)
		if err != nil {
			if !errors.Is(err, gpu.ErrInvalidAllocation) || len(invalidFields(err)) == 0 {
				t.Fatalf("error without a named field: %v", err)
			}
			return
		}
		for _, a := range u.Allocations {
			if a.MemoryMiB < 0 || a.Cores < 0 || a.Slots < 1 || strings.ContainsAny(a.UUID, ",:;") {
				t.Fatalf("impossible allocation %+v", a)
			}
		}
	})
}

// TestDecodeNodeFromCapacity derives whole-card devices from the node's
// capacity as HAMi's GetNodeDevices of those vendors do.
func TestDecodeNodeFromCapacity(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
		"kunlunxin.com/xpu":        resource.MustParse("4"),
		"mthreads.com/sgpu-core":   resource.MustParse("32"),
		"mthreads.com/sgpu-memory": resource.MustParse("192"),
		"metax-tech.com/gpu":       resource.MustParse("1"),
		"enflame.com/gcu":          resource.MustParse("1"),
	}}}
	got, err := gpu.DecodeNode(n, gpu.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, d := range got.Devices {
		lines = append(lines, fmt.Sprintf("%s %s slots=%d mem=%d cores=%d numa=%d", d.ID, d.Vendor, d.Count, d.MemoryMiB, d.Cores, d.NUMA))
	}
	want := []string{
		"w-GCU-0 GCU slots=1 mem=100 cores=100 numa=0",
		"w-metax-0 Metax-GPU slots=1 mem=65536 cores=100 numa=0",
		// 192 units of 512 MiB over 32 cores, 16 cores a card.
		"w-mthreads-0 Mthreads slots=100 mem=49152 cores=16 numa=0",
		"w-mthreads-1 Mthreads slots=100 mem=49152 cores=16 numa=0",
		// The second half of Kunlun's cards sit on NUMA node 1.
		"w-kunlun-0 kunlun slots=100 mem=98304 cores=100 numa=0",
		"w-kunlun-1 kunlun slots=100 mem=98304 cores=100 numa=0",
		"w-kunlun-2 kunlun slots=100 mem=98304 cores=100 numa=1",
		"w-kunlun-3 kunlun slots=100 mem=98304 cores=100 numa=1",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Fatalf("devices (-want +got):\n%s", diff)
	}
}

// TestHandshakeAsCheckHealth: each handshake form HAMi's CheckHealth tests
// and its protocol document show keeps or drops the vendor's devices as
// CheckHealth does (healthy keeps them): only a readable Requesting time
// 60 s old or more, with none of the type allocatable, drops them.
func TestHandshakeAsCheckHealth(t *testing.T) {
	now := time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		value       string
		allocatable string
		healthy     bool
	}{
		{"Requesting_2128-12-02 00:00:00", "", true}, // in the future
		{"Requesting", "", true},                     // no time
		{"Requesting_not-a-timestamp", "", true},     // unparsable time
		{"Requesting_2024.01.10 04:06:57", "", true}, // the protocol document's form
		{"Unknown", "", true},                        // not Requesting
		{"Reported 2024-01-23 04:30:04.434037031 +0000 UTC m=+1104711.777756895", "", true},
		{"Requesting_2024-01-02 00:00:00", "", false}, // expired, nothing allocatable
		{"Requesting_2024-01-02 00:00:00", "8", true}, // expired, the plugin still serves
		{"Requesting_2026-06-14 09:59:01", "", true},  // 59 s
		{"Requesting_2026-06-14 09:59:00", "", false}, // 60 s
	} {
		t.Run(tc.value+"/"+tc.allocatable, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
				"hami.io/node-nvidia-register": `[{"id":"GPU-a","count":10,"devmem":1000,"devcore":100,"health":true}]`,
				"hami.io/node-handshake":       tc.value,
			}}}
			if tc.allocatable != "" {
				n.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(tc.allocatable)}
			}
			got, err := gpu.DecodeNode(n, gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			if healthy := len(gpu.DropStaleVendors(got, now).Devices) == 1; healthy != tc.healthy {
				t.Errorf("healthy = %v, want %v (HAMi's CheckHealth); handshakes %+v", healthy, tc.healthy, got.Handshakes)
			}
		})
	}
}

// TestDecodeNodeReadsAsHAMi: register and link-score forms HAMi's own
// readers (UnMarshalNodeDevices, DecodeNodeDevices, DecodePairScores)
// accept are read, with their values from HAMi's tests, and the forms they
// refuse make that vendor, and only it, unreadable.
func TestDecodeNodeReadsAsHAMi(t *testing.T) {
	const p4 = "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4"
	for _, tc := range []struct {
		name, key, value string
		ids              []string // the vendor's devices read; nil when unreadable
	}{
		{"JSON with a trailing newline", "hami.io/node-nvidia-register", `[{"index":1,"id":"id-1","count":1,"devmem":1024,"devcore":10,"type":"type","health":true}]` + "\n", []string{"id-1"}},
		{"HAMi v2.9 keys devicepairscore and migtemplate", "hami.io/node-nvidia-register",
			`[{"id":"id-1","count":1,"devmem":1024,"devcore":10,"type":"type","health":true,"mode":"mig","migtemplate":[[{"name":"1g.5gb","memory":5120,"count":7}]],"devicepairscore":{"uuid":"id-1","score":{"id-2":100}}},` +
				`{"index":2,"id":"id-2","count":2,"devmem":4096,"devcore":20,"type":"type2","health":false,"devicepairscore":{}}]`, []string{"id-1", "id-2"}},
		{"a MIG profile's instanceCount and multiprocessorCount", "hami.io/node-nvidia-register",
			`[{"id":"GPU-m","count":7,"devmem":40960,"devcore":100,"health":true,"mode":"mig","migProfiles":[{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,"instanceCount":7,"multiprocessorCount":14,"placements":[{"start":6,"size":1}]}]}]`,
			[]string{"GPU-m"}},
		{"a key a newer plugin adds", "hami.io/node-nvidia-register", `[{"id":"id-1","count":1,"health":true,"topology":{"nvlink":[1]}}]`, []string{"id-1"}},
		{"JSON of the wrong type", "hami.io/node-nvidia-register", `[{"id":"id-1","count":"one"}]`, nil},
		{"a negative JSON index (HAMi's is unsigned)", "hami.io/node-nvidia-register", `[{"id":"id-1","index":-1}]`, nil},
		{"legacy, seven fields", "hami.io/node-dcu-register", p4 + ",10,7680,100,NVIDIA-Tesla P4,0,true:", []string{p4}},
		{"legacy, nine fields", "hami.io/node-dcu-register", p4 + ",10,7680,100,NVIDIA-Tesla P4,0,true,1,hami-core:", []string{p4}},
		{"legacy, only separators", "hami.io/node-dcu-register", "::", []string{}},
		{"legacy, no separator", "hami.io/node-dcu-register", "a", nil},
		{"legacy, two fields", "hami.io/node-dcu-register", ",:", nil},
		{"legacy, garbage", "hami.io/node-dcu-register", "garbage:", nil},
		{"legacy, count not a number", "hami.io/node-dcu-register", p4 + ",notanint,7680,100,NVIDIA-Tesla P4,0,true:", nil},
		{"legacy, health not a bool", "hami.io/node-dcu-register", p4 + ",10,7680,100,NVIDIA-Tesla P4,0,notabool:", nil},
		{"legacy, negative index", "hami.io/node-dcu-register", p4 + ",10,7680,100,NVIDIA-Tesla P4,0,true,-1,hami-core:", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			annos := map[string]string{tc.key: tc.value,
				// Another vendor, which stays readable whatever this one is.
				"hami.io/node-amd-register": `[{"id":"AMD-0","count":1,"devmem":1000,"devcore":100,"health":true}]`}
			got, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: annos}}, gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			amd := false
			for _, d := range got.Devices {
				if d.Vendor == "AMD" {
					amd = true
				} else {
					ids = append(ids, d.ID)
				}
			}
			if !amd {
				t.Errorf("the other vendor's device was dropped: %+v", got)
			}
			if tc.ids == nil {
				if len(ids) != 0 || len(got.Unreadable) != 1 || got.Unreadable[0].Annotation != tc.key {
					t.Errorf("devices %v, unreadable %+v; want the vendor of %s unreadable", ids, got.Unreadable, tc.key)
				}
				return
			}
			if diff := cmp.Diff(tc.ids, ids); diff != "" || len(got.Unreadable) != 0 {
				t.Errorf("devices (-want +got):\n%s\nunreadable %+v", diff, got.Unreadable)
			}
		})
	}
	// Link scores with a key HAMi does not know are read; link scores HAMi
	// cannot read leave NVIDIA out, as HAMi's NVIDIA GetNodeDevices fails.
	nv := `[{"id":"GPU-a","count":1,"health":true},{"id":"GPU-b","index":1,"count":1,"health":true}]`
	for _, tc := range []struct {
		scores string
		want   []gpu.PairScore
		nvidia bool
	}{
		{`[{"uuid":"GPU-a","score":{"GPU-b":-5},"links":"nvlink"}]`, []gpu.PairScore{{From: "GPU-a", To: "GPU-b", Score: -5}}, true},
		{`[{"uuid":"GPU-a","score":{"GPU-b":"high"}}]`, nil, false},
	} {
		got, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
			"hami.io/node-nvidia-register": nv, "hami.io/node-nvidia-score": tc.scores}}}, gpu.DefaultRegistry())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got.PairScores); diff != "" || (len(got.Devices) == 2) != tc.nvidia || (len(got.Unreadable) == 0) != tc.nvidia {
			t.Errorf("%s: scores (-want +got):\n%s\ndevices %d, unreadable %+v", tc.scores, diff, len(got.Devices), got.Unreadable)
		}
	}
}

// TestDecodeAllocationsExtraFields: an item with fields after the fourth is
// read, the extra ones ignored, as HAMi's DecodeContainerDevices reads it;
// one with fewer is refused, as HAMi refuses it.
func TestDecodeAllocationsExtraFields(t *testing.T) {
	got, err := gpu.DecodeAllocations("GPU-a,NVIDIA,3000,0,future:;GPU-a,NVIDIA,5000,0:;")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]gpu.Allocation{{{UUID: "GPU-a", Type: "NVIDIA", MemoryMiB: 3000}}, {{UUID: "GPU-a", Type: "NVIDIA", MemoryMiB: 5000}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := gpu.DecodeAllocations("GPU-a,NVIDIA,3000:"); !errors.Is(err, gpu.ErrInvalidAllocation) {
		t.Errorf("three fields: err = %v", err)
	}
}
