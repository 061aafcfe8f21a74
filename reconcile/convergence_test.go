package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/reconcile"
)

// convergenceParams are the simulation bounds: informer lag L, termination
// grace T and Create expectation timeout E, in rounds of one second.
type convergenceParams struct {
	L, T, E int
}

// bound is the spec's B = 2(L+T) + E + 4 rounds.
func (c convergenceParams) bound() int { return 2*(c.L+c.T) + c.E + 4 }

// worstConvergence is the slowest convergence any case took, reported at the end.
var worstConvergence struct {
	rounds, bound int
}

// groupState reads the API's true state of one group: non-terminating pods
// (only healthy ones if healthyOnly),
// and whether every replica group is complete (H pods, hosts 0..H-1).
func groupState(pods []corev1.Pod, group string, hosts int, healthyOnly bool) (count int, complete bool, detail string) {
	return groupStateCounting(pods, group, hosts, healthyOnly, false)
}

// groupStateCounting is groupState, counting terminating pods too when the
// planner does (KubeRay, D4).
func groupStateCounting(pods []corev1.Pod, group string, hosts int, healthyOnly, withTerminating bool) (count int, complete bool, detail string) {
	complete = true
	replicas := map[string]map[string]bool{}
	for _, p := range pods {
		if p.Labels[reconcile.LabelGroup] != group || p.Labels[reconcile.LabelNodeType] != "worker" || (p.DeletionTimestamp != nil && !withTerminating) ||
			healthyOnly && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			continue
		}
		count++
		if hosts > 1 {
			r := p.Labels[reconcile.LabelReplicaName]
			if replicas[r] == nil {
				replicas[r] = map[string]bool{}
			}
			replicas[r][p.Labels[reconcile.LabelHostIndex]] = true
		}
	}
	for r, hs := range replicas {
		if len(hs) != hosts {
			complete = false
			detail += fmt.Sprintf(" replica %s has hosts %v;", r, hs)
		}
	}
	return count, complete, detail
}

// TestPropConvergence is invariant 8 and 9: plan → apply to the fake world with
// failed calls, lost responses, informer lag, dropped events, slow
// terminations and pods dying, then stop the faults and the spec changes: every
// group reaches its desired count (or keeps its surplus when only the
// autoscaler may scale down) within B rounds, multi-host groups complete; and
// no pass deletes more surplus pods than the API's true surplus.
func TestPropConvergence(t *testing.T) {
	for _, mode := range []string{"default", "anchor"} {
		t.Run(mode, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { convergenceCase(t, mode == "anchor") })
		})
	}
	t.Logf("worst convergence: %d rounds (bound %d)", worstConvergence.rounds, worstConvergence.bound)
}

func convergenceCase(t *rapid.T, compatMode bool) {
	ctx := context.Background()
	prm := convergenceParams{L: rapid.IntRange(0, 3).Draw(t, "lag"), T: rapid.IntRange(0, 3).Draw(t, "grace"), E: 10}
	w := fake.NewWorld(rapid.Uint64().Draw(t, "worldSeed"), t0)
	nGroups := rapid.IntRange(1, 3).Draw(t, "groups")
	var groups []reconcile.WorkerGroup
	for i := range nGroups {
		g := group(fmt.Sprintf("g%d", i), rapid.Int32Range(0, 4).Draw(t, "replicas"))
		g.NumOfHosts = rapid.Int32Range(1, 3).Draw(t, "hosts")
		groups = append(groups, g)
	}
	c := cluster(groups...)
	autoscaler := rapid.IntRange(0, 3).Draw(t, "autoscaler") == 0
	if autoscaler {
		c.Spec.EnableInTreeAutoscaling = bptr(true)
	}
	o := opts()
	if compatMode {
		o.Compat = reconcile.KubeRayV170().Compat
	}
	o.RandomPodDelete = rapid.Bool().Draw(t, "random")
	if rapid.Bool().Draw(t, "derived") {
		o.NameMode = reconcile.NameModeDerived
	}
	exp := expectations.Options{CreateTimeout: time.Duration(prm.E) * time.Second, DeleteTimeout: time.Duration(prm.E) * time.Second}
	if compatMode {
		exp.CountsTerminating = true
	}
	store := fake.PodStoreOptions{Lag: time.Duration(prm.L) * time.Second, DropRate: 0.2, GraceMax: time.Duration(prm.T) * time.Second}
	loop, err := fake.NewRayClusterLoop(w, store, exp, c, o)
	if err != nil {
		t.Fatal(err)
	}
	loop.Seed = rapid.Uint64().Draw(t, "nameSeed")
	errAPI := errors.New("apiserver: connection reset")
	p := rapid.Float64Range(0, 0.3).Draw(t, "faultRate")
	for _, kind := range []string{fake.KindPodCreate, fake.KindPodDelete, fake.KindPodDeleteAll} {
		w.Faults.SetRates(kind, p/2, p/2, errAPI)
	}

	// blindForeignDelete is set once the anchor's blind workersToDelete (D3)
	// deleted a pod of another group: KubeRay records that delete under the
	// listing group's expectations, so the pod's own group, reading a lagging
	// cache, still counts it and deletes one pod too many. Invariant 9 is
	// plancore's; in anchor mode it is checked only until D3 strikes.
	blindForeignDelete := false
	step := func(round int) reconcile.Plan {
		// Invariant 9: scale-down deletes never exceed the true surplus.
		before := loop.Store.Pods("ns")
		active := map[string]bool{}
		for _, p := range before {
			if p.DeletionTimestamp == nil || compatMode {
				active[p.Name] = true
			}
		}
		w.Clock.Advance(time.Second)
		plan, rep, err := loop.Step(ctx)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for gi, g := range loop.Cluster.Spec.WorkerGroups {
			// The surplus is counted by the planner's rule: KubeRay counts
			// terminating pods (D4), plancore does not.
			count, _, _ := groupStateCounting(before, g.GroupName, int(g.NumOfHosts), false, compatMode)
			surplus := max(0, count-int(plan.Groups[gi].Desired))
			deleted := 0
			for _, r := range rep.Results {
				a := plan.Actions[r.Index]
				// A delete of a pod already terminating removes nothing more,
				// unless the planner counts terminating pods.
				if a.Group == g.GroupName && a.Kind == reconcile.KindDeletePod && a.Reason.Code == reconcile.ReasonScaleDown &&
					active[a.Delete.Name] && (r.Status == reconcile.CallDone || r.Status == reconcile.CallAmbiguous) {
					deleted++
				}
			}
			if deleted > surplus && !blindForeignDelete {
				t.Fatalf("round %d group %s: %d scale-down deletes with a true surplus of %d\n%s", round, g.GroupName, deleted, surplus, plan.Explain())
			}
		}
		return plan
	}

	// Chaos: faults, spec changes, pods dying, autoscaler deletions.
	chaos := rapid.IntRange(2, 8).Draw(t, "chaosRounds")
	for r := range chaos {
		switch rapid.IntRange(0, 5).Draw(t, "actor") {
		case 0:
			gi := rapid.IntRange(0, nGroups-1).Draw(t, "resizeGroup")
			loop.Cluster.Spec.WorkerGroups[gi].Replicas = i32(rapid.Int32Range(0, 4).Draw(t, "newReplicas"))
		case 1:
			if pods := loop.Store.Pods("ns"); len(pods) > 0 {
				victim := pods[rapid.IntRange(0, len(pods)-1).Draw(t, "dies")]
				_ = loop.Store.SetPhase("ns", victim.Name, corev1.PodFailed)
			}
		case 2:
			if pods := loop.Store.Pods("ns"); len(pods) > 0 {
				victim := pods[rapid.IntRange(0, len(pods)-1).Draw(t, "wtd")]
				gi := rapid.IntRange(0, nGroups-1).Draw(t, "wtdGroup")
				g := &loop.Cluster.Spec.WorkerGroups[gi]
				g.ScaleStrategy.WorkersToDelete = append(g.ScaleStrategy.WorkersToDelete, victim.Name)
				if o.Compat.BlindWorkersToDelete && victim.Labels[reconcile.LabelGroup] != g.GroupName {
					blindForeignDelete = true
				}
				if autoscaler {
					// The autoscaler lowers replicas with its deletions.
					g.Replicas = i32(max(0, *g.Replicas-1))
				}
			}
		}
		step(r)
	}

	// Stable: no faults, no spec changes; the autoscaler has cleared its list.
	w.Faults.Clear()
	for gi := range loop.Cluster.Spec.WorkerGroups {
		loop.Cluster.Spec.WorkerGroups[gi].ScaleStrategy.WorkersToDelete = nil
	}
	scaleDown := !autoscaler || o.RandomPodDelete
	bound := prm.bound()
	converged := -1
	for r := 1; r <= bound+3 && (converged < 0 || r <= converged+2); r++ {
		plan := step(chaos + r)
		pods := loop.Store.Pods("ns")
		ok := true
		for gi, g := range loop.Cluster.Spec.WorkerGroups {
			count, complete, _ := groupState(pods, g.GroupName, int(g.NumOfHosts), true)
			want := int(plan.Groups[gi].Desired)
			if !complete || count < want || (scaleDown && count != want) {
				ok = false
			}
		}
		if ok && converged < 0 {
			converged = r
		}
		if !ok && converged >= 0 {
			t.Fatalf("round %d: converged at %d, then diverged", r, converged)
		}
	}
	if converged < 0 || converged > bound {
		pods := loop.Store.Pods("ns")
		msg := ""
		for _, g := range loop.Cluster.Spec.WorkerGroups {
			count, complete, detail := groupState(pods, g.GroupName, int(g.NumOfHosts), true)
			msg += fmt.Sprintf("\n group %s replicas %d hosts %d: %d pods, complete %v%s", g.GroupName, *g.Replicas, g.NumOfHosts, count, complete, detail)
		}
		for _, p := range pods {
			msg += fmt.Sprintf("\n  pod %s %v phase %s term %v", p.Name, p.Labels, p.Status.Phase, p.DeletionTimestamp != nil)
		}
		snapNow, _ := loop.Snapshot()
		for _, p := range snapNow.Pods {
			msg += fmt.Sprintf("\n  cached %s", p.Name)
		}
		msg += fmt.Sprintf("\n forming %+v groups %v opts %+v", loop.Forming, loop.Tracker.Groups(loop.Owner()), loop.Options)
		plan, _, _ := loop.Step(ctx)
		t.Fatalf("not converged within B=%d rounds (converged at %d; L=%d T=%d E=%d):%s\nnext plan:\n%s", bound, converged, prm.L, prm.T, prm.E, msg, plan.Explain())
	}
	if converged > worstConvergence.rounds {
		worstConvergence.rounds, worstConvergence.bound = converged, bound
	}
}
