package gpu_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
)

var filterNow = time.Unix(1781431200, 5)

const filterNowNano = "1781431200000000005"

// capacityNode is a node whose devices come from its capacity.
func capacityNode(name string, kv ...string) gpu.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Capacity: corev1.ResourceList{}}}
	for i := 0; i < len(kv); i += 2 {
		n.Status.Capacity[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	out, err := gpu.DecodeNode(n, gpu.DefaultRegistry())
	if err != nil {
		panic(err)
	}
	return out
}

// filterCase is one vendor's Filter choice and the annotations HAMi's
// PatchAnnotations writes for it (besides vgpu-node and vgpu-time).
type filterCase struct {
	name       string
	node       gpu.Node
	pod        *corev1.Pod
	containers []gpu.ContainerAllocation
	want       map[string]string
}

func runFilterCases(t *testing.T, cases []filterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gpu.FilterAnnotations(gpu.FilterChoice{Pod: tc.pod, Node: tc.node, Containers: tc.containers, Now: filterNow, Registry: gpu.DefaultRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"hami.io/vgpu-node": tc.node.Name, "hami.io/vgpu-time": "1781431200"}
			for k, v := range tc.want {
				want[k] = v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}

// twoApps is a pod of two app containers, a and b, with the given limits.
func twoApps(a, b corev1.ResourceList) *corev1.Pod {
	return podWith(nil, []corev1.Container{ctr("a", a), ctr("b", b)})
}

// TestFilterAnnotationsMthreads restates HAMi's Mthreads PatchAnnotations:
// only the devices-allocated annotation (never the to-allocate one it
// registers), one entry per container, and the indices of the last
// container holding devices with the predicate time and node.
func TestFilterAnnotationsMthreads(t *testing.T) {
	node := capacityNode("mt", "mthreads.com/sgpu-core", "48", "mthreads.com/sgpu-memory", "288")
	runFilterCases(t, []filterCase{
		{name: "two containers", node: node, pod: twoApps(nil, nil), containers: []gpu.ContainerAllocation{
			{Container: "a", Devices: []gpu.Allocation{{UUID: "mt-mthreads-1", Type: "Mthreads", MemoryMiB: 1024, Cores: 4}}},
			{Container: "b", Devices: []gpu.Allocation{{UUID: "mt-mthreads-0", Type: "Mthreads", MemoryMiB: 512, Cores: 2}, {UUID: "mt-mthreads-2", Type: "Mthreads", MemoryMiB: 512, Cores: 2}}},
		}, want: map[string]string{
			"hami.io/mthreads-vgpu-devices-allocated": "mt-mthreads-1,Mthreads,1024,4:;mt-mthreads-0,Mthreads,512,2:mt-mthreads-2,Mthreads,512,2:;",
			"mthreads.com/gpu-index":                  "0,2",
			"mthreads.com/predicate-time":             filterNowNano,
			"mthreads.com/predicate-node":             "mt",
		}},
		{name: "the last container without devices keeps the earlier indices", node: node, pod: twoApps(nil, nil), containers: []gpu.ContainerAllocation{
			{Container: "a", Devices: []gpu.Allocation{{UUID: "mt-mthreads-1", Type: "Mthreads", MemoryMiB: 1024, Cores: 4}}},
		}, want: map[string]string{
			"hami.io/mthreads-vgpu-devices-allocated": "mt-mthreads-1,Mthreads,1024,4:;;",
			"mthreads.com/gpu-index":                  "1",
			"mthreads.com/predicate-time":             filterNowNano,
			"mthreads.com/predicate-node":             "mt",
		}},
		{name: "a pod asking none gets the empty entries only", node: node, pod: twoApps(nil, nil), want: map[string]string{
			"hami.io/mthreads-vgpu-devices-allocated": ";;",
		}},
	})
}

// TestFilterAnnotationsKunlun restates HAMi's Kunlun PatchAnnotations:
// hami.io/kunlun-allocated and BAIDU_COM_DEVICE_IDX, the indices of the
// last container holding XPUs.
func TestFilterAnnotationsKunlun(t *testing.T) {
	node := capacityNode("kl", "kunlunxin.com/xpu", "8")
	whole := func(ids ...string) []gpu.Allocation {
		var out []gpu.Allocation
		for _, id := range ids {
			out = append(out, gpu.Allocation{UUID: id, Type: "kunlun", MemoryMiB: 98304})
		}
		return out
	}
	runFilterCases(t, []filterCase{
		{name: "two containers", node: node, pod: twoApps(nil, nil), containers: []gpu.ContainerAllocation{
			{Container: "a", Devices: whole("kl-kunlun-4", "kl-kunlun-5")},
			{Container: "b", Devices: whole("kl-kunlun-0")},
		}, want: map[string]string{
			"hami.io/kunlun-allocated": "kl-kunlun-4,kunlun,98304,0:kl-kunlun-5,kunlun,98304,0:;kl-kunlun-0,kunlun,98304,0:;",
			"BAIDU_COM_DEVICE_IDX":     "0",
		}},
		{name: "one container of four", node: node, pod: twoApps(nil, nil), containers: []gpu.ContainerAllocation{
			{Container: "a", Devices: whole("kl-kunlun-0", "kl-kunlun-1", "kl-kunlun-2", "kl-kunlun-3")},
		}, want: map[string]string{
			"hami.io/kunlun-allocated": "kl-kunlun-0,kunlun,98304,0:kl-kunlun-1,kunlun,98304,0:kl-kunlun-2,kunlun,98304,0:kl-kunlun-3,kunlun,98304,0:;;",
			"BAIDU_COM_DEVICE_IDX":     "0,1,2,3",
		}},
	})
}

// TestFilterAnnotationsMetax restates HAMi's Metax sGPU PatchAnnotations:
// the to-allocate and allocated pair, Metax's own JSON of the sGPUs per
// container (zero compute or memory left out) and its predicate time.
func TestFilterAnnotationsMetax(t *testing.T) {
	reg := gpu.DefaultRegistry()
	node, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mx", Annotations: map[string]string{
		"metax-tech.com/node-gpu-devices": `[{"uuid":"MX-0","model":"C500","totalDevCount":16,"totalCompute":100,"totalVRam":65536,"healthy":true},` +
			`{"uuid":"MX-1","model":"C500","totalDevCount":16,"totalCompute":100,"totalVRam":65536,"healthy":true}]`,
	}}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	runFilterCases(t, []filterCase{
		{name: "two containers", node: node, pod: twoApps(nil, nil), containers: []gpu.ContainerAllocation{
			{Container: "a", Devices: []gpu.Allocation{{UUID: "MX-1", Type: "Metax-SGPU", MemoryMiB: 16384, Cores: 100}}},
			{Container: "b", Devices: []gpu.Allocation{{UUID: "MX-0", Type: "Metax-SGPU", MemoryMiB: 4096}, {UUID: "MX-1", Type: "Metax-SGPU", MemoryMiB: 1024, Cores: 10}}},
		}, want: map[string]string{
			"hami.io/metax-sgpu-devices-to-allocate": "MX-1,Metax-SGPU,16384,100:;MX-0,Metax-SGPU,4096,0:MX-1,Metax-SGPU,1024,10:;",
			"hami.io/metax-sgpu-devices-allocated":   "MX-1,Metax-SGPU,16384,100:;MX-0,Metax-SGPU,4096,0:MX-1,Metax-SGPU,1024,10:;",
			"metax-tech.com/gpu-devices-allocated":   `[[{"uuid":"MX-1","compute":100,"vRam":16384}],[{"uuid":"MX-0","vRam":4096},{"uuid":"MX-1","compute":10,"vRam":1024}]]`,
			"metax-tech.com/predicate-time":          filterNowNano,
		}},
	})
}

// TestFilterAnnotationsAMD: HAMi v2.10's AMD PatchAnnotations writes the
// to-allocate and allocated pair only (no index annotation), entries typed
// by the product name.
func TestFilterAnnotationsAMD(t *testing.T) {
	reg := gpu.DefaultRegistry()
	node, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "amd", Annotations: map[string]string{
		"hami.io/node-amd-register": `[{"id":"AMD-0","count":4,"devmem":65536,"devcore":304,"type":"MI300X","health":true}]`,
	}}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	runFilterCases(t, []filterCase{
		{name: "one container", node: node, pod: twoApps(nil, nil), containers: []gpu.ContainerAllocation{
			{Container: "b", Devices: []gpu.Allocation{{UUID: "AMD-0", Type: "AMD", MemoryMiB: 8192, Cores: 152}}},
		}, want: map[string]string{
			"hami.io/amd-devices-to-allocate": "AMD-0,MI300X,8192,152:;",
			"hami.io/amd-devices-allocated":   "AMD-0,MI300X,8192,152:;",
		}},
	})
}

// neuronNode is a trn1 node of three Neuron devices of two cores.
func neuronNode() gpu.Node {
	return capacityNode("trn", "aws.amazon.com/neuron", "3", "aws.amazon.com/neuroncore", "6")
}

// TestFilterAnnotationsAWSNeuron restates HAMi's AWS Neuron
// PatchAnnotations and addCoreUsage: the allocated annotation's cores are a
// mask of the device's two NeuronCores; AWS_NEURON_IDS lists the devices of
// a device-count container and the cores of a core container (device index
// × 2 + core), with NEURON_RESOURCE_TYPE for cores.
func TestFilterAnnotationsAWSNeuron(t *testing.T) {
	node := neuronNode()
	busy := neuronNode()
	busy.Devices[1].CoresInUse, busy.Devices[1].UsedCores, busy.Devices[1].Used = 1, 1, 1
	busyHigh := neuronNode()
	busyHigh.Devices[1].CoresInUse, busyHigh.Devices[1].UsedCores, busyHigh.Devices[1].Used = 2, 1, 1
	core := func(id string, n int32) gpu.Allocation { return gpu.Allocation{UUID: id, Type: "AWSNeuron", Cores: n} }
	coreReq := rl("aws.amazon.com/neuroncore", "1")
	devReq := rl("aws.amazon.com/neuron", "2")
	allocated := "hami.io/aws-neuron-devices-allocated"
	runFilterCases(t, []filterCase{
		{name: "two one-core containers share device 1", node: node, pod: twoApps(coreReq, coreReq), containers: []gpu.ContainerAllocation{
			{Container: "a", Devices: []gpu.Allocation{core("trn-AWSNeuron-1", 1)}},
			{Container: "b", Devices: []gpu.Allocation{core("trn-AWSNeuron-1", 1)}},
		}, want: map[string]string{
			allocated:                       "trn-AWSNeuron-1,AWSNeuron,0,1:;trn-AWSNeuron-1,AWSNeuron,0,2:;",
			"AWS_NEURON_IDS":                "2,3",
			"NEURON_RESOURCE_TYPE":          "aws.amazon.com/neuroncore",
			"NEURON_ALLOC_TIME":             filterNowNano,
			"NEURON_ALLOCATED":              "false",
			"aws.amazon.com/predicate-node": "trn",
		}},
		{name: "core 0 held by another pod: core 1", node: busy, pod: twoApps(coreReq, nil), containers: []gpu.ContainerAllocation{
			{Container: "a", Devices: []gpu.Allocation{core("trn-AWSNeuron-1", 1)}},
		}, want: map[string]string{
			allocated: "trn-AWSNeuron-1,AWSNeuron,0,2:;;", "AWS_NEURON_IDS": "3", "NEURON_RESOURCE_TYPE": "aws.amazon.com/neuroncore",
			"NEURON_ALLOC_TIME": filterNowNano, "NEURON_ALLOCATED": "false", "aws.amazon.com/predicate-node": "trn",
		}},
		{name: "core 1 held by another pod: core 0", node: busyHigh, pod: twoApps(coreReq, nil), containers: []gpu.ContainerAllocation{
			{Container: "a", Devices: []gpu.Allocation{core("trn-AWSNeuron-1", 1)}},
		}, want: map[string]string{
			allocated: "trn-AWSNeuron-1,AWSNeuron,0,1:;;", "AWS_NEURON_IDS": "2", "NEURON_RESOURCE_TYPE": "aws.amazon.com/neuroncore",
			"NEURON_ALLOC_TIME": filterNowNano, "NEURON_ALLOCATED": "false", "aws.amazon.com/predicate-node": "trn",
		}},
		{name: "a device-count container lists devices", node: node, pod: twoApps(nil, devReq), containers: []gpu.ContainerAllocation{
			{Container: "b", Devices: []gpu.Allocation{core("trn-AWSNeuron-0", 2), core("trn-AWSNeuron-2", 2)}},
		}, want: map[string]string{
			allocated:        ";trn-AWSNeuron-0,AWSNeuron,0,3:trn-AWSNeuron-2,AWSNeuron,0,3:;",
			"AWS_NEURON_IDS": "0,2", "NEURON_ALLOC_TIME": filterNowNano, "NEURON_ALLOCATED": "false", "aws.amazon.com/predicate-node": "trn",
		}},
		{name: "a pod asking none", node: node, pod: twoApps(nil, nil), want: map[string]string{allocated: ";;"}},
	})
}

// TestNeuronCoresRoundTrip: what Filter writes for a Neuron pod is what
// the next pod's fit sees: the allocated masks decode to core counts and
// the cores held, so the next one-core pod gets the other core.
func TestNeuronCoresRoundTrip(t *testing.T) {
	reg := gpu.DefaultRegistry()
	node := neuronNode()
	node.Devices = node.Devices[:1]
	var ids []string
	for i := range 3 {
		pod := podWith(nil, []corev1.Container{ctr("c", rl("aws.amazon.com/neuroncore", "1"))})
		fr, err := gpu.FitRequestFromPod(pod, reg)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := gpu.Decide(gpu.Input{Nodes: []gpu.Node{node}, Request: fr}, gpu.HAMi())
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if plan.Node != "" || plan.Nodes[0].Message() != "1/1 CardTimeSlicingExhausted" {
				t.Fatalf("third pod on a two-core device: node %q, %s", plan.Node, plan.Nodes[0].Message())
			}
			break
		}
		annos, err := gpu.FilterAnnotations(gpu.FilterChoice{Pod: pod, Node: node, Containers: plan.Containers, Now: filterNow, Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, annos["AWS_NEURON_IDS"])
		pod.Annotations = annos
		u, err := gpu.DecodePodUsage(pod, reg)
		if err != nil {
			t.Fatal(err)
		}
		want := []gpu.Allocation{{UUID: "trn-AWSNeuron-0", Type: "AWSNeuron", Cores: 1, Slots: 1, CoreMask: 1 << i}}
		if diff := cmp.Diff(want, u.Allocations); diff != "" {
			t.Fatalf("pod %d usage (-want +got):\n%s", i, diff)
		}
		if node.Devices, err = gpu.AddPodUsage(node.Devices, u); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"0", "1"}, ids); diff != "" {
		t.Fatalf("AWS_NEURON_IDS (-want +got):\n%s", diff)
	}
	if d := node.Devices[0]; d.CoresInUse != 3 || d.UsedCores != 2 || d.Used != 2 {
		t.Fatalf("device after two pods = %+v", d)
	}
	// A mask naming a core the device does not have is refused.
	if _, err := gpu.AddUsage(neuronNode().Devices, gpu.Allocation{UUID: "trn-AWSNeuron-0", Type: "AWSNeuron", Cores: 1, CoreMask: 4}); err == nil ||
		!cmp.Equal(invalidFields(err), []string{"allocs[0].coreMask"}) {
		t.Fatalf("err = %v", err)
	}
}

func FuzzDecodeNeuronUsage(f *testing.F) {
	f.Add("trn-AWSNeuron-1,AWSNeuron,0,1:;trn-AWSNeuron-1,AWSNeuron,0,2:;")
	f.Add(";trn-AWSNeuron-0,AWSNeuron,0,3:trn-AWSNeuron-2,AWSNeuron,0,3:;")
	f.Add("trn-AWSNeuron-0,AWSNeuron,0,4:;")
	f.Add("trn-AWSNeuron-9,AWSNeuron,0,2147483647:;x,y,-1,-1:")
	reg := gpu.DefaultRegistry()
	f.Fuzz(func(t *testing.T, v string) {
		pod := twoApps(nil, nil)
		pod.Annotations = map[string]string{"hami.io/vgpu-node": "trn", "hami.io/aws-neuron-devices-allocated": v}
		u, err := gpu.DecodePodUsage(pod, reg)
		if err != nil {
			if len(invalidFields(err)) == 0 {
				t.Fatalf("error without a named field: %v", err)
			}
			return
		}
		for _, a := range u.Allocations {
			if a.Cores < 0 || int(a.Cores) > 64 {
				t.Fatalf("cores %d of a mask %b", a.Cores, a.CoreMask)
			}
		}
		devs, err := gpu.AddPodUsage(neuronNode().Devices, u)
		if err != nil {
			if len(invalidFields(err)) == 0 {
				t.Fatalf("error without a named field: %v", err)
			}
			return
		}
		for _, d := range devs {
			if d.CoresInUse>>uint(d.Cores) != 0 || d.UsedCores > d.Cores*int32(d.Used) {
				t.Fatalf("device %s holds cores %b of %d, %d used", d.ID, d.CoresInUse, d.Cores, d.UsedCores)
			}
		}
	})
}
