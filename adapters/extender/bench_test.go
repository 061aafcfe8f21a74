package extender_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/extender"
	"github.com/plancore/plancore/gpu"
)

// memCluster is an informer cache held in memory for the benchmark: List
// hands out its slices as a cache read without copies does, and a Patch of
// a pod is the cache catching up at once.
type memCluster struct {
	client.Client
	nodes []corev1.Node
	pods  []corev1.Pod
}

func (m *memCluster) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch l := list.(type) {
	case *corev1.NodeList:
		l.Items = m.nodes
	case *corev1.PodList:
		l.Items = m.pods
	default:
		return fmt.Errorf("memCluster: cannot list %T", list)
	}
	return nil
}

// Patch takes Filter's merge patch of a pod's annotations: the pod (as
// obj names it) shows them at once.
func (m *memCluster) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	var merge struct {
		Metadata struct{ Annotations map[string]string }
	}
	if err := json.Unmarshal(data, &merge); err != nil {
		return err
	}
	p := obj.(*corev1.Pod).DeepCopy()
	p.Annotations = merge.Metadata.Annotations
	p.ResourceVersion = strconv.Itoa(len(m.pods) + 1)
	m.pods = append(m.pods, *p)
	return nil
}

func gpuPod(name string, memMiB int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			"nvidia.com/gpu": resource.MustParse("2"), "nvidia.com/gpumem": resource.MustParse(strconv.Itoa(memMiB))}}}}},
	}
}

// BenchmarkFilter1000Nodes calls the extender's HTTP Filter for a pod
// asking two GPUs over 1,000 nodes of 8 NVIDIA cards on which 2,000 pods
// already hold devices, in both forms kube-scheduler sends: NodeNames
// (nodeCacheCapable true) and whole Nodes (false, template nodes). It
// reports the 99th percentile of the calls (p99-ms) beside the mean.
func BenchmarkFilter1000Nodes(b *testing.B) {
	const nodes = 1000
	m, names := nvidiaCluster(b, nodes)
	ext, err := extender.New(extender.Config{Client: m, Bind: &gpu.Binder{Exec: nopBind{}, Waiter: nopWait{}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 * nodes { // pods already placed: the cache shows their annotations
		if res := ext.Filter(ctx, extenderv1.ExtenderArgs{Pod: gpuPod(fmt.Sprintf("placed-%d", i), 8000), NodeNames: &names}); len(*res.NodeNames) != 1 {
			b.Fatalf("placing pod %d: %+v", i, res)
		}
	}
	benchFilterForms(b, ext, ext, m.nodes, names)
}

// BenchmarkFilterScale is Filter's cost against the cluster's size: 1,000
// and 5,000 nodes of 8 NVIDIA cards with two pods placed on each (each
// placed by a Filter naming its node alone, which keeps the set-up linear),
// both forms. Whole Nodes of 5,000 nodes exceed the names-only body bound,
// so that form is served by an extender configured nodeCacheCapable
// false, as kube-scheduler sending them is.
func BenchmarkFilterScale(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			m, names := nvidiaCluster(b, nodes)
			ext, err := extender.New(extender.Config{Client: m, Bind: &gpu.Binder{Exec: nopBind{}, Waiter: nopWait{}}})
			if err != nil {
				b.Fatal(err)
			}
			whole, err := extender.New(extender.Config{Client: m, Bind: &gpu.Binder{Exec: nopBind{}, Waiter: nopWait{}},
				KubeScheduler: &configv1.Extender{URLPrefix: "http://x", FilterVerb: "filter", NodeCacheCapable: false}})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for i := range 2 * nodes {
				one := []string{names[i%nodes]}
				if res := ext.Filter(ctx, extenderv1.ExtenderArgs{Pod: gpuPod(fmt.Sprintf("placed-%d", i), 8000), NodeNames: &one}); len(*res.NodeNames) != 1 {
					b.Fatalf("placing pod %d: %+v", i, res)
				}
			}
			benchFilterForms(b, ext, whole, m.nodes, names)
		})
	}
}

// benchFilterForms measures Filter through the HTTP handler: NodeNames
// served by names, whole Nodes by whole.
func benchFilterForms(b *testing.B, names, whole *extender.Scheduler, nodes []corev1.Node, nodeNames []string) {
	forms := []struct {
		name string
		ext  *extender.Scheduler
		args extenderv1.ExtenderArgs
	}{
		{"NodeNames", names, extenderv1.ExtenderArgs{Pod: gpuPod("incoming", 8000), NodeNames: &nodeNames}},
		{"Nodes", whole, extenderv1.ExtenderArgs{Pod: gpuPod("incoming", 8000), Nodes: &corev1.NodeList{Items: nodes}}},
	}
	for _, f := range forms {
		b.Run(f.name, func(b *testing.B) {
			srv := httptest.NewServer(f.ext.Handler())
			defer srv.Close()
			body, err := json.Marshal(f.args)
			if err != nil {
				b.Fatal(err)
			}
			durations := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				resp, err := http.Post(srv.URL+"/filter", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				var res extenderv1.ExtenderFilterResult
				if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || res.Error != "" || chosen(res) != 1 {
					b.Fatalf("filter: %+v, %v", res, err)
				}
				_ = resp.Body.Close()
				durations = append(durations, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(durations)
			p99 := durations[min(len(durations)-1, len(durations)*99/100)]
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(len(body))/1024, "body-KiB")
		})
	}
}

// chosen is how many nodes a Filter result passes, in either form.
func chosen(res extenderv1.ExtenderFilterResult) int {
	switch {
	case res.NodeNames != nil:
		return len(*res.NodeNames)
	case res.Nodes != nil:
		return len(res.Nodes.Items)
	}
	return 0
}

type nopBind struct{ gpu.BindExecutor }
type nopWait struct{ gpu.Waiter }
