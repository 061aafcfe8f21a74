package reconcile_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/internal/cputime"
	"github.com/plancore/plancore/reconcile"
)

// benchCluster builds a 10-group cluster with 1,000 worker pods per group.
// mix adds, per group kind, unhealthy pods (groups 0-2), a 10 % surplus
// (groups 3-6) and multi-host replica groups of 4 (groups 8-9).
func benchCluster(mix bool, surplusAll bool) reconcile.Snapshot {
	var groups []reconcile.WorkerGroup
	var pods []corev1.Pod
	pods = append(pods, head("rc-head-aaaaa"))
	for gi := range 10 {
		name := fmt.Sprintf("group-%d", gi)
		g := group(name, 1000)
		g.MaxReplicas = i32(2000)
		hosts := 1
		if mix && gi >= 8 {
			hosts = 4
			g.NumOfHosts = 4
			g.Replicas = i32(250)
		}
		if surplusAll || (mix && gi >= 3 && gi <= 6) {
			g.Replicas = i32(*g.Replicas * 9 / 10)
		}
		groups = append(groups, g)
		for k := range 1000 {
			var p corev1.Pod
			if hosts > 1 {
				r := k / hosts
				p = mhWorker(fmt.Sprintf("%s-w%04d", name, k), name, fmt.Sprintf("%s-r%03d", name, r), r, k%hosts)
			} else {
				p = worker(fmt.Sprintf("%s-w%04d", name, k), name, index(k))
			}
			if mix && gi <= 2 && k%100 == 0 {
				p.Status.Phase = corev1.PodFailed
			}
			pods = append(pods, p)
		}
	}
	return snap(cluster(groups...), pods...)
}

// BenchmarkBaselineScan10kPods is the floor: one bare pass over the pods
// reading ray.io/cluster, ray.io/group and the phase.
func BenchmarkBaselineScan10kPods(b *testing.B) {
	s := benchCluster(true, false)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for i := range s.Pods {
			p := &s.Pods[i]
			if p.Labels[reconcile.LabelCluster] == "rc" && p.Labels[reconcile.LabelGroup] != "" && p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
	}
	_ = n
}

// BenchmarkLabelPass10k is the baseline: one pass reading the cluster,
// group, node-type, replica-name and replica-index labels of every pod.
func BenchmarkLabelPass10k(b *testing.B) {
	s := benchCluster(false, false)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for i := range s.Pods {
			l := s.Pods[i].Labels
			if l[reconcile.LabelCluster] == "rc" && l[reconcile.LabelGroup] != "" && l[reconcile.LabelNodeType] != "" {
				n++
			}
			if l[reconcile.LabelReplicaName] != "" || l[reconcile.LabelReplicaIndex] != "" {
				n++
			}
		}
	}
	_ = n
}

func benchDecide(b *testing.B, s reconcile.Snapshot) {
	o := opts()
	p, err := reconcile.Decide(s, o)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(p.Actions)), "actions")
	b.ReportAllocs()
	// One thread runs the loop, so that its CPU time is Decide's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := cputime.Thread()
	for b.Loop() {
		if _, err := reconcile.Decide(s, o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cputime.Thread()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkPlan10kPods plans a 10-group cluster of 10,000 workers with
// unhealthy pods (30 deletes), surplus pods (400 scale-down deletes) and two
// multi-host groups.
func BenchmarkPlan10kPods(b *testing.B) { benchDecide(b, benchCluster(true, false)) }

// TestValidateBuildsNoPathOnValidInput: Snapshot.Validate builds a field path
// only when a check fails, and finds repeated group names without a map, so
// on the 10-group, 10,001-pod cluster it allocates 45 times (about 80 under
// -race, which varies):
// the pod table (1), and per group and for the head the generated pod-name
// check (3) and the label-key check (1), which build strings for Kubernetes'
// validators. Breaking it: build any path eagerly again (field.NewPath outside
// an error branch), or a map of group names per pass.
func TestValidateBuildsNoPathOnValidInput(t *testing.T) {
	s := benchCluster(true, false)
	allocs := testing.AllocsPerRun(20, func() {
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
	})
	want := 45.0
	if raceDetector {
		// The validators' strings stay on the heap, and the race runtime's
		// own allocations vary from run to run (73 to 82 over 60 runs): the
		// exact bound is checked without -race (.ci/run's budget step).
		want = 90
	}
	if allocs > want {
		t.Errorf("Snapshot.Validate allocates %v times on a valid 10-group snapshot, want at most %v", allocs, want)
	}
}

// BenchmarkDecideSteady10k plans the same cluster with nothing to do.
func BenchmarkDecideSteady10k(b *testing.B) { benchDecide(b, benchCluster(false, false)) }

// informerPods gives s's pods as an informer cache holds them: each pod
// decoded on its own (as from a watch event) with every string and map its
// own, in a random arrival order with other allocations in between. In
// index order the result lists them as s does, which is a random order in
// memory, as a cache's index hands them out; in arrival order it lists them
// as they lie in memory, the order kube.PodLister gives them in.
func informerPods(b *testing.B, s reconcile.Snapshot, arrivalOrder bool) reconcile.Snapshot {
	r := rand.New(rand.NewPCG(1, 2))
	arrival := r.Perm(len(s.Pods))
	decoded := make([]*corev1.Pod, len(s.Pods))
	var other [][]byte
	for _, i := range arrival {
		data, err := s.Pods[i].Marshal()
		if err != nil {
			b.Fatal(err)
		}
		p := &corev1.Pod{}
		if err := p.Unmarshal(data); err != nil {
			b.Fatal(err)
		}
		decoded[i] = p
		other = append(other[len(other)/64*64:], make([]byte, 64+r.IntN(4096)))
	}
	out := s
	out.Pods = make([]corev1.Pod, len(s.Pods))
	for k := range out.Pods {
		i := k
		if arrivalOrder {
			i = arrival[k]
		}
		out.Pods[k] = *decoded[i]
	}
	return out
}

// BenchmarkDecideSteady10kInformer is BenchmarkDecideSteady10k on the same
// pods laid out as an informer cache holds them (informerPods), read in the
// index's random order and in memory order: the difference between the
// three is what the pods' memory costs Decide, beside its own work.
func BenchmarkDecideSteady10kInformer(b *testing.B) {
	s := benchCluster(false, false)
	b.Run("index-order", func(b *testing.B) { benchDecide(b, informerPods(b, s, false)) })
	b.Run("arrival-order", func(b *testing.B) { benchDecide(b, informerPods(b, s, true)) })
}

// BenchmarkDecideScaleDown10k plans a 10 % scale-down in every group.
func BenchmarkDecideScaleDown10k(b *testing.B) { benchDecide(b, benchCluster(false, true)) }

// BenchmarkPlan10kPodsPendingDelete is BenchmarkPlan10kPods with one delete in
// flight in group 0, so the expectations are checked against a view of all
// 10,000 pods, as a controller does between a delete and its watch event.
func BenchmarkPlan10kPodsPendingDelete(b *testing.B) {
	s := benchCluster(true, false)
	st, err := expectations.New(expectations.Options{})
	if err != nil {
		b.Fatal(err)
	}
	owner := expectations.Owner{Namespace: s.Cluster.Namespace, Name: s.Cluster.Name, UID: s.Cluster.UID}
	if _, err := st.Record(t0, expectations.Record{Owner: owner, Group: "group-0", Action: expectations.Delete, Pod: "group-0-w0001"}); err != nil {
		b.Fatal(err)
	}
	s.Expectations = st
	benchDecide(b, s)
}
