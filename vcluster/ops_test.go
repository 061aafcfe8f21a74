package vcluster_test

import (
	"errors"
	"fmt"
	"maps"
	"reflect"

	"pgregory.net/rapid"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/vcluster"
	"github.com/plancore/plancore/vcluster/vclustertest"
)

// checkOp runs one operation on s with every per-step invariant check and
// returns the next state.
func checkOp(s vcluster.State, o vclustertest.Op) (vcluster.State, vcluster.Plan, error) {
	before := s.Clone()
	if o.Event != nil {
		next, err := o.Event(s)
		if err != nil {
			return vcluster.State{}, vcluster.Plan{}, fmt.Errorf("%s: event failed: %w", o.Desc, err)
		}
		if !reflect.DeepEqual(before, s) {
			return vcluster.State{}, vcluster.Plan{}, fmt.Errorf("%s: event modified its input", o.Desc)
		}
		if err := checkInvariants(next); err != nil {
			return vcluster.State{}, vcluster.Plan{}, fmt.Errorf("%s: %w", o.Desc, err)
		}
		return next, vcluster.Plan{}, nil
	}
	p, err := o.Plan(s)
	// Planning leaves its input unchanged.
	if !reflect.DeepEqual(before, s) {
		return vcluster.State{}, p, fmt.Errorf("%s: planning modified its input", o.Desc)
	}
	// Determinism: the same input (rebuilt maps, so another iteration order) gives the
	// same plan and the same error.
	p2, err2 := o.Plan(s.Clone())
	if !reflect.DeepEqual(p, p2) || p.String() != p2.String() || fmt.Sprint(err) != fmt.Sprint(err2) {
		return vcluster.State{}, p, fmt.Errorf("%s: nondeterministic:\n%s\n%v\nvs\n%s\n%v", o.Desc, p, err, p2, err2)
	}
	if err != nil {
		// Refusals by error are invalid input only, naming each field.
		var inv *plancore.InvalidError
		if !errors.As(err, &inv) || !errors.Is(err, vcluster.ErrInvalidInput) || len(inv.Errors) == 0 {
			return vcluster.State{}, p, fmt.Errorf("%s: error %v is not an invalid-input error", o.Desc, err)
		}
		if !p.Empty() || p.Refused() {
			return vcluster.State{}, p, fmt.Errorf("%s: invalid input with a plan", o.Desc)
		}
		return s, p, nil
	}
	if p.Refusal != nil {
		// Refused plans are coded and empty, and their recommendation works.
		switch p.Refusal.Reason.Code {
		case vcluster.ReasonOutOfResource, vcluster.ReasonUnsafeToRemove:
		default:
			return vcluster.State{}, p, fmt.Errorf("%s: refusal code %q", o.Desc, p.Refusal.Reason.Code)
		}
		if p.Acts() || p.Empty() || !reflect.DeepEqual(p.After, s) {
			return vcluster.State{}, p, fmt.Errorf("%s: refused with a non-empty plan or another state", o.Desc)
		}
		if err := checkRecommend(s, o, p.Refusal); err != nil {
			return vcluster.State{}, p, err
		}
		return s, p, nil
	}
	next, err := s.Next(p)
	if err != nil {
		return vcluster.State{}, p, fmt.Errorf("%s: apply: %w\n%s", o.Desc, err, p)
	}
	if !reflect.DeepEqual(before, s) {
		return vcluster.State{}, p, fmt.Errorf("%s: Apply modified its input", o.Desc)
	}
	if err := checkInvariants(next); err != nil {
		return vcluster.State{}, p, fmt.Errorf("%s: leaf/division invariants: %w\n%s", o.Desc, err, p)
	}
	if err := checkPlanRules(s, next, p, o); err != nil {
		return vcluster.State{}, p, fmt.Errorf("%s: %w\n%s", o.Desc, err, p)
	}
	if o.Replenish != nil {
		if err := checkReplenished(s, next, *o.Replenish == (vcluster.Options{})); err != nil {
			return vcluster.State{}, p, fmt.Errorf("%s: replenishment: %w\n%s", o.Desc, err, p)
		}
	}
	return next, p, nil
}

// checkPlanRules checks vcluster.CheckPlan (reasons, busy safety, the
// flush/publish rules, job revisions), dead-first scale-down and the
// revision rules of the operation for a successful plan.
func checkPlanRules(s, next vcluster.State, p vcluster.Plan, o vclustertest.Op) error {
	for _, check := range []func() error{
		func() error { return vcluster.CheckPlan(s, p) },
		func() error { return checkDeadFirst(s, p, o) },
		func() error { return checkRevisionRules(s, next, p, o) },
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkDeadFirst: a scale-down by k of a template whose undivided bucket
// holds at least k dead nodes returns only dead nodes.
func checkDeadFirst(s vcluster.State, p vcluster.Plan, o vclustertest.Op) error {
	if o.Request == nil || len(o.Request.Prefer) > 0 {
		return nil
	}
	c := s.Logical[o.Request.ID]
	{
		for tpl, byBucket := range c.Buckets {
			dead := 0
			for _, id := range byBucket[vcluster.Undivided] {
				if !s.Nodes.Node(id).Alive {
					dead++
				}
			}
			removed, removedAlive := 0, 0
			for _, m := range p.Moves {
				if m.Template == tpl && m.From.Cluster == o.Request.ID {
					removed++
					if s.Nodes.Node(m.Node).Alive {
						removedAlive++
					}
				}
			}
			if removed <= dead && removedAlive > 0 {
				return fmt.Errorf("dead first: scale-down of %s/%s returned %d alive nodes while %d dead ones were there", o.Request.ID, tpl, removedAlive, dead)
			}
		}
	}
	return nil
}

// checkRevisionRules: only the target of a create, update or remove-nodes
// changes revision, strictly upwards; job revisions never change.
func checkRevisionRules(s, next vcluster.State, p vcluster.Plan, o vclustertest.Op) error {
	for _, id := range vcluster.ClusterIDsForTest(s, next) {
		a, okA := vcluster.RecordOf(s, id)
		b, okB := vcluster.RecordOf(next, id)
		if okA && okB && !vcluster.IsJobID(id) && a.Revision != b.Revision {
			if (o.Target != id && o.Target != "*") || b.Revision <= a.Revision {
				return fmt.Errorf("revisions: revision of %s changed %d → %d", id, a.Revision, b.Revision)
			}
		}
		if okA && okB && vcluster.IsJobID(id) && a.Revision != b.Revision {
			return fmt.Errorf("revisions: job revision of %s changed", id)
		}
		if o.Request != nil && o.Request.ID == id && okB && okA && b.Revision <= a.Revision {
			return fmt.Errorf("revisions: update of %s did not increase the revision", id)
		}
	}
	return nil
}

// checkReplenished checks the replenishment rules after Apply(s, PlanReplenish(s)).
func checkReplenished(s, next vcluster.State, uncapped bool) error {
	for id := range s.Logical {
		if !reflect.DeepEqual(s.ReplicaSet(id), next.ReplicaSet(id)) {
			return fmt.Errorf("replica set of %s changed: %v → %v", id, s.ReplicaSet(id), next.ReplicaSet(id))
		}
	}
	for id := range s.Jobs {
		if !reflect.DeepEqual(s.ReplicaSet(id), next.ReplicaSet(id)) {
			return fmt.Errorf("replica set of %s changed", id)
		}
	}
	for t, byBucket := range next.Primary.Buckets {
		for _, id := range byBucket[vcluster.Undivided] {
			if !next.Nodes.Node(id).Alive {
				return fmt.Errorf("dead %s (%s) left in the primary's undivided bucket", id, t)
			}
		}
	}
	if !uncapped {
		return nil
	}
	return replaceableDead(next)
}

// replaceableDead reports a dead node whose provider still has an alive
// node of its template undivided.
func replaceableDead(s vcluster.State) error {
	hasAlive := func(holder, t string) bool {
		c, _ := s.Cluster(holder)
		for _, id := range c.Buckets[t][vcluster.Undivided] {
			if s.Nodes.Node(id).Alive {
				return true
			}
		}
		return false
	}
	for id, c := range s.Logical {
		for t, byBucket := range c.Buckets {
			for b, ids := range byBucket {
				for _, n := range ids {
					if s.Nodes.Node(n).Alive {
						continue
					}
					if hasAlive(vcluster.PrimaryID, t) {
						return fmt.Errorf("dead %s in %s/%s while the primary has an alive %s", n, id, b, t)
					}
					if b != vcluster.Undivided && hasAlive(id, t) {
						return fmt.Errorf("dead %s in job %s while its parent has an alive undivided %s", n, b, t)
					}
				}
			}
		}
	}
	for t, byBucket := range s.Primary.Buckets {
		for b, ids := range byBucket {
			for _, n := range ids {
				if b != vcluster.Undivided && !s.Nodes.Node(n).Alive && hasAlive(vcluster.PrimaryID, t) {
					return fmt.Errorf("dead %s in job %s while the primary has an alive %s", n, b, t)
				}
			}
		}
	}
	return nil
}

// checkRecommend checks the second half of all-or-nothing: for an add-only or
// remove-only request, the request rebuilt from Recommend succeeds.
func checkRecommend(s vcluster.State, o vclustertest.Op, e *vcluster.Refusal) error {
	if o.Request == nil || (e.Reason.Code != vcluster.ReasonOutOfResource && e.Reason.Code != vcluster.ReasonUnsafeToRemove) {
		return nil
	}
	cur := s.ReplicaSet(o.Request.ID)
	adds, removes := false, false
	for t, n := range o.Request.ReplicaSets {
		adds = adds || n > cur[t]
	}
	for t, n := range cur {
		removes = removes || n > o.Request.ReplicaSets[t]
	}
	if adds && removes {
		return nil
	}
	rebuilt := *o.Request
	rebuilt.ReplicaSets = vcluster.ReplicaSet{}
	maps.Copy(rebuilt.ReplicaSets, o.Request.ReplicaSets)
	for t, n := range e.Recommend {
		if e.Reason.Code == vcluster.ReasonOutOfResource {
			rebuilt.ReplicaSets[t] = cur[t] + n
		} else {
			rebuilt.ReplicaSets[t] = cur[t] - n
		}
	}
	if p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: rebuilt, Revision: 1 << 40}); err != nil || p.Refused() {
		return fmt.Errorf("%s: all-or-nothing: the request rebuilt from Recommend %v fails: %v %v", o.Desc, e.Recommend, err, p.Refusal)
	}
	return nil
}

// genState builds a state by a random operation sequence from a primary of
// 0..maxNodes nodes over 1..6 templates, checking every step with checkOp.
func genState(t *rapid.T, maxNodes, maxOps int) (vcluster.State, *vclustertest.World) {
	return vclustertest.Build(t, maxNodes, maxOps, func(s vcluster.State, o vclustertest.Op) (vcluster.State, error) {
		next, _, err := checkOp(s, o)
		return next, err
	})
}
