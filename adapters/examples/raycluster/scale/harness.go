package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/plancore/plancore/adapters/kube/kubetest"
)

var rayClusters = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}

// Config is one run of the harness.
type Config struct {
	Clusters     int           // RayClusters per operator
	Workers      int           // workers per cluster (a head besides)
	QPS          float64       // RayCluster creates per second
	Namespaces   int           // namespaces the clusters are spread over
	KubeletDelay time.Duration // from a pod's creation to it running and ready
	Operators    []string      // "plancore", "kuberay": one after another
	Timeout      time.Duration // per phase

	// Burst, when set, scales cluster 0 to BurstWorkers once every cluster is
	// ready, and cluster 1 by one worker right after.
	Burst        bool
	BurstWorkers int

	KubeRayVersion string
	CRDDir         string // KubeRay's config/crd/bases; "" finds it in the module cache
	PlancoreBin    string // "" builds ../ (the raycluster example)
	KubeRayBin     string // "" is .ci/kuberay-operator.sh's cached build

	OperatorQPS        float64 // both operators' client rate limit
	OperatorBurst      int
	PlancoreReconciles int
	PlancoreInFlight   int
	KubeRayReconciles  int

	// ProfileDir, when set, receives a CPU profile of plancore's operator
	// (plancore.cpu.pprof) over its first ProfileFor of the steady phase,
	// and its heap profile (plancore.heap.pprof) once every cluster is ready.
	ProfileDir string
	ProfileFor time.Duration
	// APIServerProfileDir, when set, receives a CPU profile of
	// kube-apiserver over each operator's first APIServerProfileFor of the
	// steady phase (<operator>.apiserver.cpu.pprof): what the API server
	// spends its CPU on while it serves that operator, the harness's
	// creates, kubelet and watches.
	APIServerProfileDir string
	APIServerProfileFor time.Duration

	pprofAddr string // plancore's -pprof-addr, chosen per start
	builtDir  string // where resolve built plancore's operator

	// Progress receives a line every ProgressEvery while a phase runs.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Row is one operator's results.
type Row struct {
	Operator    string
	Clusters    int
	Pods        int
	AllReady    time.Duration // first RayCluster seen to the last cluster ready
	FirstPodP50 time.Duration
	FirstPodP99 time.Duration
	Requests    map[string]int // by "verb resource", through the operator's proxy
	// RequestsUntilQuiet are the requests until the operator had sent
	// nothing but watches for quietFor after every cluster was ready.
	RequestsUntilQuiet map[string]int
	CPUSeconds         float64 // the operator's, from its start to all ready
	PeakHeapMiB        float64 // go_memstats_heap_inuse_bytes, sampled every 100 ms
	PeakRSSMiB         float64 // VmHWM
	APIServerCPU       float64 // kube-apiserver's CPU seconds over the same span
	EtcdCPU            float64
	Load               string // /proc/loadavg's 1, 5 and 15 minute averages when every cluster was ready
	// WatchesEnded counts, by resource, the operator's watches that ended
	// while it still wanted them (it re-opened each), as its proxy saw them.
	WatchesEnded map[string]int
	// SlowWatchersClosed counts, by resource, the watchers of any client
	// (the harness's own too) that the API server's watch cache closed
	// because they did not read their events fast enough
	// (apiserver_terminated_watchers_total over the phase).
	SlowWatchersClosed map[string]int
	// WatchCacheCapacity is the API server's watch cache capacity by
	// resource (watch_cache_capacity) when the operator's watches opened:
	// a watch's buffer is a 75th of it (at least 10 events), fixed when the
	// watch opens, and a watcher whose buffer is full when its budget runs
	// out is closed.
	WatchCacheCapacity map[string]int
	Burst              *BurstRow
}

// BurstRow is one operator's burst: cluster 0 from Workers to BurstWorkers,
// cluster 1 by one worker right after.
type BurstRow struct {
	AllExist    time.Duration // spec change seen to every burst pod seen
	AllReady    time.Duration // ... to every burst pod running and ready
	ChangedWait time.Duration // cluster 1's spec change seen to its new pod seen
	Requests    map[string]int
	CPUSeconds  float64
	PeakHeapMiB float64 // over the whole run, burst included
	PeakRSSMiB  float64
	Load        string
}

// Results is one run: a row per operator, each on its own control plane.
type Results struct {
	Config Config
	Rows   []Row
}

// Run measures each operator in turn, each on a control plane of its own
// started the same way, so neither meets what the other left behind: the
// API server's watch caches sized by the previous phase's churn (a watch's
// buffer is fixed, from its cache's capacity, when it opens), etcd's
// history, the objects.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if err := cfg.resolve(ctx); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "plancore-scale")
	if err != nil {
		return nil, err
	}
	res := &Results{Config: cfg}
	for _, name := range cfg.Operators {
		row, err := measureOn(ctx, cfg, dir, name)
		if err != nil {
			// The operators' logs stay in dir, which the error names.
			return res, fmt.Errorf("%s: %w", name, err)
		}
		res.Rows = append(res.Rows, *row)
	}
	return res, errors.Join(os.RemoveAll(dir), cfg.removeBuilt())
}

// measureOn starts a control plane, installs KubeRay's CRDs and measures
// one operator on it; dir keeps the operator's log and kubeconfig.
func measureOn(ctx context.Context, cfg Config, dir, name string) (*Row, error) {
	// KubeRay creates a Service per cluster; envtest's /24 holds 254.
	env, err := kubetest.StartWith(map[string]string{"service-cluster-ip-range": "10.0.0.0/16"})
	if err != nil {
		return nil, err
	}
	defer func() { _ = env.Stop() }()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	crdClient, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if err := installCRDs(ctx, crdClient, cfg.CRDDir); err != nil {
		return nil, err
	}
	// The harness's watches and kubelet end with this control plane, and
	// have returned before the next one starts (kubetest.StartWith sets
	// the logger they read).
	hctx, cancel := context.WithCancel(ctx)
	h, err := newHarness(hctx, env, cfg, dir)
	if err != nil {
		cancel()
		return nil, err
	}
	row, err := h.measure(hctx, name)
	cancel()
	h.stopped.Wait()
	return row, err
}

// removeBuilt removes the plancore operator that resolve built.
func (cfg *Config) removeBuilt() error {
	if cfg.builtDir == "" {
		return nil
	}
	return os.RemoveAll(cfg.builtDir)
}

// resolve fills in the defaults that need work: the CRDs, the binaries.
func (cfg *Config) resolve(ctx context.Context) error {
	var errs []error
	if cfg.Clusters < 1 || cfg.Workers < 0 || cfg.QPS <= 0 || cfg.Namespaces < 1 {
		errs = append(errs, fmt.Errorf("need clusters >= 1 (%d), workers >= 0 (%d), qps > 0 (%g), namespaces >= 1 (%d)",
			cfg.Clusters, cfg.Workers, cfg.QPS, cfg.Namespaces))
	}
	if cfg.Burst && (cfg.Clusters < 2 || cfg.BurstWorkers <= cfg.Workers) {
		errs = append(errs, fmt.Errorf("the burst needs clusters >= 2 (%d) and burst workers above workers (%d <= %d)",
			cfg.Clusters, cfg.BurstWorkers, cfg.Workers))
	}
	if cfg.APIServerProfileDir != "" && cfg.APIServerProfileFor < time.Second {
		errs = append(errs, fmt.Errorf("the API server's profile needs at least a second (%v)", cfg.APIServerProfileFor))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if cfg.CRDDir == "" {
		dir, err := moduleDir(ctx, "github.com/ray-project/kuberay/ray-operator@"+cfg.KubeRayVersion)
		if err != nil {
			return err
		}
		cfg.CRDDir = filepath.Join(dir, "config", "crd", "bases")
	}
	for _, op := range cfg.Operators {
		switch {
		case op == "plancore" && cfg.PlancoreBin == "":
			bin, err := buildPlancore(ctx)
			if err != nil {
				return err
			}
			cfg.PlancoreBin, cfg.builtDir = bin, filepath.Dir(bin)
		case op == "kuberay" && cfg.KubeRayBin == "":
			cfg.KubeRayBin = filepath.Join(kubeRayCache(), cfg.KubeRayVersion, "ray-operator")
			if _, err := os.Stat(cfg.KubeRayBin); err != nil {
				return fmt.Errorf("KubeRay's operator %s is not built: run `bash .ci/kuberay-operator.sh %s` from the repository root (a few minutes, once per machine)",
					cfg.KubeRayBin, cfg.KubeRayVersion)
			}
		}
	}
	return nil
}

// kubeRayCache agrees with .ci/kuberay-operator.sh.
func kubeRayCache() string {
	if d := os.Getenv("PLANCORE_KUBERAY_CACHE"); d != "" {
		return d
	}
	return kubetest.CacheDir("kuberay")
}

// moduleDir downloads a module through the Go module proxy (or finds it in
// the module cache) and returns its directory.
func moduleDir(ctx context.Context, modAtVersion string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", modAtVersion)
	cmd.Dir = os.TempDir() // outside any module
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", modAtVersion, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no directory (%s%v)", modAtVersion, m.Error, err)
	}
	return m.Dir, nil
}

// buildPlancore builds the raycluster example (this directory's parent)
// into a temporary directory.
func buildPlancore(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "plancore-scale-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "raycluster")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/plancore/plancore/adapters/examples/raycluster")
	cmd.Dir = sourceDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building plancore's operator: %w\n%s", err, out)
	}
	return bin, nil
}

// installCRDs creates every CRD of KubeRay's (RayCluster, RayJob, RayService:
// KubeRay's operator watches all three) and waits until they are served.
func installCRDs(ctx context.Context, c client.Client, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "ray.io_*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no KubeRay CRDs in %s (%v)", dir, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := c.Create(ctx, crd); err != nil {
			return fmt.Errorf("installing %s: %w", crd.Name, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayClusterList"})
		if c.List(ctx, list) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("KubeRay's RayCluster CRD not served after a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// harness is the shared machinery of a run: the control plane's clients,
// the observer's and the kubelet's watches.
type harness struct {
	cfg  Config
	env  *kubetest.Env
	cs   kubernetes.Interface
	dyn  dynamic.Interface
	obs  *observer
	kube *kubelet
	dir  string

	apiserverPID, etcdPID int
	// stopped is done once the watches and the kubelet have returned,
	// after the context newHarness was given ends.
	stopped sync.WaitGroup
}

func newHarness(ctx context.Context, env *kubetest.Env, cfg Config, dir string) (*harness, error) {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	h := &harness{cfg: cfg, env: env, cs: cs, dyn: dyn, obs: newObserver(), kube: newKubelet(cs, cfg.KubeletDelay), dir: dir}
	h.apiserverPID, h.etcdPID = controlPlanePIDs()
	pods := informers.NewSharedInformerFactory(cs, 0).Core().V1().Pods().Informer()
	_, err = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.obs.pod(obj, false); h.sawPod(obj) },
		UpdateFunc: func(_, obj any) { h.obs.pod(obj, false); h.sawPod(obj) },
		DeleteFunc: func(obj any) { h.obs.pod(obj, true) },
	})
	if err != nil {
		return nil, err
	}
	rcs := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0).ForResource(rayClusters).Informer()
	_, err = rcs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    h.obs.cluster,
		UpdateFunc: func(_, obj any) { h.obs.cluster(obj) },
	})
	if err != nil {
		return nil, err
	}
	h.stopped.Add(2)
	go func() { defer h.stopped.Done(); pods.Run(ctx.Done()) }()
	go func() { defer h.stopped.Done(); rcs.Run(ctx.Done()) }()
	h.kube.run(ctx, 64, &h.stopped)
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, rcs.HasSynced) {
		return nil, errors.New("the harness's watches did not sync")
	}
	return h, nil
}

func (h *harness) sawPod(obj any) {
	if p, ok := obj.(*corev1.Pod); ok {
		h.kube.saw(p)
	}
}

func (h *harness) namespace(op string, i int) string {
	return fmt.Sprintf("%s-%d", op, i%h.cfg.Namespaces)
}

// measure runs one operator through the steady phase (and the burst).
func (h *harness) measure(ctx context.Context, name string) (*Row, error) {
	for i := range h.cfg.Namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.namespace(name, i)}}
		if _, err := h.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	proxy, err := startProxy(h.env.Config)
	if err != nil {
		return nil, err
	}
	defer proxy.close()
	kc, err := proxy.kubeconfig(h.dir)
	if err != nil {
		return nil, err
	}
	apiCPU0, etcdCPU0 := procCPU(h.apiserverPID), procCPU(h.etcdPID)
	slow0, err := h.apiServerMetric(ctx, "apiserver_terminated_watchers_total")
	if err != nil {
		return nil, err
	}
	op, err := startOperator(&h.cfg, name, kc, h.dir)
	if err != nil {
		return nil, err
	}
	defer op.stop()
	if err := waitWatching(ctx, op, proxy); err != nil {
		return nil, err
	}
	capacity, err := h.apiServerMetric(ctx, "watch_cache_capacity")
	if err != nil {
		return nil, err
	}
	var profiled, apiProfiled <-chan error
	if name == "plancore" && h.cfg.ProfileDir != "" {
		profiled = profile(&h.cfg, h.cfg.ProfileFor, filepath.Join(h.cfg.ProfileDir, "plancore.cpu.pprof"))
	}
	if h.cfg.APIServerProfileDir != "" {
		apiProfiled = apiServerProfile(h.env.Config, h.cfg.APIServerProfileFor, filepath.Join(h.cfg.APIServerProfileDir, name+".apiserver.cpu.pprof"))
	}
	if err := h.createClusters(ctx, name); err != nil {
		return nil, err
	}
	prefix := name + "-"
	if err := h.wait(ctx, name, op, func() bool {
		_, _, _, all := h.obs.steady(prefix)
		return all && h.obs.progress(prefix).clusters == h.cfg.Clusters
	}); err != nil {
		return nil, fmt.Errorf("waiting for every cluster to be ready: %w", err)
	}
	first, last, lat, _ := h.obs.steady(prefix)
	row := &Row{Operator: name, Clusters: h.cfg.Clusters, Pods: h.cfg.Clusters * (1 + h.cfg.Workers),
		AllReady: last.Sub(first), FirstPodP50: quantile(lat, 0.5), FirstPodP99: quantile(lat, 0.99),
		Requests: proxy.snapshot(), CPUSeconds: op.cpuSeconds(), PeakHeapMiB: op.peakHeapMiB(), PeakRSSMiB: op.vmHWM(),
		APIServerCPU: procCPU(h.apiserverPID) - apiCPU0, EtcdCPU: procCPU(h.etcdPID) - etcdCPU0, Load: loadAvg(),
		WatchesEnded: proxy.endedWatches(), WatchCacheCapacity: capacity}
	slow, err := h.apiServerMetric(ctx, "apiserver_terminated_watchers_total")
	if err != nil {
		return nil, err
	}
	row.SlowWatchersClosed = diff(slow, slow0)
	if row.RequestsUntilQuiet, err = waitQuiet(ctx, op, proxy, quietFor, time.Minute); err != nil {
		return nil, err
	}
	if err := waitProfiles(&h.cfg, profiled, apiProfiled); err != nil {
		return nil, err
	}
	if h.cfg.Burst {
		if row.Burst, err = h.burst(ctx, name, op, proxy); err != nil {
			return nil, fmt.Errorf("burst: %w", err)
		}
		row.Burst.PeakHeapMiB, row.Burst.PeakRSSMiB = op.peakHeapMiB(), op.vmHWM()
	}
	op.stop()
	return row, nil
}

// waitProfiles waits for the profiles under way (nil channels are none)
// and then takes plancore's heap profile.
func waitProfiles(cfg *Config, profiled, apiProfiled <-chan error) error {
	if profiled != nil {
		err := errors.Join(<-profiled, heapProfile(cfg, filepath.Join(cfg.ProfileDir, "plancore.heap.pprof")))
		if err != nil {
			return fmt.Errorf("profiling: %w", err)
		}
	}
	if apiProfiled != nil {
		if err := <-apiProfiled; err != nil {
			return fmt.Errorf("profiling kube-apiserver: %w", err)
		}
	}
	return nil
}

// quietFor is how long an operator sends nothing but watches before it
// counts as done with a phase.
const quietFor = 2 * time.Second

// waitQuiet waits until the operator has sent no request but watches for
// quiet (or until limit passes) and returns its requests by then: the
// status writes and events a pass queued before every cluster was ready
// and sent after.
func waitQuiet(ctx context.Context, op *operatorProc, proxy *countingProxy, quiet, limit time.Duration) (map[string]int, error) {
	active := func(c map[string]int) int {
		n := 0
		for k, v := range c {
			if !strings.HasPrefix(k, "watch ") {
				n += v
			}
		}
		return n
	}
	start := time.Now()
	last, since := active(proxy.snapshot()), time.Now()
	for time.Since(since) < quiet && time.Since(start) < limit {
		if err := op.alive(); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if n := active(proxy.snapshot()); n != last {
			last, since = n, time.Now()
		}
	}
	return proxy.snapshot(), nil
}

// createClusters creates the clusters at cfg.QPS, cluster i in namespace
// i mod Namespaces; a create that lags does not hold up the next.
func (h *harness) createClusters(ctx context.Context, op string) error {
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range h.cfg.Clusters {
		if d := time.Until(start.Add(time.Duration(float64(i) / h.cfg.QPS * float64(time.Second)))); d > 0 {
			time.Sleep(d)
		}
		rc := rayClusterTemplate(h.namespace(op, i), fmt.Sprintf("raycluster-%d", i), h.cfg.Workers)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.dyn.Resource(rayClusters).Namespace(rc.GetNamespace()).Create(ctx, rc, metav1.CreateOptions{}); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// wait polls done until it holds, printing a progress line now and then
// and when it holds;
// it fails if the operator exits or the phase times out.
func (h *harness) wait(ctx context.Context, name string, op *operatorProc, done func() bool) error {
	start := time.Now()
	next := start.Add(h.cfg.ProgressEvery)
	for !done() {
		if err := op.alive(); err != nil {
			return err
		}
		if time.Since(start) > h.cfg.Timeout {
			h.progress(name, start)
			return fmt.Errorf("timed out after %v", h.cfg.Timeout)
		}
		if h.cfg.Progress != nil && time.Now().After(next) {
			h.progress(name, start)
			next = next.Add(h.cfg.ProgressEvery)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The last line of a phase, so a phase shorter than ProgressEvery
	// still reports where it ended.
	h.progress(name, start)
	return nil
}

func (h *harness) progress(name string, start time.Time) {
	if h.cfg.Progress == nil {
		return
	}
	p := h.obs.progress(name + "-")
	fmt.Fprintf(h.cfg.Progress, "%s %6.1fs: clusters %d/%d seen, %d ready; pods %d exist, %d ready\n",
		name, time.Since(start).Seconds(), p.clusters, h.cfg.Clusters, p.readyClusters, p.pods, p.readyPods)
}

// burst scales cluster 0 to BurstWorkers and, once that change is seen,
// cluster 1 by one worker.
func (h *harness) burst(ctx context.Context, name string, op *operatorProc, proxy *countingProxy) (*BurstRow, error) {
	big, small := h.namespace(name, 0)+"/raycluster-0", h.namespace(name, 1)+"/raycluster-1"
	before, cpu0 := proxy.snapshot(), op.cpuSeconds()
	if err := h.scale(ctx, big, h.cfg.BurstWorkers); err != nil {
		return nil, err
	}
	for h.obs.snapshot(big).changed.IsZero() {
		time.Sleep(time.Millisecond)
	}
	if err := h.scale(ctx, small, h.cfg.Workers+1); err != nil {
		return nil, err
	}
	err := h.wait(ctx, name, op, func() bool {
		b, s := h.obs.snapshot(big), h.obs.snapshot(small)
		return !b.ready.IsZero() && !s.exist.IsZero()
	})
	if err != nil {
		return nil, err
	}
	b, s := h.obs.snapshot(big), h.obs.snapshot(small)
	return &BurstRow{AllExist: b.exist.Sub(b.changed), AllReady: b.ready.Sub(b.changed), ChangedWait: s.exist.Sub(s.changed),
		Requests: diff(proxy.snapshot(), before), CPUSeconds: op.cpuSeconds() - cpu0, Load: loadAvg()}, nil
}

// scale merge-patches the replicas (and maxReplicas) of a cluster's only
// worker group.
func (h *harness) scale(ctx context.Context, key string, workers int) error {
	ns, name, _ := strings.Cut(key, "/")
	patch := map[string]any{"spec": map[string]any{"workerGroupSpecs": []any{workerGroup(workers)}}}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = h.dyn.Resource(rayClusters).Namespace(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// loadAvg is the machine's load averages over 1, 5 and 15 minutes.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// apiServerMetric reads one of the API server's metrics by resource:
// apiserver_terminated_watchers_total (the watchers its watch cache closed
// because their client read too slowly), watch_cache_capacity.
func (h *harness) apiServerMetric(ctx context.Context, name string) (map[string]int, error) {
	raw, err := h.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return parseMetric(raw, name, "resource"), nil
}

// parseMetric sums, by the value of label, the samples of a counter or
// gauge in Prometheus's text format.
func parseMetric(text []byte, name, label string) map[string]int {
	out := map[string]int{}
	for _, line := range strings.Split(string(text), "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		key := ""
		for _, l := range strings.Split(labels, ",") {
			if k, val, ok := strings.Cut(l, "="); ok && k == label {
				key = strings.Trim(val, `"`)
			}
		}
		out[key] += int(v)
	}
	return out
}
