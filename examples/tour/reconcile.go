package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/reconcile"
)

func init() {
	register(2, "reconcile", "a Ray cluster's pods: scale up, failures, scale down, suspend", runReconcileChapter)
}

func runReconcileChapter(w *page) error {
	world := fake.NewWorld(11, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	three, two, zero, ten := int32(3), int32(1), int32(0), int32(10)
	tmpl := func(name string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "rayproject/ray:2.9.0"}}}}
	}
	cluster := reconcile.Cluster{
		Name: "raycluster-sample", Namespace: "ray", UID: "rc-uid-1",
		Spec: reconcile.ClusterSpec{
			HeadGroup: reconcile.HeadGroup{Template: tmpl("ray-head")},
			WorkerGroups: []reconcile.WorkerGroup{
				{GroupName: "cpu", Replicas: &three, MinReplicas: &zero, MaxReplicas: &ten, NumOfHosts: 1, Template: tmpl("ray-worker")},
				{GroupName: "tpu", Replicas: &two, MinReplicas: &zero, MaxReplicas: &ten, NumOfHosts: 2, Template: tmpl("ray-worker")},
			},
		},
	}
	loop, err := fake.NewRayClusterLoop(world, fake.PodStoreOptions{Lag: time.Second, GraceMax: 2 * time.Second},
		expectations.Options{}, cluster, reconcile.Options{OperatorVersion: "v1.7.0"})
	if err != nil {
		return err
	}
	tr := &reconcileTour{w: w, world: world, loop: loop}
	pass, settle, count := tr.pass, tr.settle, tr.count
	w.term("reconcile", "informer", "expectations", "multi-host", "requeue")
	fmt.Fprintln(w, "A RayCluster (a Ray head pod plus groups of worker pods) with a 'cpu' group of 3")
	fmt.Fprintln(w, "and a 'tpu' group of 1 replica of 2 hosts. The informer lags up to 1s; deleted")
	fmt.Fprintln(w, "pods take up to 2s to go. Each reconcile pass snapshots the informer, plans and")
	fmt.Fprintln(w, "applies the plan to the in-memory API, recording expectations:")
	w.calls(`snapshot, err := loop.Snapshot() // the informer's pods, the expectations, the time
plan, err := reconcile.Decide(snapshot, loop.Options)
applier := reconcile.Applier{Expectations: loop.Tracker, Clock: tr.world.Clock}
report, err := applier.Apply(context.Background(), plan, loop.Exec)`)
	fmt.Fprintln(w, "A fresh cluster gets its head and every worker in one plan; a multi-host replica")
	fmt.Fprintln(w, "is one atomic action:")
	if err := tr.passAndSettle(time.Second); err != nil {
		return err
	}

	fmt.Fprintln(w, "\n1. Scale up: cpu to 5, tpu to 2 replicas. New pods take the lowest free indices:")
	w.calls(`loop.Cluster.Spec.WorkerGroups[0].Replicas = &five`)
	five, tpu2 := int32(5), int32(2)
	loop.Cluster.Spec.WorkerGroups[0].Replicas = &five
	loop.Cluster.Spec.WorkerGroups[1].Replicas = &tpu2
	if err := tr.passAndSettle(time.Second); err != nil {
		return err
	}

	fmt.Fprintln(w)

	fmt.Fprintln(w, "2. Kill pods: one cpu worker fails, and one tpu host fails. The cpu group deletes its")
	fmt.Fprintln(w, "unhealthy pod and asks for a requeue (KubeRay's message); the tpu replica goes")
	fmt.Fprintln(w, "whole and is replaced in the same pass:")
	w.calls(`_ = loop.Store.SetPhase("ray", cpuVictim, corev1.PodFailed)`)
	var cpuVictim, tpuVictim string
	for _, p := range loop.Store.Pods("ray") {
		switch {
		case p.Labels[reconcile.LabelGroup] == "cpu" && cpuVictim == "":
			cpuVictim = p.Name
		case p.Labels[reconcile.LabelGroup] == "tpu" && tpuVictim == "":
			tpuVictim = p.Name
		}
	}
	_ = loop.Store.SetPhase("ray", cpuVictim, corev1.PodFailed)
	_ = loop.Store.SetPhase("ray", tpuVictim, corev1.PodFailed)
	if err := pass(2 * time.Second); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nThe next passes wait for the deletions to show in the informer (expectations),")
	fmt.Fprintln(w, "then replace the cpu worker:")
	if err := settle(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Settled:", count())

	fmt.Fprintln(w, "\n3. Scale down: cpu to 2. The victims are ranked like ReplicaSet's (unready,")
	fmt.Fprintln(w, "then newest first), not the first pods listed:")
	w.calls(`loop.Cluster.Spec.WorkerGroups[0].Replicas = &cpu2`)
	// Make one older pod unready so that the ranking shows.
	var oldest corev1.Pod
	for _, p := range loop.Store.Pods("ray") {
		if p.Labels[reconcile.LabelGroup] == "cpu" && p.DeletionTimestamp == nil && (oldest.Name == "" || p.CreationTimestamp.Before(&oldest.CreationTimestamp)) {
			oldest = p
		}
	}
	_ = loop.Store.Mutate("ray", oldest.Name, func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	})
	cpu2 := int32(2)
	loop.Cluster.Spec.WorkerGroups[0].Replicas = &cpu2
	if err := tr.passAndSettle(2 * time.Second); err != nil {
		return err
	}

	fmt.Fprintln(w)
	w.term("DeleteAllOf")
	fmt.Fprintln(w, "4. Suspend. spec.suspend alone waits for the RayClusterSuspending status")
	fmt.Fprintln(w, "condition (set by the status step); then every pod goes in one DeleteAllOf:")
	w.calls(`loop.Cluster.Spec.Suspend = &yes
loop.Cluster.Conditions = []metav1.Condition{{Type: reconcile.ConditionSuspending, Status: metav1.ConditionTrue}}`)
	yes := true
	loop.Cluster.Spec.Suspend = &yes
	if err := pass(time.Second); err != nil {
		return err
	}
	loop.Cluster.Conditions = []metav1.Condition{{Type: reconcile.ConditionSuspending, Status: metav1.ConditionTrue}}
	if err := pass(time.Second); err != nil {
		return err
	}
	world.Clock.Advance(3 * time.Second)
	fmt.Fprintln(w, "\nAfter the grace period:", count())
	return nil
}

// reconcileTour runs the chapter's reconcile passes and prints them.
type reconcileTour struct {
	w     *page
	world *fake.World
	loop  *fake.RayClusterLoop
}

// pass runs one reconcile after dt and prints its plan.
func (tr *reconcileTour) pass(dt time.Duration) error {
	tr.world.Clock.Advance(dt)
	loop := tr.loop
	loop.Kubelet()                   // the fake kubelet starts the pods created earlier
	snapshot, err := loop.Snapshot() // the informer's pods, the expectations, the time
	if err != nil {
		return err
	}
	plan, err := reconcile.Decide(snapshot, loop.Options)
	if err != nil {
		return err
	}
	applier := reconcile.Applier{Expectations: loop.Tracker, Clock: tr.world.Clock}
	report, err := applier.Apply(context.Background(), plan, loop.Exec)
	if errors.Is(err, reconcile.ErrInvalidInput) || errors.Is(err, reconcile.ErrExpectation) {
		return err // failed pod calls are in the report; the next pass re-plans
	}
	loop.Forming = reconcile.UpdateForming(loop.Forming, plan, report)
	fmt.Fprintf(tr.w, "\n[t=%s]\n", tr.world.Clock.Now().Format("15:04:05"))
	for _, line := range strings.Split(strings.TrimRight(plan.Explain(), "\n"), "\n") {
		fmt.Fprintln(tr.w, "  "+line)
	}
	if err := report.Err(); err != nil {
		fmt.Fprintf(tr.w, "  apply error: %v\n", err)
	}
	return nil
}

// settle runs passes until one plans nothing.
func (tr *reconcileTour) settle() error {
	for range 20 {
		tr.world.Clock.Advance(time.Second)
		tr.loop.Kubelet()
		s, err := tr.loop.Snapshot()
		if err != nil {
			return err
		}
		p, err := reconcile.Decide(s, tr.loop.Options)
		if err != nil {
			return err
		}
		if len(p.Actions) == 0 && p.Verdict.RequeueAfter == 0 {
			return nil
		}
		if _, _, err := tr.loop.Step(context.Background()); err != nil {
			return err
		}
	}
	return fmt.Errorf("the cluster did not settle")
}

// passAndSettle runs one printed pass, settles, and prints the pod counts.
func (tr *reconcileTour) passAndSettle(dt time.Duration) error {
	if err := tr.pass(dt); err != nil {
		return err
	}
	if err := tr.settle(); err != nil {
		return err
	}
	fmt.Fprintln(tr.w, "\nSettled:", tr.count())
	return nil
}

// count reports the live pods per group.
func (tr *reconcileTour) count() string {
	n := map[string]int{}
	for _, p := range tr.loop.Store.Pods("ray") {
		if p.DeletionTimestamp == nil {
			n[p.Labels[reconcile.LabelGroup]]++
		}
	}
	return fmt.Sprintf("head %d, cpu %d, tpu %d pods", n["headgroup"], n["cpu"], n["tpu"])
}
