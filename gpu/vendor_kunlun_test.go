package gpu_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
)

// TestLinkGraphFit restates HAMi's whole-Kunlun Fit (graghSelect and
// interconnect, pkg/device/kunlun/topo_test.go and the link tables) on a
// node of eight XPUs. HAMi reads the wings off the policy-sorted list, so
// used XPUs (scored higher) move: under the default spread order they come
// first, under binpack last, and the wings shift with them.
func TestLinkGraphFit(t *testing.T) {
	cases := []struct {
		name      string
		nums      string
		policy    string
		used      []int
		unhealthy []int
		annos     map[string]string
		want      string
	}{
		{name: "eight free XPUs, all eight", nums: "8", want: "0,1,2,3,4,5,6,7"},
		{name: "seven free, eight asked", nums: "8", used: []int{0}, want: "1/8 NumaNotFit"},
		{name: "one of eight free: the first of a full wing", nums: "1", want: "0"},
		{name: "one, XPU 0 used: the wing of three", nums: "1", used: []int{0}, want: "1"},
		{name: "one, XPU 4 used: spread moves it into the left wing", nums: "1", used: []int{4}, want: "0"},
		{name: "one, XPU 4 used under binpack: the right wing of three", nums: "1", used: []int{4}, policy: "binpack", want: "5"},
		{name: "four, the right wing used: the free wing", nums: "4", used: []int{4, 5, 6, 7}, want: "0,1,2,3"},
		{name: "two across the groups: the linked pair 0-4", nums: "2", unhealthy: []int{1, 2, 3, 5, 6, 7}, want: "0,4"},
		{name: "two not linked", nums: "2", unhealthy: []int{0, 1, 2, 5, 6, 7}, want: "1/8 NumaNotFit"},
		{name: "four of four free across the groups", nums: "4", unhealthy: []int{1, 3, 5, 7}, want: "0,2,4,6"},
		{name: "four of five free", nums: "4", unhealthy: []int{3, 6, 7}, want: "0,1,4,5"},
		{name: "four of six free, leaving a linked pair", nums: "4", unhealthy: []int{3, 7}, want: "0,1,4,5"},
		{name: "three is no shape", nums: "3", want: "1/8 NumaNotFit"},
		{name: "the UUID selector leaves one XPU", nums: "1", annos: map[string]string{"baidu.com/use-gpuuuid": "w-kunlun-3"}, want: "3"},
		{name: "a refused UUID is the reason", nums: "8", annos: map[string]string{"baidu.com/nouse-gpuuuid": "w-kunlun-6"}, want: "1/8 CardUuidMismatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := capacityNode("w", "kunlunxin.com/xpu", "8")
			for _, i := range tc.used {
				node.Devices[i].Used, node.Devices[i].UsedMemoryMiB = 1, 98304
			}
			for _, i := range tc.unhealthy {
				node.Devices[i].Healthy = false
			}
			pod := podWith(nil, []corev1.Container{ctr("c", rl("kunlunxin.com/xpu", tc.nums))})
			pod.Annotations = tc.annos
			if tc.policy != "" {
				pod.Annotations = map[string]string{"hami.io/gpu-scheduler-policy": tc.policy}
			}
			nf := fitPod(t, node, pod)
			if nf.Fits {
				for _, a := range nf.Containers[0].Devices {
					if a.MemoryMiB != 98304 || a.Cores != 100 {
						t.Fatalf("a whole XPU takes all of it: %+v", a)
					}
				}
			}
			if got := firstContainerAnswer(nf, "w-kunlun-"); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	// A second pod on the XPUs the first took finds them used.
	node := capacityNode("w", "kunlunxin.com/xpu", "8")
	fr, err := gpu.FitRequestFromPod(podWith(nil, []corev1.Container{ctr("a", rl("kunlunxin.com/xpu", "4")), ctr("b", rl("kunlunxin.com/xpu", "4"))}), gpu.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	nf, err := fitOne(node, fr)
	if err != nil || !nf.Fits {
		t.Fatalf("%+v %v", nf, err)
	}
	if got := fmt.Sprint(nf.Containers[0].Devices[0].UUID, " ", nf.Containers[1].Devices[0].UUID); got != "w-kunlun-0 w-kunlun-4" {
		t.Fatalf("two containers of four: first XPUs %s", got)
	}
}

// TestLinkGraphSharedFit restates HAMi's Kunlun vXPU Fit (vdevice.go Fit
// and FitVXPU over graghSelect): a used vXPU is shared only by requests of
// the same memory tier, mutex wants an unused one, and the wings are read
// off the policy-sorted list as for whole XPUs.
func TestLinkGraphSharedFit(t *testing.T) {
	var devs []string
	for i := range 8 {
		devs = append(devs, fmt.Sprintf(`{"id":"xpu-%d","index":%d,"count":4,"devmem":98304,"devcore":100,"type":"P800","health":true}`, i, i))
	}
	node := func(used map[int]int32) gpu.Node {
		n, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "v", Annotations: map[string]string{
			"hami.io/node-register-xpu": "[" + strings.Join(devs, ",") + "]"}}}, gpu.DefaultRegistry())
		if err != nil {
			t.Fatal(err)
		}
		for i, mem := range used {
			n.Devices[i].Used, n.Devices[i].UsedMemoryMiB, n.Devices[i].UsedCores = 1, mem, mem*100/98304
		}
		return n
	}
	everyUsed := map[int]int32{0: 24576, 1: 24576, 2: 24576, 3: 24576, 4: 24576, 5: 24576, 6: 24576, 7: 24576}
	cases := []struct {
		name  string
		mem   string
		mutex bool
		used  map[int]int32
		want  string
	}{
		{name: "a free node: the first of a full wing", mem: "20000", want: "xpu-0 24576 25"},
		{name: "shared with a request of the same tier", mem: "24576", used: map[int]int32{0: 24576}, want: "xpu-0 24576 25"},
		{name: "not with one of another tier: the wing of three", mem: "24576", used: map[int]int32{0: 49152}, want: "xpu-1 24576 25"},
		{name: "mutex refuses the used ones", mem: "24576", mutex: true, used: everyUsed, want: "8/8 ExclusiveDeviceAllocateConflict"},
		{name: "a full card shares with nobody", mem: "98304", used: everyUsed, want: "1/8 NumaNotFit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(nil, []corev1.Container{ctr("c", rl("kunlunxin.com/vxpu", "1", "kunlunxin.com/vxpu-memory", tc.mem))})
			if tc.mutex {
				pod.Annotations = map[string]string{"hami.io/gpu-scheduler-policy": "mutex"}
			}
			nf := fitPod(t, node(tc.used), pod)
			got := nf.Message()
			if nf.Fits {
				a := nf.Containers[0].Devices[0]
				got = fmt.Sprintf("%s %d %d", a.UUID, a.MemoryMiB, a.Cores)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
