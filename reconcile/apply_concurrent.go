package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Run is a span [Start, End) of a plan's actions that may be sent
// concurrently (see Plan's order and concurrency rules).
type Run struct{ Start, End int }

// independent reports whether consecutive actions of kind, in one group, are
// independent of each other: pod creates and deletes name distinct pods, and
// replica-group creates distinct groups.
func independent(k ActionKind) bool {
	return k == ActionCreatePod || k == ActionDeletePod || k == ActionCreateReplicaGroup
}

// Runs splits p.Actions into runs: each maximal sequence of consecutive
// actions of the same Group and of an independent kind (CreatePod,
// DeletePod, CreateReplicaGroup) is one run, and every other action a run
// of its own. Applied run after run, the actions of each run in any order
// or at once, a plan has the effect of its sequential order.
func (p Plan) Runs() []Run {
	var runs []Run
	for i := 0; i < len(p.Actions); {
		a := &p.Actions[i]
		end := i + 1
		if independent(a.Kind) {
			for end < len(p.Actions) && p.Actions[end].Kind == a.Kind && p.Actions[end].Group == a.Group {
				end++
			}
		}
		runs = append(runs, Run{Start: i, End: end})
		i = end
	}
	return runs
}

// applyConcurrently is Apply with each run's actions sent concurrently, at
// most MaxInFlight at a time, creates in slow-start batches. Each action
// goes through the sequential Apply on a one-action plan, so its
// expectations, token, failure reason and formation record are exactly
// Apply's; the token prefix carries the action's index, so tokens stay
// unique. It stops like Apply at the first failed action unless KeepGoing,
// except that the actions of the same batch already sent complete; every
// later action is reported skipped. Results are in plan order.
func (o Applier) applyConcurrently(ctx context.Context, p Plan, exec Executor) (Report, error) {
	seq := o
	seq.MaxInFlight = 0
	// The plan's expectation operations (drops, the Recreate wipe) and its
	// refusals come first, once.
	ops := p
	ops.Actions = nil
	_, opsErr := seq.Apply(ctx, ops, exec)
	if errors.Is(opsErr, ErrInvalidInput) {
		return Report{}, opsErr
	}
	p.ExpectationOps = ExpectationOps{}

	rep := Report{Results: make([]ActionResult, len(p.Actions))}
	var mu sync.Mutex
	one := func(ctx context.Context, i int) {
		sub := p
		sub.Actions = p.Actions[i : i+1]
		so := seq
		so.TokenPrefix = fmt.Sprintf("%s%d.", o.TokenPrefix, i)
		r, _ := so.Apply(ctx, sub, exec) // its error is in r.Results[0].Err
		res := r.Results[0]
		res.Index = i
		mu.Lock()
		rep.Results[i] = res
		rep.Forming = append(rep.Forming, r.Forming...)
		mu.Unlock()
	}
	failed := func(res ActionResult) bool {
		return res.Kind != ActionPatchPodAnnotations && res.Err != nil && (res.Status == CallFailed || res.Status == CallAmbiguous)
	}
	// A done context makes Apply report an action skipped without calling
	// the executor or touching the expectations.
	skipped, cancel := context.WithCancel(ctx)
	cancel()
	sem := make(chan struct{}, o.MaxInFlight)
	for _, run := range p.Runs() {
		batch := run.End - run.Start
		if p.Actions[run.Start].Kind != ActionDeletePod && !o.NoSlowStart {
			batch = 1
		}
		for i := run.Start; i < run.End; {
			if rep.Stopped {
				one(skipped, i)
				i++
				continue
			}
			n := min(batch, run.End-i)
			var wg sync.WaitGroup
			for k := i; k < i+n; k++ {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					one(ctx, k)
				}()
			}
			wg.Wait()
			if !o.KeepGoing && slices.ContainsFunc(rep.Results[i:i+n], failed) {
				rep.Stopped = true
			}
			i += n
			batch *= 2
		}
	}
	// Formation records in plan order, whatever order the calls ended in.
	slices.SortStableFunc(rep.Forming, func(a, b FormingGroup) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.ReplicaName, b.ReplicaName))
	})
	return rep, errors.Join(opsErr, rep.Err())
}
