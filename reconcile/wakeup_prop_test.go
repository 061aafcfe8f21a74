package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/reconcile"
	"github.com/plancore/plancore/reconcile/reconciletest"
)

// TestPropWakeUpOnlyLoop drives a controller that no watch event ever wakes:
// each pass plans on a lagging informer, applies, writes the status Status
// computes, and comes back only after the plan's RequeueAfter. Through scale,
// failing pods, suspend, resume and a Recreate upgrade, every phase reaches
// its goal on the API server (a plan with nothing to do and no wake-up before
// the goal is a stall), and no DeleteAllOf is sent twice in one phase (a
// lagging informer still showing the pods must not resend it).
//
// Breaking it: drop awaitStatus from the suspend step (the loop stalls waiting
// for RayClusterSuspending), or the delete expectations of a DeleteAllOf
// (deleteAllExpects returning none: the DeleteAllOf is sent again while the
// informer lags).
func TestPropWakeUpOnlyLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lag := time.Duration(rapid.IntRange(0, 3).Draw(t, "lagSeconds")) * time.Second
		grace := time.Duration(rapid.IntRange(0, 3).Draw(t, "graceSeconds")) * time.Second
		w := fake.NewWorld(rapid.Uint64().Draw(t, "seed"), reconciletest.Now)
		cluster := reconciletest.NewCluster(reconciletest.Group("g0", rapid.Int32Range(0, 3).Draw(t, "replicas")))
		loop, err := fake.NewRayClusterLoop(w, fake.PodStoreOptions{Lag: lag, GraceMax: grace}, expectations.Options{}, cluster,
			reconcile.Options{OperatorVersion: "v1.7.0"})
		if err != nil {
			t.Fatal(err)
		}
		r := &wakeRun{t: t, w: w, loop: loop}
		r.phase("start", func() {}, r.running)
		for _, ph := range rapid.SliceOfN(rapid.SampledFrom([]string{"scale", "fail", "suspend", "upgrade"}), 1, 4).Draw(t, "phases") {
			switch ph {
			case "scale":
				n := rapid.Int32Range(0, 4).Draw(t, "scaleTo")
				r.phase("scale", func() { r.loop.Cluster.Spec.WorkerGroups[0].Replicas = &n }, r.running)
			case "fail":
				r.phase("fail", func() {
					for _, p := range r.loop.Store.Pods(cluster.Namespace) {
						if p.Labels[reconcile.LabelNodeType] == reconcile.NodeTypeWorker && p.DeletionTimestamp == nil {
							_ = r.loop.Store.SetPhase(p.Namespace, p.Name, corev1.PodFailed)
							break
						}
					}
				}, r.running)
			case "suspend":
				r.phase("suspend", func() { r.loop.Cluster.Spec.Suspend = bptr(true) }, r.suspended)
				r.phase("resume", func() { r.loop.Cluster.Spec.Suspend = bptr(false) }, r.running)
			case "upgrade":
				r.phase("upgrade", func() {
					c := &r.loop.Cluster.Spec
					c.UpgradeStrategy = &reconcile.UpgradeStrategy{Type: sptr(reconcile.UpgradeRecreate)}
					c.HeadGroup.Template.Spec.Containers[0].Image += "-new"
				}, r.upgraded)
			}
		}
	})
}

// wakeRun is one case of TestPropWakeUpOnlyLoop.
type wakeRun struct {
	t    *rapid.T
	w    *fake.World
	loop *fake.RayClusterLoop
	log  []string
}

// maxPasses bounds a phase: lag, grace and the wake-ups are a few seconds
// each, so a phase that needs more passes is stuck.
const maxPasses = 40

// phase changes the spec and runs passes until goal holds on the API server.
func (r *wakeRun) phase(name string, change func(), goal func() bool) {
	change()
	deleteAlls := 0
	for pass := 0; pass < maxPasses; pass++ {
		plan := r.pass()
		for _, a := range plan.Actions {
			if a.Kind == reconcile.ActionDeleteAllOf && a.Group == "" {
				deleteAlls++
			}
		}
		if deleteAlls > 1 {
			r.t.Fatalf("phase %s: DeleteAllOf sent %d times\n%s", name, deleteAlls, strings.Join(r.log, "\n"))
		}
		if goal() {
			return
		}
		if plan.Verdict.RequeueAfter <= 0 {
			r.t.Fatalf("phase %s stalled at pass %d: the plan has no wake-up and the goal is not reached\n%s\n%s",
				name, pass, strings.Join(r.log, "\n"), plan.Explain())
		}
		r.w.Clock.Advance(plan.Verdict.RequeueAfter)
	}
	r.t.Fatalf("phase %s: goal not reached in %d passes\n%s", name, maxPasses, strings.Join(r.log, "\n"))
}

// pass is one wake-up: a kubelet starts pods, the loop plans and applies,
// and the controller writes the status Status computes.
func (r *wakeRun) pass() reconcile.Plan {
	ctx := context.Background()
	plan, rep, err := r.loop.Step(ctx)
	if err != nil {
		r.t.Fatalf("step: %v", err)
	}
	s, err := r.loop.Snapshot()
	if err != nil {
		r.t.Fatal(err)
	}
	// Status reads the snapshot the plan was made on; the informer's view
	// now is as good (it lags either way).
	st, err := reconcile.Status(reconcile.StatusInput{Snapshot: s, Report: &rep}, r.loop.Options)
	if err != nil {
		r.t.Fatalf("status: %v", err)
	}
	r.loop.Cluster.Conditions = st.Conditions
	r.log = append(r.log, fmt.Sprintf("%s: %s %d actions, requeue %v", r.w.Clock.Now().Format("15:04:05"), plan.Verdict.Reason.Code, len(plan.Actions), plan.Verdict.RequeueAfter))
	return plan
}

// live is the API server's non-terminating pods of the cluster.
func (r *wakeRun) live() []corev1.Pod {
	var out []corev1.Pod
	for _, p := range r.loop.Store.Pods(r.loop.Cluster.Namespace) {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// running: one head and the group's replicas, none suspended.
func (r *wakeRun) running() bool {
	c := &r.loop.Cluster
	heads, workers := 0, 0
	for _, p := range r.live() {
		if p.Labels[reconcile.LabelNodeType] == reconcile.NodeTypeHead {
			heads++
		} else {
			workers++
		}
	}
	return heads == 1 && workers == int(*c.Spec.WorkerGroups[0].Replicas) &&
		!meta.IsStatusConditionTrue(c.Conditions, reconcile.ConditionSuspended)
}

// suspended: no pod left and the status says RayClusterSuspended.
func (r *wakeRun) suspended() bool {
	return len(r.loop.Store.Pods(r.loop.Cluster.Namespace)) == 0 &&
		meta.IsStatusConditionTrue(r.loop.Cluster.Conditions, reconcile.ConditionSuspended)
}

// upgraded: running, with every pod of the new head image.
func (r *wakeRun) upgraded() bool {
	if !r.running() {
		return false
	}
	want := r.loop.Cluster.Spec.HeadGroup.Template.Spec.Containers[0].Image
	for _, p := range r.live() {
		if p.Labels[reconcile.LabelNodeType] == reconcile.NodeTypeHead && p.Spec.Containers[0].Image != want {
			return false
		}
	}
	return true
}
