// Command scale measures RayCluster operators against a real API server, the
// way KubeRay's own perf tests do (benchmark/perf-tests in its repository):
// N RayClusters of a head and 3 workers spread over namespaces, created at a
// given rate, timed until every cluster is ready.
//
// It starts etcd and kube-apiserver (adapters/kube/kubetest), installs
// KubeRay's CRDs from its Go module, and runs each operator named by
// -operators in turn as its own process: plancore's (the raycluster example
// with -kubeconfig) and KubeRay's (built by .ci/kuberay-operator.sh). A fake
// kubelet binds each new pod to a node and reports it Running and Ready after
// -kubelet-delay. Each operator talks to the API server through a counting
// proxy, so its requests are counted by verb and resource; its CPU time comes
// from /proc/<pid>/stat and its peak heap from sampling its metrics endpoint.
// A cluster is ready when all its 1+workers pods are Running and Ready, as
// the harness's own watch sees them; the operators' status fields are not
// read. See the README's "Scale" section.
//
//	cd adapters && go run ./examples/raycluster/scale -clusters 100 -operators plancore,kuberay
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	cfg := Config{Progress: os.Stderr}
	flag.IntVar(&cfg.Clusters, "clusters", 100, "RayClusters per operator")
	flag.IntVar(&cfg.Workers, "workers", 3, "workers per cluster (a head besides)")
	flag.Float64Var(&cfg.QPS, "qps", 100, "RayCluster creates per second")
	flag.IntVar(&cfg.Namespaces, "namespaces", 100, "namespaces the clusters are spread over")
	flag.DurationVar(&cfg.KubeletDelay, "kubelet-delay", time.Second, "from a pod's creation to it running and ready")
	ops := flag.String("operators", "plancore,kuberay", "operators to measure, one after another: plancore, kuberay")
	flag.DurationVar(&cfg.Timeout, "timeout", 30*time.Minute, "per phase")
	flag.BoolVar(&cfg.Burst, "burst", false, "once every cluster is ready, scale cluster 0 to -burst-workers and cluster 1 by one worker")
	flag.IntVar(&cfg.BurstWorkers, "burst-workers", 500, "workers of the burst cluster")
	flag.StringVar(&cfg.KubeRayVersion, "kuberay-version", "v1.5.0", "KubeRay module version (CRDs and operator)")
	flag.StringVar(&cfg.CRDDir, "crds", "", "KubeRay's CRD directory (default: the module's, from the module cache)")
	flag.StringVar(&cfg.PlancoreBin, "plancore-bin", "", "plancore's operator binary (default: build ../)")
	flag.StringVar(&cfg.KubeRayBin, "kuberay-bin", "", "KubeRay's operator binary (default: .ci/kuberay-operator.sh's cache)")
	flag.Float64Var(&cfg.OperatorQPS, "operator-qps", 100, "both operators' client rate limit (KubeRay's default)")
	flag.IntVar(&cfg.OperatorBurst, "operator-burst", 200, "both operators' client burst (KubeRay's default)")
	flag.IntVar(&cfg.PlancoreReconciles, "plancore-reconciles", 8, "plancore's MaxConcurrentReconciles")
	flag.IntVar(&cfg.PlancoreInFlight, "plancore-in-flight", 16, "plancore's creates in flight per pass")
	flag.IntVar(&cfg.KubeRayReconciles, "kuberay-reconciles", 1, "KubeRay's --reconcile-concurrency (its default is 1)")
	flag.StringVar(&cfg.ProfileDir, "profile", "", "directory for a CPU profile of plancore's operator over the start of its steady phase")
	flag.DurationVar(&cfg.ProfileFor, "profile-for", 30*time.Second, "length of that profile")
	flag.StringVar(&cfg.APIServerProfileDir, "apiserver-profile", "", "directory for a CPU profile of kube-apiserver over the start of each operator's steady phase (<operator>.apiserver.cpu.pprof)")
	flag.DurationVar(&cfg.APIServerProfileFor, "apiserver-profile-for", 30*time.Second, "length of that profile")
	flag.DurationVar(&cfg.ProgressEvery, "progress", 2*time.Second, "progress line interval")
	flag.Parse()
	cfg.Operators = strings.Split(*ops, ",")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := Run(ctx, cfg)
	if res != nil {
		fmt.Print(res.Markdown())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
