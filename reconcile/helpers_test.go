package reconcile_test

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/reconcile"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func i32(v int32) *int32 { return &v }
func bptr(v bool) *bool  { return &v }
func sptr(v string) *string {
	return &v
}

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "ml"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "ray", Image: image}},
		},
	}
}

// group returns a worker group with replicas, min 0, max 10 and one host.
func group(name string, replicas int32) reconcile.WorkerGroup {
	return reconcile.WorkerGroup{
		GroupName: name, Replicas: i32(replicas), MinReplicas: i32(0), MaxReplicas: i32(10),
		NumOfHosts: 1, Template: template("rayproject/ray:2.9"),
	}
}

func mhGroup(name string, replicas, hosts int32) reconcile.WorkerGroup {
	g := group(name, replicas)
	g.NumOfHosts = hosts
	return g
}

func cluster(groups ...reconcile.WorkerGroup) reconcile.Cluster {
	return reconcile.Cluster{
		Name: "rc", Namespace: "ns", UID: "uid-rc",
		Spec: reconcile.ClusterSpec{
			HeadGroup:    reconcile.HeadGroup{Template: template("rayproject/ray:2.9")},
			WorkerGroups: groups,
		},
	}
}

func opts() reconcile.Options { return reconcile.Options{OperatorVersion: "v1.7.0"} }

func compat() reconcile.Options {
	o := opts()
	o.Compat = reconcile.KubeRayV170().Compat
	return o
}

// podOpt edits a test pod.
type podOpt func(*corev1.Pod)

func basePod(name string, labels map[string]string, o ...podOpt) corev1.Pod {
	t := true
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: labels,
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{{Kind: "RayCluster", Name: "rc", UID: "uid-rc", Controller: &t}},
		},
		Spec: corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "ray"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
		}},
	}
	for _, f := range o {
		f(&p)
	}
	return p
}

func head(name string, o ...podOpt) corev1.Pod {
	return basePod(name, map[string]string{
		reconcile.LabelCluster: "rc", reconcile.LabelNodeType: "head", reconcile.LabelGroup: "headgroup",
	}, o...)
}

func worker(name, group string, o ...podOpt) corev1.Pod {
	return basePod(name, map[string]string{
		reconcile.LabelCluster: "rc", reconcile.LabelNodeType: "worker", reconcile.LabelGroup: group,
	}, o...)
}

// mhWorker is a multi-host worker of replica r (index idx) at host h.
func mhWorker(name, group, r string, idx, h int, o ...podOpt) corev1.Pod {
	p := worker(name, group, o...)
	p.Labels[reconcile.LabelReplicaName] = r
	p.Labels[reconcile.LabelReplicaIndex] = fmt.Sprint(idx)
	p.Labels[reconcile.LabelHostIndex] = fmt.Sprint(h)
	return p
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func index(i int) podOpt {
	return func(p *corev1.Pod) { p.Labels[reconcile.LabelReplicaIndex] = fmt.Sprint(i) }
}

func terminatingPod() podOpt {
	return func(p *corev1.Pod) {
		ts := metav1.NewTime(t0.Add(-time.Minute))
		p.DeletionTimestamp = &ts
		p.Finalizers = []string{"example.com/hold"}
	}
}

func exited(policy corev1.RestartPolicy) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.RestartPolicy = policy
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "ray",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
	}
}

func notReady() podOpt {
	return func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
}

func created(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(d)) }
}

func annotate(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func snap(c reconcile.Cluster, pods ...corev1.Pod) reconcile.Snapshot {
	return reconcile.Snapshot{Cluster: c, Pods: pods, Now: t0, Seed: 7}
}

// withHead adds a healthy head pod.
func withHead(pods ...corev1.Pod) []corev1.Pod {
	return append([]corev1.Pod{head("rc-head-aaaaa")}, pods...)
}

// summarize renders the plan's actions compactly, one per line.
func summarize(p reconcile.Plan) []string {
	var out []string
	for _, a := range p.Actions {
		var s string
		switch a.Kind {
		case reconcile.ActionCreatePod:
			n := a.Create.Pod.Name
			if n == "" {
				n = a.Create.Pod.GenerateName + "*"
			}
			s = fmt.Sprintf("create %s %s", a.Group, n)
			if a.Create.ReplicaIndex >= 0 {
				s += fmt.Sprintf(" #%d", a.Create.ReplicaIndex)
			}
		case reconcile.ActionCreateReplicaGroup:
			s = fmt.Sprintf("create-group %s %s #%d hosts %v", a.Group, maskReplica(a.Group, a.CreateGroup.ReplicaName), a.CreateGroup.ReplicaIndex, a.CreateGroup.Hosts)
		case reconcile.ActionDeletePod:
			s = fmt.Sprintf("delete %s %s", a.Group, a.Delete.Name)
		case reconcile.ActionDeleteAllOf:
			s = fmt.Sprintf("delete-all %s", a.DeleteAll.SelectorString())
		case reconcile.ActionPatchPodAnnotations:
			s = fmt.Sprintf("patch %s", a.Patch.Name)
		}
		out = append(out, s+" "+string(a.Reason.Code))
	}
	return out
}

func outcome(p reconcile.Plan) string {
	o := p.Verdict
	// A stop with a reason and a wake-up is KubeRay's requeue error.
	s := "ok"
	if o.Reason.Code != reconcile.ReasonOK && o.RequeueAfter > 0 {
		s = "requeue"
	}
	if o.StoppedAt != "" {
		s += " @" + o.StoppedAt
	}
	if o.Reason.Code != reconcile.ReasonOK {
		s += " " + o.Reason.Message
	}
	return strings.TrimSpace(s)
}

var replicaNameRE = regexp.MustCompile(`^(.+)-[bcdfghjklmnpqrstvwxz2456789]{5}$`)

// maskReplica replaces a generated replica name's suffix with *****, so tables
// can state the shape; existing names (used by retries) are kept.
func maskReplica(group, name string) string {
	if m := replicaNameRE.FindStringSubmatch(name); m != nil && m[1] == group {
		return group + "-*****"
	}
	return name
}

// pending records a create of each (absent) pod in group, so the group's
// expectations are pending at t0 until t0+5min.
func pending(s *reconcile.Snapshot, group string, pods ...string) {
	if s.Expectations == nil {
		st, err := expectations.New(expectations.Options{})
		if err != nil {
			panic(err)
		}
		s.Expectations = st
	}
	owner := expectations.Owner{Namespace: s.Cluster.Namespace, Name: s.Cluster.Name, UID: s.Cluster.UID}
	for _, p := range pods {
		if _, err := s.Expectations.Record(t0, expectations.Record{Owner: owner, Group: group, Action: expectations.Create, Pod: p}); err != nil {
			panic(err)
		}
	}
}
