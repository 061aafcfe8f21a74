package fake_test

import (
	"context"
	"errors"
	"testing"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
	"github.com/plancore/plancore/reconcile"
	"github.com/plancore/plancore/vcluster"
)

// TestTypedNilExecutors: a typed nil (a nil *fake.X in the executor
// interface, which compares unequal to nil) is refused like an untyped nil,
// with the core's nil sentinel wrapping its ErrInvalidInput, and never
// panics. Breaking it: compare exec == nil instead of plancore.IsNil in any
// core's Apply (the fake's method is then called on a nil pointer).
func TestTypedNilExecutors(t *testing.T) {
	ctx := context.Background()
	rows := []struct {
		core      string
		call      func() error
		sentinel  error
		invalidIn error
	}{
		{"reconcile", func() error {
			_, err := reconcile.Apply(ctx, reconcile.Plan{Actions: []reconcile.Action{{Kind: reconcile.ActionDeleteAllOf,
				DeleteAll: &reconcile.DeleteAllOf{Namespace: "ns", Selector: map[string]string{"a": "b"}}}}}, (*fake.ReconcileExecutor)(nil))
			return err
		}, reconcile.ErrNilExecutor, reconcile.ErrInvalidInput},
		{"dag", func() error {
			_, err := dag.Apply(ctx, dag.Plan{}, (*fake.DAGRunner)(nil))
			return err
		}, dag.ErrNilExecutor, dag.ErrInvalidInput},
		{"lock", func() error {
			_, err := lock.Apply(ctx, lock.Plan{Kind: lock.Release}, (*fake.LockStore)(nil))
			return err
		}, lock.ErrNilStore, lock.ErrInvalidInput},
		{"vcluster", func() error {
			_, err := vcluster.Apply(ctx, vcluster.Plan{}, (*fake.VClusterStore)(nil))
			return err
		}, vcluster.ErrNilExecutor, vcluster.ErrInvalidInput},
		{"gpu", func() error {
			_, err := gpu.ApplyBind(ctx, gpu.BindInput{}, (*fake.GPUBind)(nil), (*fake.ClockWaiter)(nil))
			return err
		}, gpu.ErrNilExecutor, gpu.ErrInvalidInput},
		{"capacity", func() error {
			_, err := capacity.Dispatch(ctx, (*capacity.MemoryStore)(nil), capacity.Plan{}, "rid-1", capacity.DispatchOptions{})
			return err
		}, capacity.ErrNilStore, capacity.ErrInvalidInput},
	}
	for _, r := range rows {
		t.Run(r.core, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic: %v", p)
				}
			}()
			err := r.call()
			if !errors.Is(err, r.sentinel) || !errors.Is(err, r.invalidIn) {
				t.Fatalf("err = %v, want %v wrapping %v", err, r.sentinel, r.invalidIn)
			}
		})
	}
}
