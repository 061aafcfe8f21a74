// Command extender runs plancore's kube-scheduler extender (adapters/extender)
// against a throwaway API server and schedules a few pods by calling its
// HTTP endpoints the way kube-scheduler does: POST /filter with the pod and
// the candidate node names, then POST /bind with the chosen node.
//
// The API server comes from adapters/kube/kubetest (build it once with
// .ci/kube-apiserver.sh). Its Nodes carry the annotations HAMi's device
// plugins write: two nodes of two NVIDIA cards and one of two Hygon DCUs.
// There is no kubelet, so the example plays the device plugin's part of an
// allocation too (adapters/extender/extendertest.DevicePlugin): it marks
// each bound pod allocated and releases the node lock its Bind took.
//
//	go run ./examples/extender
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	configv1 "k8s.io/kube-scheduler/config/v1"

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
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Placement is where one pod went.
type Placement struct {
	Pod     string
	Node    string // "" when no node fits
	Devices string // the devices-to-allocate annotation Filter wrote
	Failed  map[string]string
}

// podSpec is one pod the example schedules.
type podSpec struct {
	name   string
	limits map[string]string
}

var nodes = []struct {
	name    string
	devices []gpu.Device
}{
	{"gpu-a", extendertest.NVIDIA("a", 2, 80*1024)},
	{"gpu-b", extendertest.NVIDIA("b", 2, 80*1024)},
	{"dcu-a", extendertest.Hygon("c", 2)},
}

var pods = []podSpec{
	{"train", map[string]string{"nvidia.com/gpu": "2", "nvidia.com/gpumem": "40000"}},
	{"infer-1", map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem": "20000"}},
	{"infer-2", map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem": "20000"}},
	{"dcu-job", map[string]string{"hygon.com/dcunum": "1", "hygon.com/dcumem": "8000"}},
	{"too-big", map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem": "100000"}},
}

func run(ctx context.Context, out io.Writer) ([]Placement, error) {
	env, err := kubetest.Start()
	if err != nil {
		return nil, err
	}
	defer func() { _ = env.Stop() }()
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	if err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the cache never synced")
	}
	// The entry kube-scheduler would have for this extender: checked when the
	// extender starts, and it bounds each request for names only.
	entry := configv1.Extender{URLPrefix: "http://127.0.0.1", FilterVerb: "filter", PrioritizeVerb: "prioritize",
		BindVerb: "bind", Weight: 1, NodeCacheCapable: true}
	ext, err := extender.ForKubernetes(extender.KubeConfig{Client: env.Client, Reader: c, KubeScheduler: &entry})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: ext.Handler()}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	url := "http://" + l.Addr().String()
	fmt.Fprintf(out, "extender listening on %s (POST /filter, /prioritize, /bind)\n", url)

	var names []string
	for _, n := range nodes {
		if err := extendertest.AddNode(ctx, env.Client, n.name, n.devices, nil); err != nil {
			return nil, err
		}
		names = append(names, n.name)
		fmt.Fprintf(out, "node %s: %d × %s\n", n.name, len(n.devices), n.devices[0].Model)
	}
	ns := "default"
	go extendertest.DevicePlugin(ctx, env.Client, ns, nil)

	var placed []Placement
	for _, ps := range pods {
		p, err := createPod(ctx, env.Client, ns, ps)
		if err != nil {
			return nil, err
		}
		pl, err := schedule(ctx, env.Client, url, p, names)
		if err != nil {
			return nil, err
		}
		placed = append(placed, pl)
		report(out, pl)
	}
	return placed, nil
}

func createPod(ctx context.Context, c client.Client, ns string, ps podSpec) (*corev1.Pod, error) {
	limits := corev1.ResourceList{}
	for k, v := range ps.limits {
		limits[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ps.name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: limits}}}},
	}
	return p, c.Create(ctx, p)
}

// schedule does what kube-scheduler does with an extender: Filter over the
// candidate names, then Bind to the one node Filter returned.
func schedule(ctx context.Context, c client.Client, url string, p *corev1.Pod, names []string) (Placement, error) {
	var res extenderv1.ExtenderFilterResult
	if err := post(ctx, url+"/filter", extenderv1.ExtenderArgs{Pod: p, NodeNames: &names}, &res); err != nil {
		return Placement{}, err
	}
	if res.Error != "" {
		return Placement{}, fmt.Errorf("filter %s: %s", p.Name, res.Error)
	}
	pl := Placement{Pod: p.Name, Failed: res.FailedNodes}
	if res.NodeNames == nil || len(*res.NodeNames) == 0 {
		return pl, nil
	}
	pl.Node = (*res.NodeNames)[0]
	var bind extenderv1.ExtenderBindingResult
	args := extenderv1.ExtenderBindingArgs{PodName: p.Name, PodNamespace: p.Namespace, PodUID: p.UID, Node: pl.Node}
	if err := post(ctx, url+"/bind", args, &bind); err != nil {
		return Placement{}, err
	}
	if bind.Error != "" {
		return Placement{}, fmt.Errorf("bind %s to %s: %s", p.Name, pl.Node, bind.Error)
	}
	var got corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
		return Placement{}, err
	}
	for k, v := range got.Annotations {
		if strings.HasSuffix(k, "devices-to-allocate") {
			pl.Devices = v
		}
	}
	return pl, nil
}

func post(ctx context.Context, url string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", url, resp.Status, msg)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func report(out io.Writer, pl Placement) {
	if pl.Node == "" {
		fmt.Fprintf(out, "%-8s fits nowhere:\n", pl.Pod)
		for _, n := range nodes {
			fmt.Fprintf(out, "           %s: %s\n", n.name, pl.Failed[n.name])
		}
		return
	}
	fmt.Fprintf(out, "%-8s → %s, devices %s\n", pl.Pod, pl.Node, pl.Devices)
}
