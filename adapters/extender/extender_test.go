package extender_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/extender"
	"github.com/plancore/plancore/adapters/extender/extendertest"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

const gib = 1024

// cluster is one test's view: the control plane, a started cache and the
// extender on them.
type cluster struct {
	// schedulerName is the pods' scheduler: one no kube-scheduler serves
	// unless the test starts one for it.
	schedulerName string
	env           *kubetest.Env
	ns            string
	cache         cache.Cache
	ext           *extender.Scheduler
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	env := kubetest.Shared(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache never synced")
	}
	// plancore's default Bind options: every pod waits its turn for a node
	// lock held by the previous pod until the device plugin releases it
	// (gpu.HAMi() fails such a Bind at once, into the scheduler's backoff).
	ext, err := extender.ForKubernetes(extender.KubeConfig{Client: env.Client, Reader: c, Options: gpu.Options{}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	return &cluster{env: env, ns: ns, cache: c, ext: ext, schedulerName: "none-" + ns}
}

// addNode creates a Node with devices (extendertest.AddNode) under a name
// unique to the control plane, and returns the name.
func (c *cluster) addNode(t *testing.T, prefix string, devices []gpu.Device, capacity corev1.ResourceList) string {
	t.Helper()
	name := c.env.UniqueName(prefix)
	ctx := context.Background()
	if err := extendertest.AddNode(ctx, c.env.Client, name, devices, capacity); err != nil {
		t.Fatal(err)
	}
	// The label keeps other tests' pods off this test's nodes when a real
	// kube-scheduler runs (their pods select it).
	var n corev1.Node
	if err := c.env.Client.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	n.Labels = map[string]string{testLabel: c.ns}
	if err := c.env.Client.Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	return name
}

// testLabel marks the nodes of one test; a test's pods select them.
const testLabel = "plancore.io/extender-test"

// addPod creates a pod whose one container has the given limits.
func (c *cluster) addPod(t *testing.T, name string, limits map[string]string) *corev1.Pod {
	t.Helper()
	rl := corev1.ResourceList{}
	for k, v := range limits {
		rl[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name},
		Spec: corev1.PodSpec{
			Containers:    []corev1.Container{{Name: "main", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: rl}}},
			SchedulerName: c.schedulerName,
			NodeSelector:  map[string]string{testLabel: c.ns},
		},
	}
	if err := c.env.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (c *cluster) get(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	var out corev1.Pod
	if err := c.env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// filter calls Filter the way a nodeCacheCapable kube-scheduler does.
func (c *cluster) filter(p *corev1.Pod, nodes ...string) extenderv1.ExtenderFilterResult {
	return c.ext.Filter(context.Background(), extenderv1.ExtenderArgs{Pod: p, NodeNames: &nodes})
}

func TestFilter(t *testing.T) {
	c := newCluster(t)
	nv := c.addNode(t, "nv", extendertest.NVIDIA("nv", 2, 40*gib), nil)
	dcu := c.addNode(t, "dcu", extendertest.Hygon("dcu", 2), nil)
	mlu := c.addNode(t, "mlu", nil, corev1.ResourceList{
		"cambricon.com/mlu.smlu.vcore":   resource.MustParse("200"),
		"cambricon.com/mlu.smlu.vmemory": resource.MustParse("256"),
	})
	plain := c.addNode(t, "plain", nil, nil)
	all := []string{nv, dcu, mlu, plain}

	cases := []struct {
		name    string
		limits  map[string]string
		chosen  string
		vendor  string            // the devices-to-allocate annotation's vendor key
		reasons map[string]string // node → a part of its failure message
	}{
		{"NVIDIA share", map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10000"}, nv, "hami.io/vgpu-devices-to-allocate",
			map[string]string{dcu: "NodeInsufficientDevice", mlu: "NodeInsufficientDevice", plain: "NodeInsufficientDevice"}},
		{"Hygon DCU", map[string]string{"hygon.com/dcunum": "1", "hygon.com/dcumem": "4000"}, dcu, "hami.io/dcu-devices-to-allocate",
			map[string]string{nv: "NodeInsufficientDevice", mlu: "NodeInsufficientDevice", plain: "NodeInsufficientDevice"}},
		{"Cambricon MLU from capacity", map[string]string{"cambricon.com/vmlu": "1"}, mlu, "hami.io/cambricon-mlu-devices-to-allocate",
			map[string]string{nv: "NodeInsufficientDevice", dcu: "NodeInsufficientDevice", plain: "NodeInsufficientDevice"}},
		{"three NVIDIA cards on a two-card node", map[string]string{"nvidia.com/gpu": "3"}, "", "",
			map[string]string{nv: "NodeInsufficientDevice", dcu: "NodeInsufficientDevice", mlu: "NodeInsufficientDevice", plain: "NodeInsufficientDevice"}},
		{"more memory than a card has", map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem": "50000"}, "", "",
			map[string]string{nv: "2/2 CardInsufficientMemory"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := c.addPod(t, fmt.Sprintf("p%d", i), tc.limits)
			res := c.filter(p, all...)
			if res.Error != "" {
				t.Fatalf("Filter error: %s", res.Error)
			}
			var want []string
			if tc.chosen != "" {
				want = []string{tc.chosen}
			}
			if got := *res.NodeNames; !slices.Equal(got, want) {
				t.Errorf("NodeNames = %v, want %v (failed: %v)", got, want, res.FailedNodes)
			}
			for node, part := range tc.reasons {
				if !strings.Contains(res.FailedNodes[node], part) {
					t.Errorf("node %s failed with %q, want it to say %q", node, res.FailedNodes[node], part)
				}
			}
			got := c.get(t, p)
			if tc.chosen == "" {
				if _, ok := got.Annotations[gpu.AnnoAssignedNode]; ok {
					t.Errorf("a pod that fits nowhere was annotated: %v", got.Annotations)
				}
				return
			}
			if got.Annotations[gpu.AnnoAssignedNode] != tc.chosen || got.Annotations[gpu.AnnoAssignedTime] == "" || got.Annotations[tc.vendor] == "" {
				t.Errorf("annotations = %v, want %s on %s and the time", got.Annotations, tc.vendor, tc.chosen)
			}
			usage, err := gpu.DecodePodUsage(got, gpu.DefaultRegistry())
			if err != nil || usage.Node != tc.chosen || len(usage.Allocations) != 1 {
				t.Errorf("the annotations decode to %+v, %v", usage, err)
			}
		})
	}

	t.Run("prioritize", func(t *testing.T) { testPrioritize(t, c, all, nv) })
	t.Run("HTTP: a body that is not the protocol's is refused", func(t *testing.T) { testBadRequests(t, c) })
	t.Run("a pod without devices passes", func(t *testing.T) {
		p := c.addPod(t, "cpu-only", map[string]string{"cpu": "1"})
		res := c.filter(p, all...)
		if res.Error != "" || !slices.Equal(*res.NodeNames, all) || len(res.FailedNodes) != 0 {
			t.Fatalf("Filter = %+v", res)
		}
	})
	t.Run("a node whose register cannot be read offers none of that vendor, named", func(t *testing.T) {
		bad := c.addNode(t, "bad", nil, nil)
		var n corev1.Node
		ctx := context.Background()
		if err := c.env.Client.Get(ctx, client.ObjectKey{Name: bad}, &n); err != nil {
			t.Fatal(err)
		}
		n.Annotations = map[string]string{"hami.io/node-nvidia-register": "[{not json"}
		if err := c.env.Client.Update(ctx, &n); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			var cached corev1.Node
			return c.cache.Get(ctx, client.ObjectKey{Name: bad}, &cached) == nil && cached.Annotations["hami.io/node-nvidia-register"] != ""
		})
		p := c.addPod(t, "after-bad", map[string]string{"nvidia.com/gpu": "1"})
		res := c.filter(p, bad, nv)
		if res.Error != "" || !slices.Equal(*res.NodeNames, []string{nv}) || !strings.Contains(res.FailedNodes[bad], "hami.io/node-nvidia-register") {
			t.Fatalf("Filter = %+v, %v", *res.NodeNames, res.FailedNodes)
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(20 * time.Millisecond) // polling an informer cache
	}
}

// deviceUse is what bound pods hold on one device.
type deviceUse struct {
	pods      int
	memoryMiB int32
}

// tallyBound counts the pods bound to one of nodes, checks each carries the
// annotations HAMi's device plugin reads (its node, bind-phase success), and
// adds up what they hold per device.
func (c *cluster) tallyBound(t *testing.T, pods []*corev1.Pod, nodes ...string) (int, map[string]*deviceUse) {
	t.Helper()
	use := map[string]*deviceUse{}
	bound := 0
	for _, p := range pods {
		got := c.get(t, p)
		if got.Spec.NodeName == "" {
			continue
		}
		bound++
		if !slices.Contains(nodes, got.Spec.NodeName) || got.Annotations[gpu.AnnoAssignedNode] != got.Spec.NodeName || got.Annotations[gpu.AnnoBindPhase] != gpu.PhaseSuccess {
			t.Errorf("%s bound to %s with %v", got.Name, got.Spec.NodeName, got.Annotations)
		}
		usage, err := gpu.DecodePodUsage(got, gpu.DefaultRegistry())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range usage.Allocations {
			u := use[a.UUID]
			if u == nil {
				u = &deviceUse{}
				use[a.UUID] = u
			}
			u.pods++
			u.memoryMiB += a.MemoryMiB
		}
	}
	return bound, use
}

// TestBurst schedules 40 pods, each asking a 10 GiB share of one card, onto
// two nodes of two 40 GiB cards (16 shares in all) the way kube-scheduler
// does: Filter one pod after another, Bind each chosen pod concurrently.
// Exactly 16 are bound and no card holds more than its memory or its 10
// slots, although the cache lags behind Filter's writes. Fails when Filter
// stops recording the devices it gives as assumed.
func TestBurst(t *testing.T) {
	c := newCluster(t)
	nodes := []string{c.addNode(t, "burst", extendertest.NVIDIA("b1", 2, 40*gib), nil), c.addNode(t, "burst", extendertest.NVIDIA("b2", 2, 40*gib), nil)}
	var pods []*corev1.Pod
	for i := range 40 {
		pods = append(pods, c.addPod(t, fmt.Sprintf("burst-%02d", i), map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10240"}))
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c.devicePlugin(ctx, t)
	var wg sync.WaitGroup
	bindErrs := make(chan string, len(pods))
	filtered := 0
	for _, p := range pods {
		res := c.filter(p, nodes...)
		if res.Error != "" {
			t.Fatalf("Filter %s: %s", p.Name, res.Error)
		}
		if len(*res.NodeNames) == 0 {
			continue
		}
		filtered++
		wg.Add(1)
		go func(p *corev1.Pod, node string) {
			defer wg.Done()
			r := c.ext.Bind(context.Background(), extenderv1.ExtenderBindingArgs{PodName: p.Name, PodNamespace: p.Namespace, PodUID: p.UID, Node: node})
			if r.Error != "" {
				bindErrs <- p.Name + ": " + r.Error
			}
		}(p, (*res.NodeNames)[0])
	}
	wg.Wait()
	close(bindErrs)
	for e := range bindErrs {
		t.Errorf("Bind %s", e)
	}
	if filtered != 16 {
		t.Errorf("%d pods passed Filter, want 16 (four 10 GiB shares on each of four 40 GiB cards)", filtered)
	}
	// The device plugin marks the last bound pods a moment later.
	waitFor(t, func() bool {
		for _, p := range pods {
			if got := c.get(t, p); got.Spec.NodeName != "" && got.Annotations[gpu.AnnoBindPhase] != gpu.PhaseSuccess {
				return false
			}
		}
		return true
	})
	bound, use := c.tallyBound(t, pods, nodes...)
	if bound != 16 {
		t.Errorf("%d pods bound, want 16", bound)
	}
	for _, id := range slices.Sorted(maps.Keys(use)) {
		if u := use[id]; u.memoryMiB > 40*gib || u.pods > 10 {
			t.Errorf("device %s over-assigned: %d pods, %d MiB of %d", id, u.pods, u.memoryMiB, 40*gib)
		}
	}
}

// devicePlugin runs extendertest.DevicePlugin for the test's namespace
// until ctx ends, failing the test on a release error.
func (c *cluster) devicePlugin(ctx context.Context, t *testing.T) {
	errs := make(chan error, 16)
	go extendertest.DevicePlugin(ctx, c.env.Client, c.ns, errs)
	go func() {
		for {
			select {
			case err := <-errs:
				t.Error(err)
			case <-ctx.Done():
				return
			}
		}
	}()
}

// A Bind that the API server refuses (the pod is already bound elsewhere)
// releases the node lock it took and marks the pod failed.
func TestBindFailureRollsBack(t *testing.T) {
	c := newCluster(t)
	a := c.addNode(t, "fail-a", extendertest.NVIDIA("fa", 1, 40*gib), nil)
	b := c.addNode(t, "fail-b", extendertest.NVIDIA("fb", 1, 40*gib), nil)
	p := c.addPod(t, "victim", map[string]string{"nvidia.com/gpu": "1"})
	res := c.filter(p, a)
	if len(*res.NodeNames) != 1 {
		t.Fatalf("Filter = %+v", res)
	}
	ctx := context.Background()
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: b}}
	if err := c.env.Client.SubResource("binding").Create(ctx, p, binding); err != nil {
		t.Fatal(err)
	}
	r := c.ext.Bind(ctx, extenderv1.ExtenderBindingArgs{PodName: p.Name, PodNamespace: p.Namespace, PodUID: p.UID, Node: a})
	if r.Error == "" {
		t.Fatal("Bind of a pod bound elsewhere succeeded")
	}
	got := c.get(t, p)
	if got.Spec.NodeName != b || got.Annotations[gpu.AnnoBindPhase] != gpu.PhaseFailed {
		t.Errorf("pod on %q with bind-phase %q, want %s and %s (error %s)", got.Spec.NodeName, got.Annotations[gpu.AnnoBindPhase], b, gpu.PhaseFailed, r.Error)
	}
	var node corev1.Node
	if err := c.env.Client.Get(ctx, client.ObjectKey{Name: a}, &node); err != nil {
		t.Fatal(err)
	}
	if v, held := node.Annotations[lock.HAMiLockName]; held {
		t.Errorf("node %s still holds %s=%s after the failed Bind", a, lock.HAMiLockName, v)
	}
}

// testPrioritize: the only node that fits scores the most, the others 0.
func testPrioritize(t *testing.T, c *cluster, all []string, nv string) {
	p := c.addPod(t, "prio", map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem": "1000"})
	list, err := c.ext.Prioritize(context.Background(), extenderv1.ExtenderArgs{Pod: p, NodeNames: &all})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, h := range list {
		got[h.Host] = h.Score
	}
	want := map[string]int64{}
	for _, n := range all {
		want[n] = 0
	}
	want[nv] = extenderv1.MaxExtenderPriority
	if !maps.Equal(got, want) {
		t.Errorf("scores = %v, want %v", got, want)
	}
}

// testBadRequests: bodies outside the protocol are answered 400, a GET 405.
func testBadRequests(t *testing.T, c *cluster) {
	srv := httptest.NewServer(c.ext.Handler())
	defer srv.Close()
	for path, body := range map[string]string{"/filter": `{"Pod": 7}`, "/bind": `{} {}`, "/prioritize": `[`} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s %s: %s, want 400", path, body, resp.Status)
		}
	}
	resp, err := http.Get(srv.URL + "/filter")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /filter: %s, want 405", resp.Status)
	}
}

// A vendor whose device plugin stopped answering (its handshake Requesting
// for over a minute, none of its devices allocatable) loses its devices,
// as in HAMi; a pod still holding one of them must not make the node's
// usage unreadable: the node keeps serving its other vendor. Fails when the
// stale devices are dropped before the pods' usage is added.
func TestStaleVendorWithHeldDevices(t *testing.T) {
	c := newCluster(t)
	devices := append(extendertest.NVIDIA("sv", 1, 40*gib), extendertest.Hygon("sv", 1)...)
	node := c.addNode(t, "stale", devices, nil)
	// A pod already holds the DCU.
	held := c.addPod(t, "holds-dcu", map[string]string{"hygon.com/dcunum": "1"})
	if res := c.filter(held, node); len(*res.NodeNames) != 1 {
		t.Fatalf("placing the DCU pod: %+v", res)
	}
	// Then the DCU plugin stops answering.
	ctx := context.Background()
	var n corev1.Node
	if err := c.env.Client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	n.Annotations["hami.io/node-handshake-dcu"] = "Requesting_" + time.Now().UTC().Add(-2*time.Minute).Format(time.DateTime)
	if err := c.env.Client.Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		var cached corev1.Node
		return c.cache.Get(ctx, client.ObjectKey{Name: node}, &cached) == nil && cached.Annotations["hami.io/node-handshake-dcu"] != ""
	})
	nv := c.addPod(t, "wants-nvidia", map[string]string{"nvidia.com/gpu": "1"})
	if res := c.filter(nv, node); res.Error != "" || len(*res.NodeNames) != 1 {
		t.Errorf("an NVIDIA pod on a node whose DCU vendor went stale: %+v, %v", res.NodeNames, res.FailedNodes)
	}
	dcu := c.addPod(t, "wants-dcu", map[string]string{"hygon.com/dcunum": "1"})
	if res := c.filter(dcu, node); len(*res.NodeNames) != 0 {
		t.Errorf("a DCU pod was placed on a stale DCU: %+v", res)
	}
}
