package kube

import (
	"context"

	"github.com/plancore/plancore/reconcile"
)

// Concurrency bounds ApplyConcurrently. The zero value means the defaults.
type Concurrency struct {
	// MaxInFlight bounds the executor calls in flight at once (default 16).
	MaxInFlight int
	// NoSlowStart sends a run of creates at full width at once. By default a
	// run of creates goes out in batches of 1, 2, 4, … (Kubernetes
	// ReplicaSet's slowStartBatch), so a create that is bound to fail (a
	// ResourceQuota, an admission webhook) fails once, not MaxInFlight times.
	NoSlowStart bool
}

func (c Concurrency) limit() int {
	if c.MaxInFlight <= 0 {
		return 16
	}
	return c.MaxInFlight
}

// ApplyConcurrently is reconcile.Applier.Apply with o.MaxInFlight and
// o.NoSlowStart taken from c: each run of independent actions (see
// reconcile.Plan.Runs) is sent concurrently, at most c.MaxInFlight calls at
// a time, creates in slow-start batches, every action through Apply itself
// (expectations, tokens, failure reasons and formation records as Apply
// makes them). The rules are reconcile's; this is their wiring for a
// controller-runtime executor, kept for callers of earlier versions.
func ApplyConcurrently(ctx context.Context, p reconcile.Plan, exec reconcile.Executor, o reconcile.Applier, c Concurrency) (reconcile.Report, error) {
	o.MaxInFlight, o.NoSlowStart = c.limit(), c.NoSlowStart
	return o.Apply(ctx, p, exec)
}
