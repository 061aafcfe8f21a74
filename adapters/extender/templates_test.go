package extender_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/adapters/extender"
	"github.com/plancore/plancore/adapters/extender/extendertest"
	"github.com/plancore/plancore/gpu"
)

// templateNode is a whole Node object as kube-scheduler sends it with
// nodeCacheCapable false: HAMi's register annotations for devices, and
// fields the fit never reads (an image, a pod CIDR).
func templateNode(t testing.TB, name string, devices []gpu.Device) corev1.Node {
	t.Helper()
	annos, err := gpu.EncodeNode(gpu.Node{Name: name, Devices: devices}, gpu.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annos, Labels: map[string]string{"zone": "a"}},
		Spec:       corev1.NodeSpec{PodCIDR: "10.0.0.0/24"},
		Status:     corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"cuda:12"}, SizeBytes: 1 << 30}}},
	}
}

// TestTemplateNodes: a Filter sending whole Nodes (kube-scheduler with
// nodeCacheCapable false, cluster-autoscaler) is fitted to those objects as
// HAMi fits template nodes: devices read from the objects (a node the
// extender's cache does not know is fitted; one the cache shows full is
// free), "node unregistered" for a node without devices, HAMi's reason for
// one too small, nothing written on the pod or assumed, and the chosen
// object answered in Nodes as it was sent. Prioritize scores them alike.
// Fails when Nodes are looked up in the cache (the template is "not found"
// and NodeNames is answered), or when usage is counted.
func TestTemplateNodes(t *testing.T) {
	ext, cached := memExtender(t, 2)
	// Fill the cached node-0000: as a template it stays free.
	for i := range 4 {
		if res := ext.Filter(context.Background(), extenderv1.ExtenderArgs{Pod: gpuPod(fmt.Sprintf("fill-%d", i), 80*gib), NodeNames: &[]string{cached[0]}}); res.NodeNames == nil || len(*res.NodeNames) != 1 {
			t.Fatalf("filling %s: %+v", cached[0], res)
		}
	}
	nodes := []corev1.Node{
		templateNode(t, cached[0], extendertest.NVIDIA(cached[0], 8, 80*gib)),
		templateNode(t, "template-small", extendertest.NVIDIA("small", 1, 80*gib)),
		templateNode(t, "template-bare", nil),
	}
	body, err := json.Marshal(extenderv1.ExtenderArgs{Pod: gpuPod("incoming", 8000), Nodes: &corev1.NodeList{Items: nodes}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ext.Handler())
	defer srv.Close()
	for range 2 { // the same answer twice: nothing was assumed
		resp, err := http.Post(srv.URL+"/filter", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var res extenderv1.ExtenderFilterResult
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if res.Error != "" || res.NodeNames != nil || res.Nodes == nil || len(res.Nodes.Items) != 1 {
			t.Fatalf("Filter over Nodes: %+v, want one node in Nodes", res)
		}
		if got := res.Nodes.Items[0]; got.Name != cached[0] || got.Spec.PodCIDR != nodes[0].Spec.PodCIDR || len(got.Status.Images) != 1 {
			t.Errorf("answered node %+v, want %s as it was sent", got, cached[0])
		}
		want := map[string]string{"template-bare": "node unregistered", "template-small": "NodeInsufficientDevice"}
		for n, reason := range want {
			if !strings.Contains(res.FailedNodes[n], reason) {
				t.Errorf("FailedNodes[%s] = %q, want %q", n, res.FailedNodes[n], reason)
			}
		}
	}
	list, err := ext.Prioritize(context.Background(), extenderv1.ExtenderArgs{Pod: gpuPod("incoming", 8000), Nodes: &corev1.NodeList{Items: nodes}})
	if err != nil || len(list) != 3 || list[0].Host != cached[0] || list[0].Score != extenderv1.MaxExtenderPriority || list[1].Score != 0 {
		t.Errorf("Prioritize over Nodes = %+v, %v; want %s scored %d, the others 0", list, err, cached[0], extenderv1.MaxExtenderPriority)
	}
	// Filter's own answer for the Go caller: the object, nothing written.
	before := len(ext.Filter(context.Background(), extenderv1.ExtenderArgs{Pod: gpuPod("probe", 8000), NodeNames: &[]string{cached[1]}}).FailedNodes)
	res := ext.Filter(context.Background(), extenderv1.ExtenderArgs{Pod: gpuPod("incoming", 8000), Nodes: &corev1.NodeList{Items: nodes}})
	if res.Nodes == nil || len(res.Nodes.Items) != 1 || before != 0 {
		t.Errorf("Filter over Nodes: %+v", res)
	}
	if both := ext.Filter(context.Background(), extenderv1.ExtenderArgs{Pod: gpuPod("incoming", 8000), Nodes: &corev1.NodeList{Items: nodes}, NodeNames: &cached}); !strings.Contains(both.Error, "both") {
		t.Errorf("Filter with both forms: %+v, want refused", both)
	}
}

// TestTemplatesPatchNothing: Filter over Nodes writes nothing on the pod,
// where Filter over NodeNames patches it. Fails when the template path
// assigns.
func TestTemplatesPatchNothing(t *testing.T) {
	m := &memCluster{}
	ext, err := extender.New(extender.Config{Client: m, Bind: &gpu.Binder{Exec: noPods{}, Waiter: clockWait{}}})
	if err != nil {
		t.Fatal(err)
	}
	nodes := []corev1.Node{templateNode(t, "t1", extendertest.NVIDIA("t1", 2, 80*gib))}
	res := ext.Filter(context.Background(), extenderv1.ExtenderArgs{Pod: gpuPod("p", 8000), Nodes: &corev1.NodeList{Items: nodes}})
	if res.Error != "" || res.Nodes == nil || len(res.Nodes.Items) != 1 || len(m.pods) != 0 {
		t.Fatalf("Filter over Nodes: %+v, %d pods patched; want t1 and no patch", res, len(m.pods))
	}
}

// TestKubeSchedulerConfig: New serves HAMi's kube-scheduler configuration
// and a simulating caller's, and refuses every setting it cannot serve,
// each named with the change to make. Fails when a check is dropped.
func TestKubeSchedulerConfig(t *testing.T) {
	managed := func(ignored bool, names ...string) []configv1.ExtenderManagedResource {
		var out []configv1.ExtenderManagedResource
		for _, n := range names {
			out = append(out, configv1.ExtenderManagedResource{Name: n, IgnoredByScheduler: ignored})
		}
		return out
	}
	hami := configv1.Extender{URLPrefix: "http://127.0.0.1:80", FilterVerb: "filter", BindVerb: "bind", NodeCacheCapable: true, Weight: 1,
		ManagedResources: managed(true, "nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores")}
	simulating := configv1.Extender{URLPrefix: "http://127.0.0.1:80", FilterVerb: "filter", PrioritizeVerb: "prioritize", Weight: 1,
		ManagedResources: managed(true, "nvidia.com/gpu", "nvidia.com/gpumem")}
	newWith := func(e configv1.Extender) error {
		_, err := extender.New(extender.Config{Client: &memCluster{}, Bind: &gpu.Binder{Exec: noPods{}, Waiter: clockWait{}}, KubeScheduler: &e})
		return err
	}
	for name, e := range map[string]configv1.Extender{"HAMi's": hami, "simulating": simulating} {
		if err := newWith(e); err != nil {
			t.Errorf("%s configuration refused: %v", name, err)
		}
	}
	bad := hami
	bad.NodeCacheCapable = false
	bad.FilterVerb, bad.PrioritizeVerb, bad.PreemptVerb = "", "score", "preempt"
	bad.ManagedResources = append(managed(false, "nvidia.com/gpumem"), managed(true, "hygon.com/dcumem")...)
	err := newWith(bad)
	var inv *plancore.InvalidError
	if !errors.Is(err, extender.ErrInvalidConfig) || !errors.As(err, &inv) {
		t.Fatalf("New = %v, want an *plancore.InvalidError wrapping ErrInvalidConfig", err)
	}
	want := []string{
		"kubeScheduler.prioritizeVerb", "kubeScheduler.preemptVerb", "kubeScheduler.filterVerb", "kubeScheduler.nodeCacheCapable",
		"kubeScheduler.managedResources[0].name", "kubeScheduler.managedResources[0].ignoredByScheduler", "kubeScheduler.managedResources[1].name",
	}
	if got := inv.Fields(); !slices.Equal(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	for _, says := range []string{"set nodeCacheCapable: true", "add nvidia.com/gpu to managedResources", "set ignoredByScheduler: true", "remove preemptVerb"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("%v\ndoes not say %q", err, says)
		}
	}
}

// TestArgsForms: bodies are split as encoding/json reads them (keys in any
// case, unknown keys skipped, null parts absent) and a body that is not one
// JSON object is refused 400. Fails when the split misreads a part.
func TestArgsForms(t *testing.T) {
	ext, names := memExtender(t, 3)
	h := ext.Handler()
	pod, _ := json.Marshal(gpuPod("p", 8000))
	node, _ := json.Marshal(templateNode(t, "t1", extendertest.NVIDIA("t1", 2, 80*gib)))
	list := `["` + strings.Join(names, `", "`) + `"]`
	for body, want := range map[string]string{
		`{"pod":` + string(pod) + `, "nodenames" : ` + list + `, "x": {"y": [1, "]"]}}`:                                      `"NodeNames":["node-0`,
		` { "Pod" : ` + string(pod) + ` , "Nodes" : {"metadata": {}, "items": [` + string(node) + `]}, "NodeNames": null } `: `"items":[{"metadata":{"name":"t1"`,
		`{"Pod":` + string(pod) + `,"Nodes":null,"NodeNames":["node-0001"]}`:                                                 `"NodeNames":["node-0001"]`,
		`{"Pod":` + string(pod) + `,"Nodes":{"items":[]}}`:                                                                   `"items":[]`,
		`{"Pod":` + string(pod):                            "400",
		`{"Pod":` + string(pod) + `} {}`:                   "400",
		`{"Pod":` + string(pod) + `,"Nodes":{"items":[1}}`: "400",
		`[]`: "400",
	} {
		m := measure(h, "/filter", []byte(body))
		got := m.reply
		if m.status != http.StatusOK {
			got = fmt.Sprint(m.status)
		}
		if !strings.Contains(got, want) {
			t.Errorf("%.80s...: %d %.300s, want %q", body, m.status, m.reply, want)
		}
	}
}

// TestTemplateBytesReused: a Node object sent again byte for byte is not
// decoded again, and one whose bytes changed is: the same node name sent
// with its cards now too small is refused on the second call, while the
// unchanged node is still chosen. Fails when parseArgs keys its reuse by
// node name alone (the stale big node would be chosen).
func TestTemplateBytesReused(t *testing.T) {
	ext, _ := memExtender(t, 0)
	srv := httptest.NewServer(ext.Handler())
	defer srv.Close()
	filter := func(nodes ...corev1.Node) extenderv1.ExtenderFilterResult {
		t.Helper()
		body, err := json.Marshal(extenderv1.ExtenderArgs{Pod: gpuPod("incoming", 8000), Nodes: &corev1.NodeList{Items: nodes}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(srv.URL+"/filter", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var res extenderv1.ExtenderFilterResult
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || res.Error != "" {
			t.Fatalf("filter: %+v, %v", res, err)
		}
		return res
	}
	big := templateNode(t, "a-big", extendertest.NVIDIA("a-big", 8, 80*gib))
	other := templateNode(t, "b-other", extendertest.NVIDIA("b-other", 2, 80*gib))
	if res := filter(big, other); len(res.Nodes.Items) != 1 || res.Nodes.Items[0].Name != "a-big" {
		t.Fatalf("first call chose %+v, want a-big", res.Nodes)
	}
	small := templateNode(t, "a-big", extendertest.NVIDIA("a-big", 2, 4*1024))
	res := filter(small, other)
	if len(res.Nodes.Items) != 1 || res.Nodes.Items[0].Name != "b-other" || !strings.Contains(res.FailedNodes["a-big"], "CardInsufficientMemory") {
		t.Fatalf("second call: %+v, want b-other chosen and a-big refused for memory", res)
	}
}

// TestPodReadAgainWhenChanged: a pod listed without a node assignment is
// remembered as such only while its resourceVersion is the same; once it
// changes (here, assigned with devices that do not decode) it is read
// again and its node refused naming it. Fails when the usage read keys
// its memory of pods by UID alone.
func TestPodReadAgainWhenChanged(t *testing.T) {
	m, names := nvidiaCluster(t, 1)
	ext, err := extender.New(extender.Config{Client: m, Bind: &gpu.Binder{Exec: noPods{}, Waiter: clockWait{}}})
	if err != nil {
		t.Fatal(err)
	}
	x := gpuPod("x", 8000)
	x.ResourceVersion = "1"
	m.pods = []corev1.Pod{*x}
	if res := ext.Filter(context.Background(), extenderv1.ExtenderArgs{Pod: gpuPod("p", 8000), NodeNames: &names}); res.NodeNames == nil || len(*res.NodeNames) != 1 {
		t.Fatalf("first Filter: %+v", res)
	}
	x.ResourceVersion = "2"
	x.Annotations = map[string]string{gpu.AnnoAssignedNode: names[0], "hami.io/vgpu-devices-allocated": "not,an,allocation"}
	m.pods[0] = *x
	res := ext.Filter(context.Background(), extenderv1.ExtenderArgs{Pod: gpuPod("q", 8000), NodeNames: &names})
	if !strings.Contains(res.FailedNodes[names[0]], "bench/x") {
		t.Fatalf("second Filter: %+v, want %s refused naming bench/x", res, names[0])
	}
}
