package reconcile_test

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/reconcile"
	"github.com/plancore/plancore/reconcile/reconciletest"
)

// bothModes runs a property in default mode and with KubeRayV170().
func bothModes(t *testing.T, prop func(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan)) {
	for _, mode := range []struct {
		name   string
		compat bool
	}{{"default", false}, {"anchor", true}} {
		t.Run(mode.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				s := reconciletest.Snapshot(6).Draw(t, "snapshot")
				o := reconciletest.Options(mode.compat).Draw(t, "options")
				p, err := reconcile.Decide(s, o)
				if err != nil {
					t.Fatalf("Decide: %v", err)
				}
				prop(t, s, o, p)
			})
		})
	}
}

// TestPropCheckPlan: every plan keeps reconcile.CheckPlan's invariants (head
// creates, unhealthy groups, safe deletes, expectation gates, desired counts,
// whole replica groups, unique indices, reasons and counters).
// Breaks that make it fail: terminating pods counted as active in decide.go
// (a terminating pod deleted in default mode), and new replica groups created
// one host short in multihost.go.
func TestPropCheckPlan(t *testing.T) {
	bothModes(t, func(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan) {
		if err := reconcile.CheckPlan(s, o, p); err != nil {
			t.Fatalf("%v\n%s", err, p.Explain())
		}
	})
}

// Determinism and permutation invariance.
func TestPropDeterministic(t *testing.T) {
	bothModes(t, func(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan) {
		again, err := reconcile.Decide(s, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, again) || p.Explain() != again.Explain() {
			t.Fatalf("second Decide differs:\n%s", cmp.Diff(p, again))
		}
		perm := s
		perm.Pods = rapid.Permutation(s.Pods).Draw(t, "perm")
		permuted, err := reconcile.Decide(perm, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, permuted) {
			t.Fatalf("permuting pods changed the plan:\n%s", cmp.Diff(p, permuted))
		}
	})
}

// The snapshot is unchanged by Decide.
func TestPropInputUnchanged(t *testing.T) {
	for _, compatMode := range []bool{false, true} {
		rapid.Check(t, func(t *rapid.T) {
			s := reconciletest.Snapshot(6).Draw(t, "snapshot")
			o := reconciletest.Options(compatMode).Draw(t, "options")
			before := reconciletest.Clone(s)
			if _, err := reconcile.Decide(s, o); err != nil {
				t.Fatal(err)
			}
			if diff := snapshotDiff(before, s); diff != "" {
				t.Fatalf("Decide changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

// snapshotDiff reports how after differs from before, or "". The plain
// fields are diffed with cmp, the cluster and the pods on their own so that
// a change reads with its path. The expectations state has only unexported
// fields, which cmp refuses to read; its records are compared with
// reflect.DeepEqual and described by the exported counts.
func snapshotDiff(before, after reconcile.Snapshot) string {
	var b strings.Builder
	if d := cmp.Diff(before.Cluster, after.Cluster); d != "" {
		fmt.Fprintf(&b, "Cluster:\n%s", d)
	}
	if d := cmp.Diff(before.Pods, after.Pods); d != "" {
		fmt.Fprintf(&b, "Pods:\n%s", d)
	}
	rest := func(s reconcile.Snapshot) reconcile.Snapshot {
		s.Cluster, s.Pods, s.Expectations = reconcile.Cluster{}, nil, nil
		return s
	}
	if d := cmp.Diff(rest(before), rest(after)); d != "" {
		fmt.Fprintf(&b, "Snapshot (other fields):\n%s", d)
	}
	if !reflect.DeepEqual(before.Expectations, after.Expectations) {
		fmt.Fprintf(&b, "Expectations: the state changed (%d records before, %d after)\n",
			before.Expectations.Len(), after.Expectations.Len())
	}
	return b.String()
}

// TestConcurrentDecide runs Decide on one snapshot from two goroutines; the
// race detector checks that nothing is written.
func TestConcurrentDecide(t *testing.T) {
	s := snap(cluster(group("a", 3), mhGroup("tpu", 2, 2)), withHead(worker("w1", "a", phase(corev1.PodFailed)), worker("w2", "a"))...)
	var wg sync.WaitGroup
	plans := make([]reconcile.Plan, 4)
	for i := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := opts()
			o.NameMode = reconcile.NameModeDerived
			p, err := reconcile.Decide(s, o)
			if err != nil {
				t.Error(err)
			}
			plans[i] = p
		}()
	}
	wg.Wait()
	for i := 1; i < len(plans); i++ {
		if diff := cmp.Diff(plans[0], plans[i]); diff != "" {
			t.Fatal(diff)
		}
	}
}
