package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

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

// parallel reports whether actions of kind may be sent side by side: the
// reconcile contract makes consecutive actions of the same group and kind
// independent.
func parallel(k reconcile.ActionKind) bool {
	return k == reconcile.KindCreatePod || k == reconcile.KindDeletePod || k == reconcile.KindCreateReplicaGroup
}

// ApplyConcurrently is reconcile.Apply with bounded concurrency: each run of
// consecutive actions of the same group and kind (pod creates, pod deletes,
// replica-group creates) is sent in parallel, at most c.MaxInFlight calls at
// a time, creates in slow-start batches; every other action, and the runs
// themselves, keep the plan's order. Each action goes through reconcile.Apply
// itself, so expectations (o.Expectations, recorded before each call and
// concluded after it, per o.Recording), tokens on generated names, failure
// reasons and formation records are exactly Apply's; the expectations tracker
// is safe for concurrent use. Tokens stay unique: each action's token prefix
// carries its index in the plan.
//
// Like Apply it stops at the first failed action unless o.KeepGoing, except
// that actions already in flight in the same batch complete: it stops after
// the batch, and every later action is reported as skipped (never attempted,
// never recorded). Report.Results is in plan order. The error is Apply's: the
// failed actions' errors joined (patches excluded), or Apply's refusal of the
// plan or executor before anything was done.
func ApplyConcurrently(ctx context.Context, p reconcile.Plan, exec reconcile.Executor, o reconcile.Applier, c Concurrency) (reconcile.Report, error) {
	rep := reconcile.Report{Results: make([]reconcile.ActionResult, len(p.Actions))}
	// The plan's expectation operations (drops, the Recreate wipe) come first,
	// once, as in Apply; so do its refusals (nil executor, no cluster UID).
	ops := p
	ops.Actions = nil
	_, opsErr := o.Apply(ctx, ops, exec)
	if errors.Is(opsErr, reconcile.ErrInvalidInput) {
		return reconcile.Report{}, opsErr
	}
	p.ExpectationOps = reconcile.ExpectationOps{}

	var mu sync.Mutex
	one := func(ctx context.Context, i int) reconcile.ActionResult {
		sub := p
		sub.Actions = p.Actions[i : i+1]
		so := o
		so.TokenPrefix = fmt.Sprintf("%s%d.", o.TokenPrefix, i)
		r, _ := so.Apply(ctx, sub, exec) // its error is in r.Results[0].Err
		res := r.Results[0]
		res.Index = i
		if len(r.Forming) > 0 {
			mu.Lock()
			rep.Forming = append(rep.Forming, r.Forming...)
			mu.Unlock()
		}
		return res
	}
	failed := func(res reconcile.ActionResult) bool {
		return res.Kind != reconcile.KindPatchPodAnnotations && res.Err != nil &&
			(res.Status == reconcile.CallFailed || res.Status == reconcile.CallAmbiguous)
	}

	// A cancelled context makes Apply report an action as skipped without
	// calling the executor or touching the expectations.
	skipped, cancel := context.WithCancel(ctx)
	cancel()

	for i := 0; i < len(p.Actions); {
		if rep.Stopped {
			rep.Results[i] = one(skipped, i)
			i++
			continue
		}
		a := p.Actions[i]
		end := i + 1
		if parallel(a.Kind) {
			for end < len(p.Actions) && p.Actions[end].Kind == a.Kind && p.Actions[end].Group == a.Group {
				end++
			}
		}
		batch := len(p.Actions)
		if a.Kind != reconcile.KindDeletePod && !c.NoSlowStart {
			batch = 1
		}
		for i < end && !rep.Stopped {
			n := min(batch, end-i)
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(c.limit())
			for k := i; k < i+n; k++ {
				g.Go(func() error {
					rep.Results[k] = one(gctx, k)
					return nil
				})
			}
			_ = g.Wait()
			if !o.KeepGoing && slices.ContainsFunc(rep.Results[i:i+n], failed) {
				rep.Stopped = true
			}
			i += n
			batch *= 2
		}
	}
	return rep, errors.Join(opsErr, rep.Err())
}
