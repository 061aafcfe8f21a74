package reconcile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/internal/golden"
	"github.com/plancore/plancore/reconcile"
)

// goldenInput is one transcript's input: a RayCluster and its pods in the
// tests' pod model (helpers_test.go), and the options Decide runs with.
type goldenInput struct {
	Cluster goldenCluster `json:"cluster"`
	Pods    []goldenPod   `json:"pods"`
	// Pending records create expectations for Pods of Group, not yet seen.
	Pending *struct {
		Group string   `json:"group"`
		Pods  []string `json:"pods"`
	} `json:"pending"`
	Forming []reconcile.FormingGroup `json:"forming"`
	TLS     reconcile.TLS            `json:"tls"`
	Now     time.Time                `json:"now"`
	Seed    uint64                   `json:"seed"`
	Options reconcile.Options        `json:"options"`
	// Compat names a compatibility profile whose Compat replaces the
	// options': KubeRayV170, or none.
	Compat string `json:"compat"`
}

// goldenCluster is cluster(groups...) of helpers_test.go: namespace ns,
// UID uid-rc, a head and workers of image rayproject/ray:2.9.
type goldenCluster struct {
	// Name is rc unless set.
	Name   string        `json:"name"`
	Groups []goldenGroup `json:"groups"`
	// InTreeAutoscaling sets spec.enableInTreeAutoscaling.
	InTreeAutoscaling *bool `json:"inTreeAutoscaling"`
	// Upgrade sets spec.upgradeStrategy.type.
	Upgrade    string             `json:"upgrade"`
	Conditions []metav1.Condition `json:"conditions"`
}

// goldenGroup is group(name, replicas) of helpers_test.go: min 0, max 10,
// one host, unless set.
type goldenGroup struct {
	Name            string   `json:"name"`
	Replicas        int32    `json:"replicas"`
	Hosts           *int32   `json:"hosts"`
	MaxReplicas     *int32   `json:"maxReplicas"`
	WorkersToDelete []string `json:"workersToDelete"`
}

// goldenPod is a running, ready pod of cluster rc (basePod in
// helpers_test.go), created an hour before t0, changed by its fields.
type goldenPod struct {
	Name string `json:"name"`
	// Head makes it the head; otherwise it is a worker of Group.
	Head  bool   `json:"head"`
	Group string `json:"group"`
	// Replica, ReplicaIndex and Host set the multi-host labels.
	Replica      string `json:"replica"`
	ReplicaIndex *int   `json:"replicaIndex"`
	Host         *int   `json:"host"`
	// Phase replaces Running.
	Phase corev1.PodPhase `json:"phase"`
	// Terminating gives it a deletion timestamp (a minute before t0) and a
	// finalizer that holds it.
	Terminating bool `json:"terminating"`
	// Exited makes its container exit with code 1 under this restart policy.
	Exited corev1.RestartPolicy `json:"exited"`
	// NotReady makes its Ready condition false.
	NotReady bool `json:"notReady"`
	// Created is its creation time relative to t0 (default -1h).
	Created     *golden.Duration  `json:"created"`
	Annotations map[string]string `json:"annotations"`
	// OwnerUID replaces its owner reference's UID (uid-rc).
	OwnerUID string `json:"ownerUID"`
}

func (g goldenGroup) build() reconcile.WorkerGroup {
	w := group(g.Name, g.Replicas)
	if g.Hosts != nil {
		w.NumOfHosts = *g.Hosts
	}
	if g.MaxReplicas != nil {
		w.MaxReplicas = g.MaxReplicas
	}
	w.ScaleStrategy.WorkersToDelete = g.WorkersToDelete
	return w
}

func (p goldenPod) build() corev1.Pod {
	var o []podOpt
	if p.Phase != "" {
		o = append(o, phase(p.Phase))
	}
	if p.Terminating {
		o = append(o, terminatingPod())
	}
	if p.Exited != "" {
		o = append(o, exited(p.Exited))
	}
	if p.NotReady {
		o = append(o, notReady())
	}
	if p.Created != nil {
		o = append(o, created(p.Created.D()))
	}
	for _, k := range sortedMapKeys(p.Annotations) {
		o = append(o, annotate(k, p.Annotations[k]))
	}
	var pod corev1.Pod
	if p.Head {
		pod = head(p.Name, o...)
	} else {
		pod = worker(p.Name, p.Group, o...)
	}
	if p.Replica != "" {
		pod.Labels[reconcile.LabelReplicaName] = p.Replica
	}
	if p.ReplicaIndex != nil {
		pod.Labels[reconcile.LabelReplicaIndex] = fmt.Sprint(*p.ReplicaIndex)
	}
	if p.Host != nil {
		pod.Labels[reconcile.LabelHostIndex] = fmt.Sprint(*p.Host)
	}
	if p.OwnerUID != "" {
		pod.OwnerReferences[0].UID = types.UID(p.OwnerUID)
	}
	return pod
}

func (in goldenInput) build(t testing.TB) (reconcile.Snapshot, reconcile.Options) {
	var groups []reconcile.WorkerGroup
	for _, g := range in.Cluster.Groups {
		groups = append(groups, g.build())
	}
	c := cluster(groups...)
	if in.Cluster.Name != "" {
		c.Name = in.Cluster.Name
	}
	c.Spec.EnableInTreeAutoscaling = in.Cluster.InTreeAutoscaling
	if in.Cluster.Upgrade != "" {
		c.Spec.UpgradeStrategy = &reconcile.UpgradeStrategy{Type: sptr(in.Cluster.Upgrade)}
	}
	c.Conditions = in.Cluster.Conditions
	var pods []corev1.Pod
	for _, p := range in.Pods {
		pods = append(pods, p.build())
	}
	s := reconcile.Snapshot{Cluster: c, Pods: pods, Forming: in.Forming, TLS: in.TLS, Now: in.Now, Seed: in.Seed}
	if in.Pending != nil {
		pending(&s, in.Pending.Group, in.Pending.Pods...)
	}
	o := in.Options
	switch in.Compat {
	case "":
	case "KubeRayV170":
		o.Compat = reconcile.KubeRayV170().Compat
	default:
		t.Fatalf("unknown compat %q (KubeRayV170 or none)", in.Compat)
	}
	return s, o
}

// goldenSnapshots are the snapshots of the golden transcripts, without
// their expectations, for seeding fuzz tests.
func goldenSnapshots(t testing.TB) []reconcile.Snapshot {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden transcripts: %v", err)
	}
	var out []reconcile.Snapshot
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := golden.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		s, _ := golden.Decode[goldenInput](t, tr.Input).build(t)
		s.Expectations = nil
		out = append(out, s)
	}
	return out
}

// TestGolden runs Decide on each testdata/*.txt and compares the plan's
// explanation and the pods it creates (go test -run TestGolden -update
// rewrites the outputs).
func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", func(t *testing.T, input []byte) string {
		s, o := golden.Decode[goldenInput](t, input).build(t)
		p, err := reconcile.Decide(s, o)
		if err != nil {
			t.Fatal(err)
		}
		return renderInput(s, o) + p.Explain() + renderPods(p)
	})
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
