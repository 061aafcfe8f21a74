package reconciletest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/reconcile"
	"github.com/plancore/plancore/reconcile/reconciletest"
)

// myController stands for your controller: it lists pods from an informer,
// plans with reconcile.Decide and applies the plan through an Applier that
// records expectations. Here its client and informer are the fake world's.
type myController struct {
	world   *fake.World
	pods    *fake.PodStore
	tracker *expectations.Tracker
	cluster reconcile.Cluster
	opts    reconcile.Options
	passes  uint64
}

func newMyController(w *fake.World, c reconcile.Cluster, o reconcile.Options) *myController {
	tr, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		panic(err)
	}
	return &myController{world: w, pods: fake.NewPodStore(w, fake.PodStoreOptions{Lag: 2 * time.Second}), tracker: tr, cluster: c, opts: o}
}

// Reconcile is one pass; it returns what it planned from, and the plan.
func (c *myController) Reconcile(ctx context.Context) (reconcile.Snapshot, reconcile.Plan, error) {
	c.passes++
	in := reconcile.Snapshot{Cluster: c.cluster, Pods: c.pods.Informer().List(c.cluster.Namespace, nil),
		Expectations: c.tracker.Snapshot(), Now: c.world.Clock.Now(), Seed: c.passes}
	plan, err := reconcile.Decide(in, c.opts)
	if err != nil {
		return in, plan, err
	}
	ap := reconcile.Applier{Expectations: c.tracker, Clock: c.world.Clock}
	_, err = ap.Apply(ctx, plan, fake.NewReconcileExecutor(c.pods))
	if errors.Is(err, reconcile.ErrInvalidInput) || errors.Is(err, reconcile.ErrExpectation) {
		return in, plan, err
	}
	return in, plan, nil // failed pod calls are the faults; the next pass re-plans
}

// TestMyControllerKeepsInvariants is the property a user writes over their own
// controller: a drawn cluster and options, a world whose API calls fail or
// lose their responses, and reconcile.CheckPlan on every plan.
// Break that makes it fail: new replica groups created one host short in
// reconcile/multihost.go.
func TestMyControllerKeepsInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		world := fake.NewWorld(rapid.Uint64().Draw(t, "seed"), reconciletest.Now)
		for _, kind := range []string{fake.KindPodCreate, fake.KindPodDelete} {
			world.Faults.SetRates(kind, 0.2, 0.1, errors.New("apiserver: connection reset"))
		}
		c := newMyController(world, reconciletest.Cluster(3).Draw(t, "cluster"), reconciletest.Options(false).Draw(t, "options"))
		for range 15 {
			world.Clock.Advance(time.Second)
			in, plan, err := c.Reconcile(context.Background())
			if err == nil {
				err = reconcile.CheckPlan(in, c.opts, plan)
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, plan)
			}
		}
	})
}
