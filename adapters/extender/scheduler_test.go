package extender_test

import (
	"context"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/plancore/plancore/adapters/extender"
	"github.com/plancore/plancore/adapters/extender/extendertest"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/gpu"
)

// SchedulerVersion is the kube-scheduler .ci/kube-binary.sh builds: the
// newest v1.31 patch whose k8s.io/kube-scheduler staging module the module
// proxy serves.
const SchedulerVersion = "v1.31.13"

// schedulerBinary finds kube-scheduler: $PLANCORE_KUBE_SCHEDULER, else the
// build .ci/kube-binary.sh caches. A missing binary fails the test: it exists
// to show the extender works with the real client.
func schedulerBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PLANCORE_KUBE_SCHEDULER")
	if path == "" {
		path = filepath.Join(kubetest.CacheRoot(), SchedulerVersion, "kube-scheduler")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("kube-scheduler not found at %s: build it with `bash .ci/kube-binary.sh kube-scheduler %s` (bash .ci/run does) or set PLANCORE_KUBE_SCHEDULER", path, SchedulerVersion)
	}
	return path
}

// hamiExtender is kube-scheduler's extender entry for the extender at url:
// Filter, Prioritize and Bind of NVIDIA and Hygon pods, nodeCacheCapable
// true, as HAMi's chart configures it (with Prioritize).
func hamiExtender(url string) configv1.Extender {
	e := configv1.Extender{URLPrefix: url, FilterVerb: "filter", PrioritizeVerb: "prioritize", BindVerb: "bind", Weight: 1,
		NodeCacheCapable: true, HTTPTimeout: metav1.Duration{Duration: 30 * time.Second}}
	for _, r := range []string{"nvidia.com/gpu", "nvidia.com/gpumem", "hygon.com/dcunum", "hygon.com/dcumem"} {
		e.ManagedResources = append(e.ManagedResources, configv1.ExtenderManagedResource{Name: r, IgnoredByScheduler: true})
	}
	return e
}

// startScheduler runs kube-scheduler against the test's control plane with
// the extender entry ext, serving only the pods that name schedulerName
// (other tests' pods are left alone), and stops it when the test ends. Its
// log is printed if the test fails.
func startScheduler(t *testing.T, env *kubetest.Env, schedulerName string, ext configv1.Extender) {
	t.Helper()
	dir := t.TempDir()
	cfg := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	entry, err := yaml.Marshal([]configv1.Extender{ext})
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
profiles:
- schedulerName: %s
extenders:
%s`, kubeconfig, schedulerName, entry)
	configPath := filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "kube-scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(schedulerBinary(t), "--config", configPath, "--secure-port", "0", "--v", "2")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = logFile.Close()
		if t.Failed() {
			if out, err := os.ReadFile(logPath); err == nil {
				lines := strings.Split(string(out), "\n")
				t.Logf("kube-scheduler log (last 40 lines):\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
	})
}

// TestKubeScheduler schedules pods with kube-scheduler itself, configured
// nodeCacheCapable true with the extender for Filter, Prioritize and Bind
// (the configuration New is given, and accepts): 20 NVIDIA pods asking a
// 10 GiB share onto two nodes of two 40 GiB cards (16 shares), two Hygon
// pods and one CPU pod. Every device pod that fits is bound by the extender
// with the annotations HAMi's device plugin reads, no card holds more than
// it has, the four that do not fit stay unscheduled, and the CPU pod is
// scheduled without the extender.
func TestKubeScheduler(t *testing.T) {
	c := newCluster(t)
	srv := httptest.NewServer(c.ext.Handler())
	t.Cleanup(srv.Close)
	if _, err := extender.ForKubernetes(extender.KubeConfig{Client: c.env.Client, KubeScheduler: ptr.To(hamiExtender(srv.URL))}); err != nil {
		t.Fatalf("the configuration refused: %v", err)
	}
	nv1 := c.addNode(t, "ks-nv", extendertest.NVIDIA("ks1", 2, 40*gib), nil)
	nv2 := c.addNode(t, "ks-nv", extendertest.NVIDIA("ks2", 2, 40*gib), nil)
	dcu := c.addNode(t, "ks-dcu", extendertest.Hygon("ks3", 2), nil) // Hygon pods take a whole card by default (cores 100)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c.devicePlugin(ctx, t)
	c.schedulerName = "plancore-" + c.ns
	startScheduler(t, c.env, c.schedulerName, hamiExtender(srv.URL))

	var nvPods, dcuPods []*corev1.Pod
	for i := range 20 {
		nvPods = append(nvPods, c.addPod(t, fmt.Sprintf("ks-nv-%02d", i), map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10240"}))
	}
	for i := range 2 {
		dcuPods = append(dcuPods, c.addPod(t, fmt.Sprintf("ks-dcu-%d", i), map[string]string{"hygon.com/dcunum": "1", "hygon.com/dcumem": "4096"}))
	}
	cpuPod := c.addPod(t, "ks-cpu", map[string]string{"cpu": "100m"})

	// Wait until every pod is bound or marked unschedulable by the scheduler.
	settled := func() (bound, unschedulable int) {
		var list corev1.PodList
		if err := c.env.Client.List(context.Background(), &list, client.InNamespace(c.ns)); err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			switch {
			case p.Spec.NodeName != "":
				bound++
			case podUnschedulable(&p):
				unschedulable++
			}
		}
		return bound, unschedulable
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		b, u := settled()
		if b+u == len(nvPods)+len(dcuPods)+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 3 minutes %d pods bound and %d unschedulable of %d", b, u, len(nvPods)+len(dcuPods)+1)
		}
		time.Sleep(200 * time.Millisecond) // waiting for a real scheduler
	}

	nvBound, use := c.tallyBound(t, nvPods, nv1, nv2)
	if nvBound != 16 {
		t.Errorf("%d NVIDIA pods bound, want 16", nvBound)
	}
	dcuBound, dcuUse := c.tallyBound(t, dcuPods, dcu)
	if dcuBound != 2 {
		t.Errorf("%d Hygon pods bound, want 2", dcuBound)
	}
	maps.Copy(use, dcuUse)
	for id, u := range use {
		limit := int32(40 * gib)
		if strings.HasPrefix(id, "DCU-") {
			limit = 16 * gib
		}
		if u.memoryMiB > limit || u.pods > 10 {
			t.Errorf("device %s over-assigned: %d pods, %d MiB of %d", id, u.pods, u.memoryMiB, limit)
		}
	}
	if got := c.get(t, cpuPod); got.Spec.NodeName == "" || got.Annotations[gpu.AnnoAssignedNode] != "" {
		t.Errorf("the CPU pod: node %q, annotations %v", got.Spec.NodeName, got.Annotations)
	}
}

// TestKubeSchedulerNodes runs kube-scheduler configured nodeCacheCapable
// false, with the extender for Filter and Prioritize only (New refuses a
// bindVerb there): it sends whole Nodes, and the extender fits each pod to
// those objects as template nodes and answers in Nodes. Three NVIDIA pods,
// one Hygon pod and one CPU pod are placed by kube-scheduler on a node of
// their devices, past a node with no devices ("node unregistered"), and no
// pod is written on (template nodes assign nothing). Fails when the
// extender answers such a kube-scheduler in NodeNames: it reads Nodes, and
// every node is filtered out.
func TestKubeSchedulerNodes(t *testing.T) {
	c := newCluster(t)
	srv := httptest.NewUnstartedServer(nil)
	entry := hamiExtender("http://" + srv.Listener.Addr().String())
	entry.NodeCacheCapable, entry.BindVerb = false, ""
	ext, err := extender.ForKubernetes(extender.KubeConfig{Client: c.env.Client, Reader: c.cache, Options: gpu.Options{}, KubeScheduler: &entry})
	if err != nil {
		t.Fatalf("the configuration refused: %v", err)
	}
	srv.Config.Handler = ext.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	nv := c.addNode(t, "ksn-nv", extendertest.NVIDIA("ksn1", 2, 40*gib), nil)
	dcu := c.addNode(t, "ksn-dcu", extendertest.Hygon("ksn2", 2), nil)
	bare := c.addNode(t, "ksn-bare", nil, nil)
	c.schedulerName = "plancore-" + c.ns
	startScheduler(t, c.env, c.schedulerName, entry)

	want := map[string]string{} // pod name -> node
	var pods []*corev1.Pod
	for i := range 3 {
		p := c.addPod(t, fmt.Sprintf("ksn-nv-%d", i), map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10240"})
		pods, want[p.Name] = append(pods, p), nv
	}
	p := c.addPod(t, "ksn-dcu", map[string]string{"hygon.com/dcunum": "1", "hygon.com/dcumem": "4096"})
	pods, want[p.Name] = append(pods, p), dcu
	pods = append(pods, c.addPod(t, "ksn-cpu", map[string]string{"cpu": "100m"}))

	deadline := time.Now().Add(2 * time.Minute)
	for _, p := range pods {
		for {
			got := c.get(t, p)
			if got.Spec.NodeName != "" {
				if w, ok := want[p.Name]; ok && got.Spec.NodeName != w {
					t.Errorf("%s on %s, want %s", p.Name, got.Spec.NodeName, w)
				}
				if got.Spec.NodeName == bare && p.Name != "ksn-cpu" {
					t.Errorf("%s on the node without devices", p.Name)
				}
				if a := got.Annotations[gpu.AnnoAssignedNode]; a != "" {
					t.Errorf("%s written on (%s=%q): template nodes assign nothing", p.Name, gpu.AnnoAssignedNode, a)
				}
				break
			}
			if podUnschedulable(got) || time.Now().After(deadline) {
				t.Fatalf("%s not placed: %+v", p.Name, got.Status.Conditions)
			}
			time.Sleep(200 * time.Millisecond) // waiting for a real scheduler
		}
	}
}

func podUnschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}
