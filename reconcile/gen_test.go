package reconcile_test

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/reconcile"
)

// genOptions draws default or KubeRayV170 options with random switches.
func genOptions(t *rapid.T, compatMode bool) reconcile.Options {
	o := opts()
	if compatMode {
		o.Compat = reconcile.KubeRayV170().Compat
	}
	o.RandomPodDelete = rapid.Bool().Draw(t, "randomPodDelete")
	o.DeterministicHeadName = rapid.Bool().Draw(t, "deterministicHead")
	o.Gates.StatusConditions = rapid.SampledFrom([]reconcile.Gate{reconcile.GateDefault, reconcile.GateOn, reconcile.GateOff}).Draw(t, "gateStatus")
	o.Gates.MultiHostIndexing = rapid.SampledFrom([]reconcile.Gate{reconcile.GateDefault, reconcile.GateOn, reconcile.GateOff}).Draw(t, "gateMultiHost")
	if rapid.Bool().Draw(t, "derived") {
		o.NameMode = reconcile.NameModeDerived
	}
	return o
}

func optI32(t *rapid.T, name string, lo, hi int32) *int32 {
	if rapid.IntRange(0, 4).Draw(t, name+"Nil") == 0 {
		return nil
	}
	v := rapid.Int32Range(lo, hi).Draw(t, name)
	return &v
}

// genSnapshot draws a cluster of 0-maxGroups groups and pods in every state.
func genSnapshot(t *rapid.T, maxGroups int) reconcile.Snapshot {
	nGroups := rapid.IntRange(0, maxGroups).Draw(t, "groups")
	var groups []reconcile.WorkerGroup
	for i := range nGroups {
		g := group(fmt.Sprintf("g%d", i), 0)
		g.NumOfHosts = rapid.Int32Range(0, 4).Draw(t, "hosts")
		g.Replicas = optI32(t, "replicas", 0, 5)
		g.MinReplicas = optI32(t, "min", 0, 4)
		g.MaxReplicas = optI32(t, "max", 0, 6)
		if rapid.IntRange(0, 5).Draw(t, "suspend") == 0 {
			g.Suspend = bptr(true)
		}
		groups = append(groups, g)
	}
	c := cluster(groups...)
	if rapid.Bool().Draw(t, "autoscaling") {
		c.Spec.EnableInTreeAutoscaling = bptr(true)
	}
	switch rapid.IntRange(0, 9).Draw(t, "clusterState") {
	case 0:
		c.Spec.Suspend = bptr(true)
	case 1:
		c.Conditions = append(c.Conditions, metav1.Condition{Type: reconcile.ConditionSuspending, Status: metav1.ConditionTrue})
	case 2:
		c.Spec.UpgradeStrategy = &reconcile.UpgradeStrategy{Type: sptr(reconcile.UpgradeRecreate)}
	case 3:
		c.Conditions = append(c.Conditions, metav1.Condition{Type: reconcile.ConditionProvisioned, Status: metav1.ConditionTrue})
		c.Annotations = map[string]string{reconcile.AnnotationDisableProvisionedHeadRestart: "true"}
	}
	var pods []corev1.Pod
	n := 0
	name := func() string { n++; return fmt.Sprintf("p%02d", n) }
	podState := func(p *corev1.Pod) {
		switch rapid.IntRange(0, 9).Draw(t, "phase") {
		case 0:
			p.Status.Phase = corev1.PodFailed
		case 1:
			p.Status.Phase = corev1.PodPending
			p.Spec.NodeName = ""
		case 2:
			exited(corev1.RestartPolicy(rapid.SampledFrom([]string{"Never", "Always", ""}).Draw(t, "policy")))(p)
		case 3:
			notReady()(p)
		case 4:
			p.Status.Phase = corev1.PodSucceeded
		}
		if rapid.IntRange(0, 5).Draw(t, "terminating") == 0 {
			terminatingPod()(p)
		}
		created(time.Duration(-rapid.IntRange(1, 100).Draw(t, "age")) * time.Minute)(p)
	}
	for range rapid.IntRange(0, 2).Draw(t, "heads") {
		h := head(name())
		podState(&h)
		if c.Spec.UpgradeStrategy != nil {
			annotate(reconcile.AnnotationRecreateHash, rapid.SampledFrom([]string{"", "OLD"}).Draw(t, "headHash"))(&h)
			annotate(reconcile.AnnotationKubeRayVersion, rapid.SampledFrom([]string{"", "v1.7.0", "v1.6.0"}).Draw(t, "headVersion"))(&h)
		}
		pods = append(pods, h)
	}
	for gi := range groups {
		g := &c.Spec.WorkerGroups[gi]
		replicas := []string{g.GroupName + "-A1", g.GroupName + "-B1", g.GroupName + "-C1"}
		for range rapid.IntRange(0, 8).Draw(t, "pods") {
			p := worker(name(), g.GroupName)
			podState(&p)
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
		f := worker(name(), "g0")
		f.Labels[reconcile.LabelCluster] = "other"
		o := worker(name(), "g0")
		o.Namespace = "elsewhere"
		r := worker(name(), "removed")
		pods = append(pods, f, o, r)
	}
	s := snap(c, pods...)
	s.Seed = rapid.Uint64().Draw(t, "seed")
	for _, g := range append([]string{""}, groupNames(c)...) {
		if rapid.IntRange(0, 6).Draw(t, "pending") == 0 {
			pending(&s, g, "x")
		}
	}
	if rapid.Bool().Draw(t, "tls") {
		s.TLS = reconcile.TLS{Enabled: true, SecretsReady: rapid.Bool().Draw(t, "tlsReady"), NotReadyError: "not yet"}
	}
	return s
}

func groupNames(c reconcile.Cluster) []string {
	var out []string
	for _, g := range c.Spec.WorkerGroups {
		out = append(out, g.GroupName)
	}
	return out
}

// cloneSnapshot deep-copies a snapshot.
func cloneSnapshot(s reconcile.Snapshot) reconcile.Snapshot {
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
