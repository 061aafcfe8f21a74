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
	"github.com/plancore/plancore/reconcile/reconciletest"
)

// convergenceParams are the simulation bounds: informer lag L, termination
// grace T and Create expectation timeout E, in rounds of one second.
type convergenceParams struct {
	L, T, E int
}

// bound is B = 2(L+T) + E + 4 rounds.
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
// planner does (KubeRay).
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
	r := newConvRun(t, compatMode)
	// Chaos: faults, spec changes, pods dying, autoscaler deletions.
	chaos := rapid.IntRange(2, 8).Draw(t, "chaosRounds")
	for round := range chaos {
		r.disturb()
		r.step(round)
	}
	// Stable: no faults, no spec changes; the autoscaler has cleared its list.
	r.w.Faults.Clear()
	for gi := range r.loop.Cluster.Spec.WorkerGroups {
		r.loop.Cluster.Spec.WorkerGroups[gi].ScaleStrategy.WorkersToDelete = nil
	}
	bound := r.prm.bound()
	converged := -1
	for k := 1; k <= bound+3 && (converged < 0 || k <= converged+2); k++ {
		ok := r.settled(r.step(chaos + k))
		if ok && converged < 0 {
			converged = k
		}
		if !ok && converged >= 0 {
			t.Fatalf("round %d: converged at %d, then diverged", k, converged)
		}
	}
	if converged < 0 || converged > bound {
		plan, _, _ := r.loop.Step(context.Background())
		t.Fatalf("not converged within B=%d rounds (converged at %d; L=%d T=%d E=%d):%s\nnext plan:\n%s",
			bound, converged, r.prm.L, r.prm.T, r.prm.E, r.describe(), plan.Explain())
	}
	if converged > worstConvergence.rounds {
		worstConvergence.rounds, worstConvergence.bound = converged, bound
	}
}

// convRun is one convergence case: a fake world and the reconcile loop on it.
type convRun struct {
	t          *rapid.T
	compatMode bool
	prm        convergenceParams
	w          *fake.World
	loop       *fake.RayClusterLoop
	o          reconcile.Options
	nGroups    int
	autoscaler bool
	// blindForeignDelete is set once KubeRay's blind workersToDelete deleted
	// a pod of another group: KubeRay records that delete under the listing
	// group's expectations, so the pod's own group, reading a lagging cache,
	// still counts it and deletes one pod too many. Invariant 9 is
	// plancore's; in KubeRay's mode it is checked only until that happens.
	blindForeignDelete bool
}

func newConvRun(t *rapid.T, compatMode bool) *convRun {
	r := &convRun{t: t, compatMode: compatMode}
	r.prm = convergenceParams{L: rapid.IntRange(0, 3).Draw(t, "lag"), T: rapid.IntRange(0, 3).Draw(t, "grace"), E: 10}
	r.w = fake.NewWorld(rapid.Uint64().Draw(t, "worldSeed"), t0)
	c := reconciletest.Cluster(3).Draw(t, "cluster")
	r.nGroups = len(c.Spec.WorkerGroups)
	r.autoscaler = rapid.IntRange(0, 3).Draw(t, "autoscaler") == 0
	if r.autoscaler {
		c.Spec.EnableInTreeAutoscaling = bptr(true)
	}
	r.o = opts()
	if compatMode {
		r.o.Compat = reconcile.KubeRayV170().Compat
	}
	r.o.RandomPodDelete = rapid.Bool().Draw(t, "random")
	if rapid.Bool().Draw(t, "derived") {
		r.o.NameMode = reconcile.NameModeDerived
	}
	exp := expectations.Options{CreateTimeout: time.Duration(r.prm.E) * time.Second, DeleteTimeout: time.Duration(r.prm.E) * time.Second}
	exp.CountsTerminating = compatMode
	store := fake.PodStoreOptions{Lag: time.Duration(r.prm.L) * time.Second, DropRate: 0.2, GraceMax: time.Duration(r.prm.T) * time.Second}
	loop, err := fake.NewRayClusterLoop(r.w, store, exp, c, r.o)
	if err != nil {
		t.Fatal(err)
	}
	r.loop = loop
	loop.Seed = rapid.Uint64().Draw(t, "nameSeed")
	// Half the cases apply each run of independent actions concurrently
	// (Applier.MaxInFlight): the same invariants must hold. Breaking it: the
	// concurrent path applying its actions without their expectations.
	if rapid.Bool().Draw(t, "concurrent") {
		loop.MaxInFlight = rapid.IntRange(2, 8).Draw(t, "inFlight")
	}
	errAPI := errors.New("apiserver: connection reset")
	p := rapid.Float64Range(0, 0.3).Draw(t, "faultRate")
	for _, kind := range []string{fake.KindPodCreate, fake.KindPodDelete, fake.KindPodDeleteAll} {
		r.w.Faults.SetRates(kind, p/2, p/2, errAPI)
	}
	return r
}

// step runs one reconcile a second later and checks invariant 9:
// scale-down deletes never exceed the true surplus.
func (r *convRun) step(round int) reconcile.Plan {
	before := r.loop.Store.Pods("ns")
	active := map[string]bool{}
	for _, p := range before {
		if p.DeletionTimestamp == nil || r.compatMode {
			active[p.Name] = true
		}
	}
	r.w.Clock.Advance(time.Second)
	plan, rep, err := r.loop.Step(context.Background())
	if err != nil {
		r.t.Fatalf("round %d: %v", round, err)
	}
	for gi, g := range r.loop.Cluster.Spec.WorkerGroups {
		// The surplus is counted by the planner's rule: KubeRay counts
		// terminating pods, plancore does not.
		count, _, _ := groupStateCounting(before, g.GroupName, int(g.NumOfHosts), false, r.compatMode)
		surplus := max(0, count-int(plan.Groups[gi].Desired))
		deleted := 0
		for _, res := range rep.Results {
			a := plan.Actions[res.Index]
			// A delete of a pod already terminating removes nothing more,
			// unless the planner counts terminating pods.
			if a.Group == g.GroupName && a.Kind == reconcile.ActionDeletePod && a.Reason.Code == reconcile.ReasonScaleDown &&
				active[a.Delete.Name] && (res.Status == reconcile.CallDone || res.Status == reconcile.CallAmbiguous) {
				deleted++
			}
		}
		if deleted > surplus && !r.blindForeignDelete {
			r.t.Fatalf("round %d group %s: %d scale-down deletes with a true surplus of %d\n%s", round, g.GroupName, deleted, surplus, plan.Explain())
		}
	}
	return plan
}

// disturb is one chaos actor: a resize, a pod dying, an autoscaler deletion,
// or nothing.
func (r *convRun) disturb() {
	t, loop := r.t, r.loop
	switch rapid.IntRange(0, 5).Draw(t, "actor") {
	case 0:
		gi := rapid.IntRange(0, r.nGroups-1).Draw(t, "resizeGroup")
		loop.Cluster.Spec.WorkerGroups[gi].Replicas = i32(rapid.Int32Range(0, 4).Draw(t, "newReplicas"))
	case 1:
		if pods := loop.Store.Pods("ns"); len(pods) > 0 {
			victim := pods[rapid.IntRange(0, len(pods)-1).Draw(t, "dies")]
			_ = loop.Store.SetPhase("ns", victim.Name, corev1.PodFailed)
		}
	case 2:
		pods := loop.Store.Pods("ns")
		if len(pods) == 0 {
			return
		}
		victim := pods[rapid.IntRange(0, len(pods)-1).Draw(t, "wtd")]
		gi := rapid.IntRange(0, r.nGroups-1).Draw(t, "wtdGroup")
		g := &loop.Cluster.Spec.WorkerGroups[gi]
		g.ScaleStrategy.WorkersToDelete = append(g.ScaleStrategy.WorkersToDelete, victim.Name)
		if r.o.Compat.BlindWorkersToDelete && victim.Labels[reconcile.LabelGroup] != g.GroupName {
			r.blindForeignDelete = true
		}
		if r.autoscaler {
			// The autoscaler lowers replicas with its deletions.
			g.Replicas = i32(max(0, *g.Replicas-1))
		}
	}
}

// settled reports whether every group holds its desired pods, complete.
func (r *convRun) settled(plan reconcile.Plan) bool {
	scaleDown := !r.autoscaler || r.o.RandomPodDelete
	pods := r.loop.Store.Pods("ns")
	for gi, g := range r.loop.Cluster.Spec.WorkerGroups {
		count, complete, _ := groupState(pods, g.GroupName, int(g.NumOfHosts), true)
		want := int(plan.Groups[gi].Desired)
		if !complete || count < want || (scaleDown && count != want) {
			return false
		}
	}
	return true
}

// describe renders the world for a failure message.
func (r *convRun) describe() string {
	loop := r.loop
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
	return msg + fmt.Sprintf("\n forming %+v groups %v opts %+v", loop.Forming, loop.Tracker.Groups(loop.Owner()), loop.Options)
}
