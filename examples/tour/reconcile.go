package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/reconcile"
)

func init() {
	register(2, "reconcile: a RayCluster scaled up, damaged, scaled down and suspended", runReconcileChapter)
}

func runReconcileChapter(w io.Writer) error {
	ctx := context.Background()
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
	// pass runs one reconcile after dt and prints its plan.
	pass := func(dt time.Duration) error {
		world.Clock.Advance(dt)
		plan, rep, err := loop.Step(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n[t=%s]\n", world.Clock.Now().Format("15:04:05"))
		for _, line := range strings.Split(strings.TrimRight(plan.Explain(), "\n"), "\n") {
			fmt.Fprintln(w, "  "+line)
		}
		if err := rep.Err(); err != nil {
			fmt.Fprintf(w, "  apply error: %v\n", err)
		}
		return nil
	}
	// settle runs passes until one plans nothing.
	settle := func() error {
		for range 20 {
			world.Clock.Advance(time.Second)
			loop.Kubelet()
			s, err := loop.Snapshot()
			if err != nil {
				return err
			}
			p, err := reconcile.Decide(s, loop.Options)
			if err != nil {
				return err
			}
			if len(p.Actions) == 0 && p.Outcome.RequeueAfter == 0 {
				return nil
			}
			if _, _, err := loop.Step(ctx); err != nil {
				return err
			}
		}
		return fmt.Errorf("the cluster did not settle")
	}
	count := func() string {
		n := map[string]int{}
		for _, p := range loop.Store.Pods("ray") {
			if p.DeletionTimestamp == nil {
				n[p.Labels[reconcile.LabelGroup]]++
			}
		}
		return fmt.Sprintf("head %d, cpu %d, tpu %d pods", n["headgroup"], n["cpu"], n["tpu"])
	}

	fmt.Fprintln(w, "A RayCluster with a head, a 'cpu' group of 3 and a 'tpu' group of 1 replica of")
	fmt.Fprintln(w, "2 hosts. The informer lags up to 1s; deleted pods take up to 2s to go.")
	fmt.Fprintln(w, "Each pass snapshots the informer, plans with reconcile.Decide, and applies the")
	fmt.Fprintln(w, "plan to the in-memory API through reconcile.Apply. A fresh cluster gets its")
	fmt.Fprintln(w, "head and every worker in one plan; a multi-host replica is one atomic action:")
	if err := pass(time.Second); err != nil {
		return err
	}
	if err := settle(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nSettled:", count())

	fmt.Fprintln(w, "\n1. Scale up: cpu to 5, tpu to 2 replicas. New pods take the lowest free indices:")
	five, tpu2 := int32(5), int32(2)
	loop.Cluster.Spec.WorkerGroups[0].Replicas = &five
	loop.Cluster.Spec.WorkerGroups[1].Replicas = &tpu2
	if err := pass(time.Second); err != nil {
		return err
	}
	if err := settle(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nSettled:", count())

	fmt.Fprintln(w, "\n2. Kill pods: one cpu worker fails, and one tpu host fails. The cpu group deletes its")
	fmt.Fprintln(w, "unhealthy pod and requeues (KubeRay's message); the tpu replica goes whole and is")
	fmt.Fprintln(w, "replaced in the same pass:")
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
	if err := pass(2 * time.Second); err != nil {
		return err
	}
	if err := settle(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nSettled:", count())

	fmt.Fprintln(w, "\n4. Suspend. With the status-conditions gate on, spec.suspend alone waits for the")
	fmt.Fprintln(w, "RayClusterSuspending condition; then every pod goes in one DeleteAllOf:")
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
