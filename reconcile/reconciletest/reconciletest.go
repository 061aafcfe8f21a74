// Package reconciletest provides rapid generators of valid inputs and options
// for package reconcile, for property tests of controllers built on it, in the
// way net/http/httptest serves tests of net/http code. plancore's own
// properties draw from these generators, and check each plan with
// reconcile.CheckPlan.
//
// A generated snapshot is of the cluster ClusterName in Namespace (UID
// ClusterUID) at Now: 0 to N worker groups of 0 to 4 hosts with replicas, min
// and max each possibly unset, pods of the head and of every group in every
// state (running, pending, failed, succeeded, exited containers, not ready,
// terminating), replica and host index labels (some missing, some
// duplicated), workersToDelete entries (some absent), pods of other clusters,
// namespaces and removed groups, pending expectations and TLS secrets not yet
// ready. Every snapshot is valid: Decide plans it without error.
package reconciletest

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/reconcile"
)

// The generated cluster's identity and the generated snapshots' time.
const (
	ClusterName = "rc"
	Namespace   = "ns"
	ClusterUID  = types.UID("uid-rc")
	// OperatorVersion is the Options.OperatorVersion the generators set.
	OperatorVersion = "v1.7.0"
)

// Now is the Now of every generated snapshot; generated pods were created
// before it.
var Now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// Options draws plancore's default options, or KubeRayV170's compatibility
// switches when compat is set, with random name modes, feature gates and
// random pod deletion.
func Options(compat bool) *rapid.Generator[reconcile.Options] {
	return rapid.Custom(func(t *rapid.T) reconcile.Options {
		o := reconcile.Options{OperatorVersion: OperatorVersion}
		if compat {
			o.Compat = reconcile.KubeRayV170().Compat
		}
		o.RandomPodDelete = rapid.Bool().Draw(t, "randomPodDelete")
		o.DeterministicHeadName = rapid.Bool().Draw(t, "deterministicHead")
		gates := []reconcile.Gate{reconcile.GateDefault, reconcile.GateOn, reconcile.GateOff}
		o.Gates.StatusConditions = rapid.SampledFrom(gates).Draw(t, "gateStatus")
		o.Gates.MultiHostIndexing = rapid.SampledFrom(gates).Draw(t, "gateMultiHost")
		if rapid.Bool().Draw(t, "derived") {
			o.NameMode = reconcile.NameModeDerived
		}
		return o
	})
}

// Group returns a worker group of one host with the given replicas, min 0 and
// max 10.
func Group(name string, replicas int32) reconcile.WorkerGroup {
	lo, hi := int32(0), int32(10)
	return reconcile.WorkerGroup{
		GroupName: name, Replicas: &replicas, MinReplicas: &lo, MaxReplicas: &hi,
		NumOfHosts: 1, Template: podTemplate(),
	}
}

// NewCluster returns the cluster ClusterName in Namespace with the given
// worker groups and a head.
func NewCluster(groups ...reconcile.WorkerGroup) reconcile.Cluster {
	return reconcile.Cluster{
		Name: ClusterName, Namespace: Namespace, UID: ClusterUID,
		Spec: reconcile.ClusterSpec{
			HeadGroup:    reconcile.HeadGroup{Template: podTemplate()},
			WorkerGroups: groups,
		},
	}
}

// Cluster draws a steady cluster for a controller loop: 1 to maxGroups worker
// groups named g0, g1, ... of 1 to 3 hosts and 0 to 4 replicas.
func Cluster(maxGroups int) *rapid.Generator[reconcile.Cluster] {
	return rapid.Custom(func(t *rapid.T) reconcile.Cluster {
		var groups []reconcile.WorkerGroup
		for i := range rapid.IntRange(1, max(1, maxGroups)).Draw(t, "groups") {
			g := Group(fmt.Sprintf("g%d", i), rapid.Int32Range(0, 4).Draw(t, "replicas"))
			g.NumOfHosts = rapid.Int32Range(1, 3).Draw(t, "hosts")
			groups = append(groups, g)
		}
		return NewCluster(groups...)
	})
}

// Snapshot draws a snapshot of a cluster of 0 to maxGroups worker groups and
// pods in every state (see the package comment).
func Snapshot(maxGroups int) *rapid.Generator[reconcile.Snapshot] {
	return rapid.Custom(func(t *rapid.T) reconcile.Snapshot {
		c := drawCluster(t, maxGroups)
		pods := drawPods(t, &c)
		s := reconcile.Snapshot{Cluster: c, Pods: pods, Now: Now, Seed: rapid.Uint64().Draw(t, "seed")}
		for _, g := range append([]string{""}, groupNames(c)...) {
			if rapid.IntRange(0, 6).Draw(t, "pending") == 0 {
				Pending(&s, g, "x")
			}
		}
		if rapid.Bool().Draw(t, "tls") {
			s.TLS = reconcile.TLS{Enabled: true, SecretsReady: rapid.Bool().Draw(t, "tlsReady"), NotReadyError: "not yet"}
		}
		return s
	})
}

func optI32(t *rapid.T, name string, lo, hi int32) *int32 {
	if rapid.IntRange(0, 4).Draw(t, name+"Nil") == 0 {
		return nil
	}
	v := rapid.Int32Range(lo, hi).Draw(t, name)
	return &v
}

func ptr[T any](v T) *T { return &v }

// drawCluster draws the cluster of a Snapshot: groups and a cluster state.
func drawCluster(t *rapid.T, maxGroups int) reconcile.Cluster {
	// Only specs KubeRay's controller reconciles: without autoscaling both
	// bounds are set and min ≤ max; with it, no group is suspended.
	autoscaling := rapid.Bool().Draw(t, "autoscaling")
	var groups []reconcile.WorkerGroup
	for i := range rapid.IntRange(0, maxGroups).Draw(t, "groups") {
		g := Group(fmt.Sprintf("g%d", i), 0)
		g.NumOfHosts = rapid.Int32Range(0, 4).Draw(t, "hosts")
		g.Replicas = optI32(t, "replicas", 0, 5)
		if autoscaling {
			g.MinReplicas = optI32(t, "min", 0, 4)
			g.MaxReplicas = optI32(t, "max", 0, 6)
		} else {
			g.MinReplicas = ptr(rapid.Int32Range(0, 4).Draw(t, "min"))
			g.MaxReplicas = ptr(rapid.Int32Range(0, 6).Draw(t, "max"))
			if rapid.IntRange(0, 5).Draw(t, "suspend") == 0 {
				g.Suspend = ptr(true)
			}
		}
		if g.MinReplicas != nil && g.MaxReplicas != nil && *g.MinReplicas > *g.MaxReplicas {
			g.MinReplicas, g.MaxReplicas = g.MaxReplicas, g.MinReplicas
		}
		groups = append(groups, g)
	}
	c := NewCluster(groups...)
	if autoscaling {
		c.Spec.EnableInTreeAutoscaling = ptr(true)
	}
	switch rapid.IntRange(0, 9).Draw(t, "clusterState") {
	case 0:
		c.Spec.Suspend = ptr(true)
	case 1:
		c.Conditions = append(c.Conditions, metav1.Condition{Type: reconcile.ConditionSuspending, Status: metav1.ConditionTrue})
	case 2:
		c.Spec.UpgradeStrategy = &reconcile.UpgradeStrategy{Type: ptr(reconcile.UpgradeRecreate)}
	case 3:
		c.Conditions = append(c.Conditions, metav1.Condition{Type: reconcile.ConditionProvisioned, Status: metav1.ConditionTrue})
		c.Annotations = map[string]string{reconcile.AnnotationDisableProvisionedHeadRestart: "true"}
	}
	return c
}

// drawPodState puts p in a drawn state: one of the phases, an exited
// container, not ready, terminating, and an age.
func drawPodState(t *rapid.T, p *corev1.Pod) {
	switch rapid.IntRange(0, 9).Draw(t, "phase") {
	case 0:
		p.Status.Phase = corev1.PodFailed
	case 1:
		p.Status.Phase = corev1.PodPending
		p.Spec.NodeName = ""
	case 2:
		p.Spec.RestartPolicy = corev1.RestartPolicy(rapid.SampledFrom([]string{"Never", "Always", ""}).Draw(t, "policy"))
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "ray",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
	case 3:
		p.Status.Conditions[0].Status = corev1.ConditionFalse
	case 4:
		p.Status.Phase = corev1.PodSucceeded
	}
	if rapid.IntRange(0, 5).Draw(t, "terminating") == 0 {
		ts := metav1.NewTime(Now.Add(-time.Minute))
		p.DeletionTimestamp = &ts
		p.Finalizers = []string{"example.com/hold"}
	}
	p.CreationTimestamp = metav1.NewTime(Now.Add(-time.Duration(rapid.IntRange(1, 100).Draw(t, "age")) * time.Minute))
}

// drawPods draws the head pods, each group's pods (adding workersToDelete
// entries to c's groups) and foreign pods.
func drawPods(t *rapid.T, c *reconcile.Cluster) []corev1.Pod {
	var pods []corev1.Pod
	n := 0
	name := func() string { n++; return fmt.Sprintf("p%02d", n) }
	for range rapid.IntRange(0, 2).Draw(t, "heads") {
		h := Head(name())
		drawPodState(t, &h)
		if c.Spec.UpgradeStrategy != nil {
			setAnnotation(&h, reconcile.AnnotationRecreateHash, rapid.SampledFrom([]string{"", "OLD"}).Draw(t, "headHash"))
			setAnnotation(&h, reconcile.AnnotationKubeRayVersion, rapid.SampledFrom([]string{"", "v1.7.0", "v1.6.0"}).Draw(t, "headVersion"))
		}
		pods = append(pods, h)
	}
	for gi := range c.Spec.WorkerGroups {
		g := &c.Spec.WorkerGroups[gi]
		replicas := []string{g.GroupName + "-A1", g.GroupName + "-B1", g.GroupName + "-C1"}
		for range rapid.IntRange(0, 8).Draw(t, "pods") {
			p := Worker(name(), g.GroupName)
			drawPodState(t, &p)
			if rapid.IntRange(0, 3).Draw(t, "unindexed") > 0 {
				p.Labels[reconcile.LabelReplicaIndex] = fmt.Sprint(rapid.IntRange(0, 6).Draw(t, "index"))
			}
			if g.NumOfHosts > 1 && rapid.IntRange(0, 5).Draw(t, "legacy") > 0 {
				ri := rapid.IntRange(0, 2).Draw(t, "replica")
				p.Labels[reconcile.LabelReplicaName] = replicas[ri]
				p.Labels[reconcile.LabelReplicaIndex] = fmt.Sprint(ri)
				p.Labels[reconcile.LabelHostIndex] = fmt.Sprint(rapid.IntRange(0, int(g.NumOfHosts)-1).Draw(t, "host"))
			}
			pods = append(pods, p)
		}
		for range rapid.IntRange(0, 2).Draw(t, "wtd") {
			switch rapid.IntRange(0, 2).Draw(t, "wtdKind") {
			case 0:
				g.ScaleStrategy.WorkersToDelete = append(g.ScaleStrategy.WorkersToDelete, "absent")
			default:
				g.ScaleStrategy.WorkersToDelete = append(g.ScaleStrategy.WorkersToDelete, fmt.Sprintf("p%02d", rapid.IntRange(1, n+1).Draw(t, "wtdName")))
			}
		}
	}
	// Foreign pods: another cluster, another namespace, a removed group.
	if rapid.Bool().Draw(t, "foreign") {
		f := Worker(name(), "g0")
		f.Labels[reconcile.LabelCluster] = "other"
		o := Worker(name(), "g0")
		o.Namespace = "elsewhere"
		r := Worker(name(), "removed")
		pods = append(pods, f, o, r)
	}
	return pods
}

func groupNames(c reconcile.Cluster) []string {
	var out []string
	for _, g := range c.Spec.WorkerGroups {
		out = append(out, g.GroupName)
	}
	return out
}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "ml"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "ray", Image: "rayproject/ray:2.9"}}},
	}
}

func basePod(name string, labels map[string]string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: Namespace, UID: types.UID("uid-" + name), Labels: labels,
			CreationTimestamp: metav1.NewTime(Now.Add(-time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{{Kind: "RayCluster", Name: ClusterName, UID: ClusterUID, Controller: ptr(true)}},
		},
		Spec: corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "ray"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(Now.Add(-time.Hour))},
		}},
	}
}

// Head returns a running, ready head pod of the cluster ClusterName.
func Head(name string) corev1.Pod {
	return basePod(name, map[string]string{
		reconcile.LabelCluster: ClusterName, reconcile.LabelNodeType: "head", reconcile.LabelGroup: reconcile.HeadGroupLabel,
	})
}

// Worker returns a running, ready worker pod of group in the cluster
// ClusterName.
func Worker(name, group string) corev1.Pod {
	return basePod(name, map[string]string{
		reconcile.LabelCluster: ClusterName, reconcile.LabelNodeType: "worker", reconcile.LabelGroup: group,
	})
}

func setAnnotation(p *corev1.Pod, k, v string) {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
}

// Pending records, at Now, a create of each (absent) pod in group of s's
// cluster, so the group's expectations are unsatisfied until they expire
// (five minutes by default). It starts an expectations state when s has none.
func Pending(s *reconcile.Snapshot, group string, pods ...string) {
	if s.Expectations == nil {
		st, err := expectations.New(expectations.Options{})
		if err != nil {
			panic(err) // the zero options are valid
		}
		s.Expectations = st
	}
	owner := expectations.Owner{Namespace: s.Cluster.Namespace, Name: s.Cluster.Name, UID: s.Cluster.UID}
	for _, p := range pods {
		if _, err := s.Expectations.Record(Now, expectations.Record{Owner: owner, Group: group, Action: expectations.Create, Pod: p}); err != nil {
			panic(err) // a create record of a named pod is valid
		}
	}
}

// Clone deep-copies a snapshot, so a test can check that Decide (or your
// code) left its input unchanged.
func Clone(s reconcile.Snapshot) reconcile.Snapshot {
	out := s
	c := &out.Cluster
	c.Labels, c.Annotations = maps.Clone(s.Cluster.Labels), maps.Clone(s.Cluster.Annotations)
	c.Conditions = slices.Clone(s.Cluster.Conditions)
	sp := &c.Spec
	sp.EnableInTreeAutoscaling = clonePtr(s.Cluster.Spec.EnableInTreeAutoscaling)
	sp.Suspend = clonePtr(s.Cluster.Spec.Suspend)
	if us := s.Cluster.Spec.UpgradeStrategy; us != nil {
		sp.UpgradeStrategy = &reconcile.UpgradeStrategy{Type: clonePtr(us.Type)}
	}
	if gf := s.Cluster.Spec.GcsFaultToleranceOptions; gf != nil {
		v := *gf
		sp.GcsFaultToleranceOptions = &v
	}
	sp.HeadGroup.RayStartParams = maps.Clone(s.Cluster.Spec.HeadGroup.RayStartParams)
	sp.HeadGroup.Template = *s.Cluster.Spec.HeadGroup.Template.DeepCopy()
	sp.WorkerGroups = slices.Clone(s.Cluster.Spec.WorkerGroups)
	for i := range sp.WorkerGroups {
		g, src := &sp.WorkerGroups[i], &s.Cluster.Spec.WorkerGroups[i]
		g.Replicas, g.MinReplicas, g.MaxReplicas, g.Suspend = clonePtr(src.Replicas), clonePtr(src.MinReplicas), clonePtr(src.MaxReplicas), clonePtr(src.Suspend)
		g.ScaleStrategy.WorkersToDelete = slices.Clone(src.ScaleStrategy.WorkersToDelete)
		g.RayStartParams, g.Labels = maps.Clone(src.RayStartParams), maps.Clone(src.Labels)
		g.Template = *src.Template.DeepCopy()
	}
	if s.Pods != nil {
		out.Pods = make([]corev1.Pod, len(s.Pods))
		for i := range s.Pods {
			s.Pods[i].DeepCopyInto(&out.Pods[i])
		}
	}
	if s.Expectations != nil {
		out.Expectations = s.Expectations.Clone()
	}
	out.Forming = slices.Clone(s.Forming)
	for i := range out.Forming {
		out.Forming[i].Missing = slices.Clone(s.Forming[i].Missing)
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
