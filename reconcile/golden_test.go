package reconcile_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/reconcile"
)

var update = flag.Bool("update", false, "rewrite testdata/*.txt golden transcripts")

type goldenCase struct {
	name string
	snap reconcile.Snapshot
	opts reconcile.Options
}

func derived(o reconcile.Options) reconcile.Options {
	o.NameMode = reconcile.NameModeDerived
	return o
}

func goldenCases() []goldenCase {
	mhHealthy := []corev1.Pod{mhWorker("a0", "tpu", "tpu-A1", 0, 0), mhWorker("a1", "tpu", "tpu-A1", 0, 1),
		mhWorker("b0", "tpu", "tpu-B1", 1, 0), mhWorker("b1", "tpu", "tpu-B1", 1, 1)}
	random := opts()
	random.RandomPodDelete = true
	randomCompat := compat()
	randomCompat.RandomPodDelete = true
	wtd := func() reconcile.Snapshot {
		g := group("small-group", 3)
		g.MaxReplicas = i32(10000)
		g.ScaleStrategy.WorkersToDelete = []string{"pod2", "missing"}
		c := cluster(g)
		c.Spec.EnableInTreeAutoscaling = bptr(true)
		return snap(c, withHead(worker("pod1", "small-group", created(-5*time.Hour)), worker("pod2", "small-group"),
			worker("pod3", "small-group"), worker("pod4", "small-group"), worker("pod5", "small-group", notReady()))...)
	}
	suspending := cluster(group("small", 2))
	suspending.Conditions = []metav1.Condition{{Type: reconcile.ConditionSuspending, Status: metav1.ConditionTrue}}
	recreate := recreateCluster()
	forming := snap(cluster(mhGroup("tpu", 2, 2)), withHead(mhHealthy[0], mhHealthy[1], mhWorker("c0", "tpu", "tpu-C1", 1, 0))...)
	forming.Forming = []reconcile.FormingGroup{{Group: "tpu", ReplicaName: "tpu-C1", ReplicaIndex: 1, Missing: []int{1},
		Attempts: 1, FirstFailure: t0.Add(-time.Minute), LastAttempt: t0.Add(-time.Minute), LastError: "exceeded quota: gpu"}}
	pendingSnap := snap(cluster(group("a", 2), group("b", 1)), withHead(worker("a1", "a", index(0)))...)
	pending(&pendingSnap, "a", "rc-a-worker-zzzzz")
	mtls := snap(cluster(group("small", 1)), withHead()...)
	mtls.TLS = reconcile.TLS{Enabled: true, NotReadyError: `secret "rc-ca" not found`}
	zeroHosts := group("small", 2)
	zeroHosts.NumOfHosts = 0
	longName := cluster(group("group-with-a-rather-long-name", 1))
	longName.Name = "ray-cluster-0000000000000000000000011111111122222222"
	return []goldenCase{
		{"fresh_cluster", snap(cluster(group("small", 2), mhGroup("tpu", 1, 2))), opts()},
		{"fresh_cluster_derived_names", snap(cluster(group("small", 2), mhGroup("tpu", 1, 2))), derived(opts())},
		{"deterministic_head_long_names", snap(longName), func() reconcile.Options { o := opts(); o.DeterministicHeadName = true; return o }()},
		{"steady_state", snap(cluster(group("small", 2)), withHead(worker("w0", "small", index(0)), worker("w1", "small", index(1)))...), opts()},
		{"suspending", snap(suspending, withHead(worker("w0", "small"))...), opts()},
		{"recreate_spec_changed", snap(recreate, head("rc-head-aaaaa", annotate(reconcile.AnnotationKubeRayVersion, "v1.7.0"), annotate(reconcile.AnnotationRecreateHash, "OLDHASH")), worker("w1", "small")), opts()},
		{"recreate_version_skip", snap(recreate, head("rc-head-aaaaa", annotate(reconcile.AnnotationKubeRayVersion, "v1.6.1"), annotate(reconcile.AnnotationRecreateHash, "OLDHASH")), worker("w1", "small")), opts()},
		{"head_failed", snap(cluster(group("small", 1)), head("rc-head-aaaaa", phase(corev1.PodFailed)), worker("w1", "small")), opts()},
		{"two_heads", snap(cluster(group("small", 1)), head("headNode2"), head("headNode")), opts()},
		{"unhealthy_worker_default", snap(cluster(group("a", 2), group("b", 1)), withHead(worker("a1", "a", phase(corev1.PodFailed)), worker("a2", "a", exited(corev1.RestartPolicyNever)))...), opts()},
		{"unhealthy_worker_compat", snap(cluster(group("a", 2), group("b", 1)), withHead(worker("a1", "a", phase(corev1.PodFailed)), worker("a2", "a", exited(corev1.RestartPolicyNever)))...), compat()},
		{"workers_to_delete_default", wtd(), random},
		{"workers_to_delete_compat", wtd(), randomCompat},
		{"terminating_default", snap(cluster(group("small", 2)), withHead(worker("w0", "small", index(0), terminatingPod()), worker("w1", "small", index(1)))...), opts()},
		{"terminating_compat", snap(cluster(group("small", 2)), withHead(worker("w0", "small", index(0), terminatingPod()), worker("w1", "small", index(1)))...), compat()},
		{"multihost_replace_unhealthy", snap(cluster(mhGroup("tpu", 2, 2)), withHead(mhWorker("a0", "tpu", "tpu-A1", 0, 0, phase(corev1.PodFailed)), mhHealthy[1], mhHealthy[2], mhHealthy[3])...), derived(opts())},
		{"multihost_incomplete", snap(cluster(mhGroup("tpu", 2, 2)), withHead(mhHealthy[0], mhHealthy[2], mhHealthy[3])...), opts()},
		{"multihost_forming_retry", forming, derived(opts())},
		{"multihost_scale_down_legacy", snap(cluster(mhGroup("tpu", 1, 2)), withHead(worker("l0", "tpu"), worker("l1", "tpu"), mhHealthy[0], mhHealthy[1])...), opts()},
		{"expectations_pending", pendingSnap, opts()},
		{"mtls_not_ready", mtls, opts()},
		{"zero_hosts_default", snap(cluster(zeroHosts), withHead(worker("w1", "small"))...), opts()},
		{"zero_hosts_compat", snap(cluster(zeroHosts), withHead(worker("w1", "small"))...), compat()},
		{"group_not_in_spec_and_foreign", snap(cluster(group("small", 1)), withHead(worker("old", "removed"), func() corev1.Pod {
			p := worker("prev", "small")
			p.OwnerReferences[0].UID = "uid-previous"
			return p
		}())...), opts()},
	}
}

// renderInput summarizes a snapshot for the golden file's header.
func renderInput(s reconcile.Snapshot, o reconcile.Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# cluster %s/%s", s.Cluster.Namespace, s.Cluster.Name)
	if o.Compat == reconcile.KubeRayV170().Compat {
		b.WriteString("  compat KubeRayV170")
	}
	if o.NameMode != "" {
		fmt.Fprintf(&b, "  names %s", o.NameMode)
	}
	if o.RandomPodDelete {
		b.WriteString("  random-pod-delete")
	}
	b.WriteByte('\n')
	for _, g := range s.Cluster.Spec.WorkerGroups {
		r := "nil"
		if g.Replicas != nil {
			r = fmt.Sprint(*g.Replicas)
		}
		fmt.Fprintf(&b, "# group %s replicas %s hosts %d workersToDelete %v\n", g.GroupName, r, g.NumOfHosts, g.ScaleStrategy.WorkersToDelete)
	}
	pods := append([]corev1.Pod(nil), s.Pods...)
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		fmt.Fprintf(&b, "# pod %s %s/%s phase %s", p.Name, p.Labels[reconcile.LabelNodeType], p.Labels[reconcile.LabelGroup], p.Status.Phase)
		if r := p.Labels[reconcile.LabelReplicaName]; r != "" {
			fmt.Fprintf(&b, " replica %s", r)
		}
		if p.DeletionTimestamp != nil {
			b.WriteString(" terminating")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// renderPods lists the created pods' names, labels and annotations.
func renderPods(p reconcile.Plan) string {
	var b strings.Builder
	var pods []*corev1.Pod
	for _, a := range p.Actions {
		if a.Create != nil {
			pods = append(pods, a.Create.Pod)
		}
		if a.CreateGroup != nil {
			pods = append(pods, a.CreateGroup.Pods...)
		}
	}
	for _, pod := range pods {
		fmt.Fprintf(&b, "pod name=%q generateName=%q\n", pod.Name, pod.GenerateName)
		for _, k := range sortedMapKeys(pod.Labels) {
			fmt.Fprintf(&b, "  label %s=%s\n", k, pod.Labels[k])
		}
		for _, k := range sortedMapKeys(pod.Annotations) {
			fmt.Fprintf(&b, "  annotation %s=%s\n", k, pod.Annotations[k])
		}
	}
	return b.String()
}

func sortedMapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestGolden(t *testing.T) {
	cases := goldenCases()
	if len(cases) < 15 {
		t.Fatalf("only %d golden scenarios", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := reconcile.Decide(tc.snap, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := renderInput(tc.snap, tc.opts) + p.Explain() + renderPods(p)
			path := filepath.Join("testdata", tc.name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if string(want) != got {
				t.Errorf("%s differs (run go test -run TestGolden -update and review the diff):\n--- want\n%s\n--- got\n%s", path, want, got)
			}
		})
	}
}
