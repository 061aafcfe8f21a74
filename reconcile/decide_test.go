package reconcile_test

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/reconcile"
)

type chainCase struct {
	name    string
	snap    func() reconcile.Snapshot
	opts    reconcile.Options
	want    []string
	outcome string
}

func runChain(t *testing.T, cases []chainCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			if o.OperatorVersion == "" {
				o.OperatorVersion = "v1.7.0"
			}
			p, err := reconcile.Decide(tc.snap(), o)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Errorf("actions (-want +got):\n%s\n%s", diff, p.Explain())
			}
			if diff := cmp.Diff(tc.outcome, outcome(p)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\n%s", diff, p.Explain())
			}
		})
	}
}

func cond(typ string, st metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: typ, Status: st}
}

// TestSuspend covers every suspend case.
func TestSuspend(t *testing.T) {
	suspending := func(pods ...corev1.Pod) func() reconcile.Snapshot {
		return func() reconcile.Snapshot {
			c := cluster(group("small", 1))
			c.Conditions = []metav1.Condition{cond(reconcile.ConditionSuspending, metav1.ConditionTrue)}
			return snap(c, pods...)
		}
	}
	specSuspend := func() reconcile.Snapshot {
		c := cluster(group("small", 1))
		c.Spec.Suspend = bptr(true)
		return snap(c, withHead(worker("w1", "small"))...)
	}
	gateOff := opts()
	gateOff.Gates.StatusConditions = reconcile.GateOff
	runChain(t, []chainCase{
		{name: "suspending deletes all", snap: suspending(withHead(worker("w1", "small"))...),
			want: []string{"delete-all ray.io/cluster=rc SuspendDeleteAll"}, outcome: "requeue @suspend cluster is suspending"},
		// The plans that wait on the caller's status write wake it up.
		{name: "suspending with only terminating pods sends nothing", snap: suspending(head("h", terminatingPod())),
			want: nil, outcome: "requeue @suspend cluster is suspending"},
		{name: "suspending ignores other clusters' pods", snap: func() reconcile.Snapshot {
			s := suspending()()
			other := worker("x", "small")
			other.Labels[reconcile.LabelCluster] = "other"
			s.Pods = append(s.Pods, other)
			return s
		}, want: nil, outcome: "requeue @suspend cluster is suspending"},
		{name: "gate off and spec.suspend deletes all", snap: specSuspend, opts: gateOff,
			want: []string{"delete-all ray.io/cluster=rc SuspendDeleteAll"}, outcome: "ok @suspend cluster is suspending"},
		{name: "gate on and spec.suspend waits for Suspending", snap: specSuspend,
			want: nil, outcome: "requeue @suspend spec.suspend is true; waiting for the RayClusterSuspending condition"},
		{name: "suspended does nothing even when spec.suspend is false", snap: func() reconcile.Snapshot {
			c := cluster(group("small", 1))
			c.Conditions = []metav1.Condition{cond(reconcile.ConditionSuspending, metav1.ConditionFalse), cond(reconcile.ConditionSuspended, metav1.ConditionTrue)}
			return snap(c)
		}, want: nil, outcome: "ok @suspend cluster is suspended"},
		{name: "suspended with spec.suspend false waits for the status to clear Suspended", snap: func() reconcile.Snapshot {
			c := cluster(group("small", 1))
			c.Spec.Suspend = bptr(false)
			c.Conditions = []metav1.Condition{cond(reconcile.ConditionSuspended, metav1.ConditionTrue)}
			return snap(c)
		}, want: nil, outcome: "requeue @suspend cluster is suspended"},
		{name: "gate off ignores the Suspended condition", snap: func() reconcile.Snapshot {
			c := cluster(group("small", 1))
			c.Conditions = []metav1.Condition{cond(reconcile.ConditionSuspended, metav1.ConditionTrue)}
			return snap(c, withHead(worker("w1", "small"))...)
		}, opts: gateOff, want: nil, outcome: "ok"},
	})
}

func recreateCluster() reconcile.Cluster {
	c := cluster(group("small", 1))
	c.Spec.UpgradeStrategy = &reconcile.UpgradeStrategy{Type: sptr(reconcile.UpgradeRecreate)}
	return c
}

// TestRecreate covers the Recreate upgrade strategy.
func TestRecreate(t *testing.T) {
	hash, err := reconcile.SpecHash(recreateCluster().Spec)
	if err != nil {
		t.Fatal(err)
	}
	headWith := func(ver, h string) func() reconcile.Snapshot {
		return func() reconcile.Snapshot {
			hp := head("rc-head-aaaaa", annotate(reconcile.AnnotationKubeRayVersion, ver), annotate(reconcile.AnnotationRecreateHash, h))
			return snap(recreateCluster(), hp, worker("w1", "small"))
		}
	}
	runChain(t, []chainCase{
		{name: "no head: create it", snap: func() reconcile.Snapshot { return snap(recreateCluster(), worker("w1", "small")) },
			want: []string{"create headgroup rc-head-* HeadCreate"}, outcome: "ok"},
		{name: "other operator version: patch and go on", snap: headWith("v1.6.0", "OLDHASH"),
			want: []string{"patch rc-head-aaaaa RecreateVersionSkip"}, outcome: "ok"},
		{name: "hash changed: delete all", snap: headWith("v1.7.0", "OLDHASH"),
			want: []string{"delete-all ray.io/cluster=rc RecreateSpecChanged"}, outcome: "requeue @recreate recreating pods for the new spec"},
		{name: "same hash: nothing", snap: headWith("v1.7.0", hash), want: nil, outcome: "ok"},
		{name: "empty hash annotation: nothing", snap: headWith("", ""), want: nil, outcome: "ok"},
		{name: "terminating old head with old hash: nothing active to delete", snap: func() reconcile.Snapshot {
			return snap(recreateCluster(), head("rc-head-aaaaa", annotate(reconcile.AnnotationKubeRayVersion, "v1.7.0"),
				annotate(reconcile.AnnotationRecreateHash, "OLDHASH"), terminatingPod()))
		}, want: nil, outcome: "requeue @recreate recreating pods for the new spec"},
		{name: "upgrade strategy None never recreates", snap: func() reconcile.Snapshot {
			s := headWith("v1.7.0", "OLDHASH")()
			s.Cluster.Spec.UpgradeStrategy.Type = sptr(reconcile.UpgradeNone)
			return s
		}, want: nil, outcome: "ok"},
	})
	t.Run("recreate clears the cluster's expectations", func(t *testing.T) {
		p, err := reconcile.Decide(headWith("v1.7.0", "OLDHASH")(), opts())
		if err != nil || !p.ExpectationOps.ClearCluster {
			t.Fatalf("ClearCluster = %v, err %v", p.ExpectationOps.ClearCluster, err)
		}
	})
	t.Run("patch carries preconditions and both annotations", func(t *testing.T) {
		s := headWith("v1.6.0", "OLDHASH")()
		s.Pods[0].ResourceVersion = "42"
		p, err := reconcile.Decide(s, opts())
		if err != nil {
			t.Fatal(err)
		}
		want := &reconcile.PatchPodAnnotations{Namespace: "ns", Name: "rc-head-aaaaa", UID: "uid-rc-head-aaaaa", ResourceVersion: "42",
			Set: map[string]string{reconcile.AnnotationRecreateHash: hash, reconcile.AnnotationKubeRayVersion: "v1.7.0"}}
		if diff := cmp.Diff(want, p.Actions[0].Patch); diff != "" {
			t.Error(diff)
		}
	})
}

// TestHead covers the head pod and its health.
func TestHead(t *testing.T) {
	provisioned := func(ann string) func() reconcile.Snapshot {
		return func() reconcile.Snapshot {
			c := cluster(group("small", 1))
			c.Conditions = []metav1.Condition{cond(reconcile.ConditionProvisioned, metav1.ConditionTrue)}
			c.Annotations = map[string]string{reconcile.AnnotationDisableProvisionedHeadRestart: ann}
			return snap(c)
		}
	}
	runChain(t, []chainCase{
		{name: "fresh cluster: head and workers in one plan", snap: func() reconcile.Snapshot { return snap(cluster(group("small", 2))) },
			want: []string{"create headgroup rc-head-* HeadCreate", "create small rc-small-worker-* #0 ScaleUp", "create small rc-small-worker-* #1 ScaleUp"}, outcome: "ok"},
		{name: "healthy head: nothing", snap: func() reconcile.Snapshot { return snap(cluster(), head("h1")) }, want: nil, outcome: "ok"},
		{name: "failed head: delete and stop before workers", snap: func() reconcile.Snapshot {
			return snap(cluster(group("small", 2)), head("h1", phase(corev1.PodFailed)))
		}, want: []string{"delete headgroup h1 HeadTerminalPhase"},
			outcome: "requeue @head The head Pod h1 status is Failed which is a terminal state. KubeRay will delete the Pod and create new Pods in the next reconciliation if necessary."},
		{name: "head container exited under Never", snap: func() reconcile.Snapshot {
			return snap(cluster(), head("h1", exited(corev1.RestartPolicyNever)))
		}, want: []string{"delete headgroup h1 HeadContainerExited"},
			outcome: "requeue @head The Pod status of the head Pod h1 is Running, and the Ray container terminated status is &ContainerStateTerminated{ExitCode:1,Signal:0,Reason:Error,Message:,StartedAt:0001-01-01 00:00:00 +0000 UTC,FinishedAt:0001-01-01 00:00:00 +0000 UTC,ContainerID:,}. The container is unable to restart due to its restart policy Never, so KubeRay will delete it."},
		{name: "head container exited under Always is kept", snap: func() reconcile.Snapshot {
			return snap(cluster(), head("h1", exited(corev1.RestartPolicyAlways)))
		}, want: nil, outcome: "ok"},
		{name: "two heads: names sorted, no action", snap: func() reconcile.Snapshot {
			return snap(cluster(group("small", 1)), head("headNode2"), head("headNode"))
		}, want: nil, outcome: "requeue @head 2 head pods found [headNode headNode2]. Please delete extra head pods"},
		{name: "provisioned with restart disabled: workers skipped too", snap: provisioned("true"), want: nil,
			outcome: "ok @head the head pod is gone and ray.io/disable-provisioned-head-restart is true on a provisioned cluster: not restarting it (workers are skipped too)"},
		{name: "restart annotation must be exactly true", snap: provisioned("True"),
			want: []string{"create headgroup rc-head-* HeadCreate", "create small rc-small-worker-* #0 ScaleUp"}, outcome: "ok"},
		{name: "mTLS not ready stops before the head", snap: func() reconcile.Snapshot {
			s := snap(cluster(group("small", 1)))
			s.TLS = reconcile.TLS{Enabled: true, NotReadyError: "secret rc-ca not found"}
			return s
		}, want: nil, outcome: "requeue @head mTLS secrets not ready: secret rc-ca not found"},
		{name: "terminating head blocks a new head, workers go on", snap: func() reconcile.Snapshot {
			return snap(cluster(group("small", 1)), head("h1", terminatingPod()))
		}, want: []string{"create small rc-small-worker-* #0 ScaleUp"}, outcome: "ok"},
		{name: "compat: a terminating head is the head", snap: func() reconcile.Snapshot {
			return snap(cluster(group("small", 1)), head("h1", terminatingPod(), phase(corev1.PodFailed)))
		}, opts: compat(), want: []string{"delete headgroup h1 HeadTerminalPhase"},
			outcome: "requeue @head The head Pod h1 status is Failed which is a terminal state. KubeRay will delete the Pod and create new Pods in the next reconciliation if necessary."},
		{name: "head expectations pending: workers still reconciled", snap: func() reconcile.Snapshot {
			s := snap(cluster(group("small", 1)))
			pending(&s, "", "rc-head-xxxxx")
			return s
		}, want: []string{"create small rc-small-worker-* #0 ScaleUp"}, outcome: "ok"},
	})
}

// TestShouldDeletePod covers every case of shouldDeletePod, through the head.
func TestShouldDeletePod(t *testing.T) {
	rows := []struct {
		phase   corev1.PodPhase
		exited  bool
		policy  corev1.RestartPolicy
		deleted bool
	}{
		{corev1.PodFailed, false, corev1.RestartPolicyAlways, true},
		{corev1.PodSucceeded, true, corev1.RestartPolicyAlways, true},
		{corev1.PodRunning, true, corev1.RestartPolicyNever, true},
		{corev1.PodRunning, true, corev1.RestartPolicyAlways, false},
		{corev1.PodRunning, true, corev1.RestartPolicyOnFailure, false},
		{corev1.PodRunning, true, "", false},
		{corev1.PodRunning, false, corev1.RestartPolicyNever, false},
		{corev1.PodPending, true, corev1.RestartPolicyNever, false},
		{corev1.PodUnknown, true, corev1.RestartPolicyNever, false},
		{"", true, corev1.RestartPolicyNever, false},
	}
	for _, r := range rows {
		o := []podOpt{phase(r.phase)}
		if r.exited {
			o = append(o, exited(r.policy))
		} else {
			o = append(o, func(p *corev1.Pod) { p.Spec.RestartPolicy = r.policy })
		}
		p, err := reconcile.Decide(snap(cluster(), head("h1", o...)), opts())
		if err != nil {
			t.Fatal(err)
		}
		if got := len(p.Actions) == 1; got != r.deleted {
			t.Errorf("phase %q exited %v policy %q: deleted = %v, want %v", r.phase, r.exited, r.policy, got, r.deleted)
		}
	}
	t.Run("status entry of another container does not count", func(t *testing.T) {
		h := head("h1", exited(corev1.RestartPolicyNever))
		h.Status.ContainerStatuses[0].Name = "sidecar"
		p, _ := reconcile.Decide(snap(cluster(), h), opts())
		if len(p.Actions) != 0 {
			t.Fatalf("deleted a head whose Ray container is running: %v", summarize(p))
		}
	})
}

// TestWorkers covers single-host worker groups.
func TestWorkers(t *testing.T) {
	autoscaled := func(c reconcile.Cluster) reconcile.Cluster {
		c.Spec.EnableInTreeAutoscaling = bptr(true)
		return c
	}
	random := opts()
	random.RandomPodDelete = true
	randomCompat := compat()
	randomCompat.RandomPodDelete = true
	example5 := func() reconcile.Snapshot {
		g := group("small", 3)
		g.ScaleStrategy.WorkersToDelete = []string{"pod2", "missing"}
		return snap(autoscaled(cluster(g)), withHead(
			worker("pod1", "small", created(-5*time.Hour)), worker("pod2", "small"), worker("pod3", "small", created(-time.Minute)),
			worker("pod4", "small"), worker("pod5", "small", notReady()))...)
	}
	gateOff := opts()
	gateOff.Gates.MultiHostIndexing = reconcile.GateOff
	runChain(t, []chainCase{
		{name: "example 1: replicas below min gives min", snap: func() reconcile.Snapshot {
			g := group("small", 1)
			g.MinReplicas, g.MaxReplicas = i32(5), i32(10)
			return snap(cluster(g), withHead()...)
		}, want: []string{"create small rc-small-worker-* #0 ScaleUp", "create small rc-small-worker-* #1 ScaleUp", "create small rc-small-worker-* #2 ScaleUp",
			"create small rc-small-worker-* #3 ScaleUp", "create small rc-small-worker-* #4 ScaleUp"}, outcome: "ok"},
		{name: "replicas above max gives max", snap: func() reconcile.Snapshot {
			g := group("small", 50)
			g.MaxReplicas = i32(1)
			return snap(cluster(g), withHead()...)
		}, want: []string{"create small rc-small-worker-* #0 ScaleUp"}, outcome: "ok"},
		{name: "nil replicas gives min", snap: func() reconcile.Snapshot {
			g := group("small", 0)
			g.Replicas, g.MinReplicas = nil, i32(1)
			return snap(cluster(g), withHead()...)
		}, want: []string{"create small rc-small-worker-* #0 ScaleUp"}, outcome: "ok"},
		{name: "example 2: lowest free index", snap: func() reconcile.Snapshot {
			return snap(cluster(group("small", 4)), withHead(worker("a", "small", index(0)), worker("b", "small", index(2)), worker("c", "small", func(p *corev1.Pod) { p.Labels[reconcile.LabelReplicaIndex] = "x" }))...)
		}, want: []string{"create small rc-small-worker-* #1 ScaleUp"}, outcome: "ok"},
		{name: "gate off: no index labels", snap: func() reconcile.Snapshot { return snap(cluster(group("small", 1)), withHead()...) },
			opts: gateOff, want: []string{"create small rc-small-worker-* ScaleUp"}, outcome: "ok"},
		{name: "expectations pending: group skipped, others planned", snap: func() reconcile.Snapshot {
			s := snap(cluster(group("a", 1), group("b", 1)), withHead()...)
			pending(&s, "a", "x")
			return s
		}, want: []string{"create b rc-b-worker-* #0 ScaleUp"}, outcome: "ok"},
		{name: "group suspended: delete-all of the group", snap: func() reconcile.Snapshot {
			g := group("small", 2)
			g.Suspend = bptr(true)
			return snap(cluster(g), withHead(worker("w1", "small"))...)
		}, want: []string{"delete-all ray.io/cluster=rc,ray.io/group=small GroupSuspended"}, outcome: "ok"},
		{name: "unhealthy worker: delete, no create, later groups go on", snap: func() reconcile.Snapshot {
			return snap(cluster(group("a", 2), group("b", 1)), withHead(worker("a1", "a", phase(corev1.PodFailed)))...)
		}, want: []string{"delete a a1 WorkerTerminalPhase", "create b rc-b-worker-* #0 ScaleUp"}, outcome: "requeue delete 1 unhealthy worker Pods"},
		{name: "compat: unhealthy worker stops later groups", snap: func() reconcile.Snapshot {
			return snap(cluster(group("a", 2), group("b", 1)), withHead(worker("a1", "a", phase(corev1.PodFailed)))...)
		}, opts: compat(), want: []string{"delete a a1 WorkerTerminalPhase"}, outcome: "requeue @group a delete 1 unhealthy worker Pods"},
		{name: "scale down without autoscaler: ranked victims", snap: func() reconcile.Snapshot {
			return snap(cluster(group("small", 1)), withHead(worker("w1", "small"), worker("w2", "small", notReady()), worker("w3", "small", created(-time.Minute)))...)
		}, want: []string{"delete small w2 ScaleDown", "delete small w3 ScaleDown"}, outcome: "ok"},
		{name: "compat scale down: first by name", snap: func() reconcile.Snapshot {
			return snap(cluster(group("small", 1)), withHead(worker("w3", "small"), worker("w2", "small", notReady()), worker("w1", "small"))...)
		}, opts: compat(), want: []string{"delete small w1 ScaleDown", "delete small w2 ScaleDown"}, outcome: "ok"},
		{name: "autoscaler on: surplus left alone", snap: func() reconcile.Snapshot {
			return snap(autoscaled(cluster(group("small", 1))), withHead(worker("w1", "small"), worker("w2", "small"))...)
		}, want: nil, outcome: "ok"},
		{name: "example 5 default: member check, ranked victim", snap: example5, opts: random,
			want: []string{"delete small pod2 WorkersToDelete", "delete small pod5 ScaleDown"}, outcome: "ok"},
		{name: "example 5 compat: blind deletes, name order", snap: example5, opts: randomCompat,
			want: []string{"delete small missing WorkersToDelete", "delete small pod2 WorkersToDelete", "delete small pod1 ScaleDown"}, outcome: "ok"},
		{name: "workersToDelete naming another group's pod is not deleted", snap: func() reconcile.Snapshot {
			g := group("a", 1)
			g.ScaleStrategy.WorkersToDelete = []string{"b1"}
			return snap(cluster(g, group("b", 1)), withHead(worker("a1", "a"), worker("b1", "b"))...)
		}, want: nil, outcome: "ok"},
		{name: "example 4 default: terminating pod replaced, its index reused", snap: func() reconcile.Snapshot {
			return snap(cluster(group("small", 2)), withHead(worker("w0", "small", index(0), terminatingPod()), worker("w1", "small", index(1)))...)
		}, want: []string{"create small rc-small-worker-* #0 ScaleUp"}, outcome: "ok"},
		{name: "example 4 compat: terminating pod counted", snap: func() reconcile.Snapshot {
			return snap(cluster(group("small", 2)), withHead(worker("w0", "small", index(0), terminatingPod()), worker("w1", "small", index(1)))...)
		}, opts: compat(), want: nil, outcome: "ok"},
		{name: "numOfHosts 0 means 1 by default", snap: func() reconcile.Snapshot {
			g := group("small", 1)
			g.NumOfHosts = 0
			return snap(cluster(g), withHead(worker("w1", "small"))...)
		}, want: nil, outcome: "ok"},
		{name: "compat: numOfHosts 0 deletes every worker", snap: func() reconcile.Snapshot {
			g := group("small", 1)
			g.NumOfHosts = 0
			return snap(cluster(g), withHead(worker("w1", "small"))...)
		}, opts: compat(), want: []string{"delete small w1 ScaleDown"}, outcome: "ok"},
		{name: "mTLS not ready before worker creation", snap: func() reconcile.Snapshot {
			s := snap(cluster(group("small", 1)), withHead()...)
			s.TLS = reconcile.TLS{Enabled: true, NotReadyError: "x"}
			return s
		}, want: nil, outcome: "requeue mTLS secrets not ready: x"},
		{name: "pods of a group not in the spec are never deleted", snap: func() reconcile.Snapshot {
			return snap(cluster(group("small", 0)), withHead(worker("old1", "removed"))...)
		}, want: nil, outcome: "ok"},
		{name: "pods of an earlier incarnation are ignored", snap: func() reconcile.Snapshot {
			old := worker("w-old", "small")
			old.OwnerReferences[0].UID = "uid-previous"
			return snap(cluster(group("small", 1)), withHead(old)...)
		}, want: []string{"create small rc-small-worker-* #0 ScaleUp"}, outcome: "ok"},
	})
}

// TestMultiHost covers multi-host groups: ranked choices, unlabelled
// (legacy) pods and partially formed groups (KubeRay #4540).
func TestMultiHost(t *testing.T) {
	mh := func(replicas int32, pods ...corev1.Pod) func() reconcile.Snapshot {
		return func() reconcile.Snapshot { return snap(cluster(mhGroup("tpu", replicas, 2)), withHead(pods...)...) }
	}
	healthy := []corev1.Pod{mhWorker("a0", "tpu", "tpu-A1", 0, 0), mhWorker("a1", "tpu", "tpu-A1", 0, 1),
		mhWorker("b0", "tpu", "tpu-B1", 1, 0), mhWorker("b1", "tpu", "tpu-B1", 1, 1)}
	forming := func(first time.Time, attempts int, last time.Time) func() reconcile.Snapshot {
		return func() reconcile.Snapshot {
			s := mh(2, healthy[0], healthy[1], mhWorker("c0", "tpu", "tpu-C1", 1, 0))()
			s.Forming = []reconcile.FormingGroup{{Group: "tpu", ReplicaName: "tpu-C1", ReplicaIndex: 1, Missing: []int{1},
				Attempts: attempts, FirstFailure: first, LastAttempt: last, LastError: "exceeded quota"}}
			return s
		}
	}
	gateOff := opts()
	gateOff.Gates.MultiHostIndexing = reconcile.GateOff
	runChain(t, []chainCase{
		{name: "create whole groups", snap: mh(2), want: []string{"create-group tpu tpu-***** #0 hosts [0 1] ReplicaGroupCreate",
			"create-group tpu tpu-***** #1 hosts [0 1] ReplicaGroupCreate"}, outcome: "ok"},
		{name: "steady", snap: mh(2, healthy...), want: nil, outcome: "ok"},
		{name: "example 3: unhealthy group replaced in the same pass", snap: mh(2, mhWorker("a0", "tpu", "tpu-A1", 0, 0, phase(corev1.PodFailed)),
			healthy[1], healthy[2], healthy[3]),
			want: []string{"delete tpu a0 UnhealthyReplicaGroup", "delete tpu a1 UnhealthyReplicaGroup", "create-group tpu tpu-***** #0 hosts [0 1] ReplicaGroupCreate"}, outcome: "ok"},
		{name: "incomplete group cleaned up, group stops", snap: mh(2, healthy[0], healthy[2], healthy[3]),
			want: []string{"delete tpu a0 IncompleteReplicaGroup"}, outcome: "requeue cleaned up incomplete replica group tpu-A1, requeueing"},
		{name: "workersToDelete expands to the replica group", snap: func() reconcile.Snapshot {
			s := mh(2, healthy...)()
			s.Cluster.Spec.WorkerGroups[0].ScaleStrategy.WorkersToDelete = []string{"b1", "gone"}
			return s
		}, want: []string{"delete tpu b0 WorkersToDelete", "delete tpu b1 WorkersToDelete"}, outcome: "requeue deleted 2 worker Pods based on ScaleStrategy, requeueing"},
		{name: "scale down: highest index first", snap: mh(1, healthy...),
			want: []string{"delete tpu b0 ScaleDown", "delete tpu b1 ScaleDown"}, outcome: "ok"},
		{name: "scale down: not-ready group first", snap: mh(1, mhWorker("a0", "tpu", "tpu-A1", 0, 0, notReady()), healthy[1], healthy[2], healthy[3]),
			want: []string{"delete tpu a0 ScaleDown", "delete tpu a1 ScaleDown"}, outcome: "ok"},
		{name: "compat scale down: name order", snap: mh(1, mhWorker("a0", "tpu", "tpu-Z1", 0, 0), mhWorker("a1", "tpu", "tpu-Z1", 0, 1), healthy[2], healthy[3]),
			opts: compat(), want: []string{"delete tpu b0 ScaleDown", "delete tpu b1 ScaleDown"}, outcome: "ok"},
		{name: "legacy: pods count as replicas", snap: mh(1, worker("l0", "tpu"), worker("l1", "tpu")), want: nil, outcome: "ok"},
		{name: "legacy: pods with a failed member are deleted and replaced", snap: mh(1, worker("l0", "tpu", phase(corev1.PodFailed)), worker("l1", "tpu")),
			want: []string{"delete tpu l0 LegacyMultiHostPods", "delete tpu l1 LegacyMultiHostPods", "create-group tpu tpu-***** #0 hosts [0 1] ReplicaGroupCreate"}, outcome: "ok"},
		{name: "legacy: go first on scale down", snap: mh(1, append([]corev1.Pod{worker("l0", "tpu"), worker("l1", "tpu")}, healthy[0], healthy[1])...),
			want: []string{"delete tpu l0 ScaleDown", "delete tpu l1 ScaleDown"}, outcome: "ok"},
		{name: "legacy, KubeRay mode: pods invisible, groups pile on", snap: mh(1, worker("l0", "tpu", phase(corev1.PodFailed)), worker("l1", "tpu")),
			opts: compat(), want: []string{"create-group tpu tpu-***** #0 hosts [0 1] ReplicaGroupCreate"}, outcome: "ok"},
		{name: "forming: group retries only its missing host", snap: forming(t0.Add(-time.Minute), 1, t0.Add(-time.Minute)),
			want: []string{"create-group tpu tpu-C1 #1 hosts [1] ReplicaGroupFormationRetry"}, outcome: "ok"},
		{name: "forming: group waits out its backoff", snap: forming(t0.Add(-time.Second), 1, t0.Add(-time.Second)),
			want: nil, outcome: "ok"},
		{name: "forming: group times out", snap: forming(t0.Add(-11*time.Minute), 5, t0.Add(-time.Minute)),
			want: []string{"delete tpu c0 ReplicaGroupFormationTimeout", "create-group tpu tpu-***** #1 hosts [0 1] ReplicaGroupCreate"}, outcome: "ok"},
		{name: "forming, KubeRay mode: partial group deleted at once", snap: forming(t0.Add(-time.Minute), 1, t0.Add(-time.Minute)), opts: compat(),
			want: []string{"delete tpu c0 IncompleteReplicaGroup"}, outcome: "requeue @group tpu cleaned up incomplete replica group tpu-C1, requeueing"},
		{name: "gate off: single-host path with replicas × hosts pods", snap: mh(1), opts: gateOff,
			want: []string{"create tpu rc-tpu-worker-* ScaleUp", "create tpu rc-tpu-worker-* ScaleUp"}, outcome: "ok"},
	})
}

// TestBurstReplicas caps one pass's creates per group (ReplicaSet's burst);
// a huge replica count never puts millions of pods into one plan.
func TestBurstReplicas(t *testing.T) {
	g := group("big", 2000000000)
	g.MaxReplicas = i32(math.MaxInt32)
	tpu := mhGroup("tpu", 1000, 4)
	tpu.MaxReplicas = i32(math.MaxInt32)
	p, err := reconcile.Decide(snap(cluster(g, tpu), withHead()...), opts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Groups[0].Place != reconcile.DefaultBurstReplicas || p.Groups[1].Place != reconcile.DefaultBurstReplicas {
		t.Fatalf("placed %d and %d pods, want %d each", p.Groups[0].Place, p.Groups[1].Place, reconcile.DefaultBurstReplicas)
	}
	if p.Verdict.RequeueAfter != 2*time.Second {
		t.Errorf("RequeueAfter = %v, want a prompt requeue", p.Verdict.RequeueAfter)
	}
}
