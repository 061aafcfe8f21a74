package vcluster_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/vcluster"
	"github.com/plancore/plancore/vcluster/vclustertest"
)

// TestPropertyOperations: random operation sequences (create, resize, job
// clusters, removals, remove-nodes, replenish, GC, node deaths and joins,
// busy, detached and job-dead flips) keep every invariant (one leaf per node, division, busy safety,
// all-or-nothing, flush/publish, revisions, determinism, input unchanged)
// after every step; genState checks each step with checkOp, which calls
// vcluster.CheckPlan and CheckState. Break that makes it fail: dropping the
// last cluster of each flush list in flushOrder (plan.go), found after about
// 800 checks, so within CI's 1,000.
func TestPropertyOperations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		genState(t, 300, 20)
	})
}

// killSome marks a random subset of alive nodes dead.
func killSome(t *rapid.T, s vcluster.State) vcluster.State {
	for _, id := range sortedNodes(s) {
		if s.Nodes.Node(id).Alive && rapid.IntRange(0, 3).Draw(t, "kill") == 0 {
			var err error
			if s, err = s.SetNode(id, false, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

// TestPropertyReplenish: after one uncapped replenish no cluster holds a
// dead node while its provider has an alive undivided node of the template,
// the primary holds no dead node, and no replica set changes; with a cap m
// the uncapped plan's k swaps take ⌈k/m⌉ rounds of at most m swaps.
func TestPropertyReplenish(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, _ := genState(t, 120, 20)
		s = killSome(t, s)
		full := vcluster.Options{}
		healed, p, err := checkOp(s, vclustertest.Op{Desc: "replenish", Replenish: &full, Plan: func(s vcluster.State) (vcluster.Plan, error) {
			return vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, full)
		}})
		if err != nil {
			t.Fatal(err)
		}
		if p.Truncated {
			t.Fatal("uncapped plan truncated")
		}
		k := len(p.Moves) / 2
		m := rapid.IntRange(1, 5).Draw(t, "cap")
		capped := vcluster.Options{MaxSwaps: m}
		cur := s
		rounds := 0
		for {
			next, p, err := checkOp(cur, vclustertest.Op{Desc: "capped replenish", Replenish: &capped, Plan: func(s vcluster.State) (vcluster.Plan, error) {
				return vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, capped)
			}})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Moves)/2 > m {
				t.Fatalf("%d swaps with MaxSwaps %d", len(p.Moves)/2, m)
			}
			cur = next
			if len(p.Moves) == 0 {
				break
			}
			rounds++
			if rounds > k {
				t.Fatalf("more than %d rounds", k)
			}
		}
		if want := (k + m - 1) / m; rounds != want {
			t.Fatalf("healed %d swaps in %d rounds of %d, want %d", k, rounds, m, want)
		}
		if err := replaceableDead(cur); err != nil {
			t.Fatal(err)
		}
		// Healing in rounds ends where one plan ends, up to which alive
		// provider nodes were picked: the replica sets agree.
		for id := range healed.Logical {
			if !reflect.DeepEqual(healed.ReplicaSet(id), cur.ReplicaSet(id)) {
				t.Fatalf("%s: %v vs %v", id, healed.ReplicaSet(id), cur.ReplicaSet(id))
			}
		}
	})
}

// tableOf returns the node table of s in id order.
func tableOf(s vcluster.State) []vcluster.Node {
	out := make([]vcluster.Node, 0, s.Nodes.Len())
	for _, id := range sortedNodes(s) {
		out = append(out, s.Nodes.Node(id))
	}
	return out
}

// storedRecords returns every record a store holds for s: the logical and
// job clusters (the primary is never stored).
func storedRecords(s vcluster.State) map[string]vcluster.Record {
	out := map[string]vcluster.Record{}
	for _, r := range vcluster.Records(s, vcluster.Filter{IncludeJobs: true}) {
		out[r.ID] = r
	}
	return out
}

func recordList(m map[string]vcluster.Record) []vcluster.Record {
	out := []vcluster.Record{}
	for _, id := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[id])
	}
	return out
}

// normalize drops what recovery does not restore: busyness, detached
// counts, job liveness and the primary's revision.
func normalize(s vcluster.State) vcluster.State {
	s = s.Clone()
	for id, n := range s.Nodes.All() {
		n.Busy = false
		s.Nodes = s.Nodes.Set(id, n)
	}
	s.Primary.Revision = 0
	for id, c := range s.Logical {
		c.Detached = 0
		s.Logical[id] = c
	}
	for id, c := range s.Jobs {
		c.Detached, c.JobDead = 0, false
		s.Jobs[id] = c
	}
	return s
}

var equateEmpty = cmpopts.EquateEmpty()

// TestPropertyRecoverRoundTrip: recovery, second half. Storing every record of a
// valid state whose primary holds no dead node and recovering gives back the
// same state, and writes nothing.
func TestPropertyRecoverRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, _ := genState(t, 150, 20)
		s = killSome(t, s)
		p, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if s, err = s.Next(p); err != nil {
			t.Fatal(err)
		}
		table := rapid.Permutation(tableOf(s)).Draw(t, "table")
		records := rapid.Permutation(recordList(storedRecords(s))).Draw(t, "records")
		got, plan := recoverPlan(table, records)
		if err := got.Validate(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(normalize(s), normalize(got), equateEmpty); diff != "" {
			t.Fatalf("recovered state differs (-want +got):\n%s", diff)
		}
		if !plan.Empty() || len(plan.Anomalies) != 0 {
			t.Fatalf("recovery of a consistent store planned:\n%s", plan)
		}
	})
}

// genRecords draws an arbitrary record set over the node ids: stale,
// conflicting, orphaned, with unknown nodes and wrong templates.
func genRecords(t *rapid.T, ids []string, templates []string) []vcluster.Record {
	clusterIDs := []string{"a", "b", "c", "a##j", "b##j", "c##k", "zz##j", vcluster.PrimaryID + "##p", vcluster.PrimaryID, "", "a##"}
	var out []vcluster.Record
	for range rapid.IntRange(0, 8).Draw(t, "records") {
		r := vcluster.Record{
			ID:        rapid.SampledFrom(clusterIDs).Draw(t, "id"),
			Divisible: rapid.Bool().Draw(t, "divisible"),
			Revision:  rapid.Uint64Range(0, 5).Draw(t, "revision"),
			Removed:   rapid.IntRange(0, 9).Draw(t, "removed") == 0,
			Nodes:     map[string]vcluster.RecordNode{},
		}
		pool := append(slices.Clone(ids), "ghost1", "ghost2", "")
		for range rapid.IntRange(0, 6).Draw(t, "members") {
			id := rapid.SampledFrom(pool).Draw(t, "member")
			r.Nodes[id] = vcluster.RecordNode{Template: rapid.SampledFrom(append(slices.Clone(templates), "")).Draw(t, "template"), Hostname: "h"}
		}
		if rapid.IntRange(0, 4).Draw(t, "zero") == 0 {
			r.ZeroTemplates = []string{rapid.SampledFrom(templates).Draw(t, "zero-template")}
		}
		out = append(out, r)
	}
	return out
}

// TestPropertyRecoverAnything: recovery, first half. Recovery of any node table
// and record set yields a valid state (one leaf per node, division), never panics, does not depend
// on input order, and is a fixed point: recovering again from the records
// it writes changes nothing.
func TestPropertyRecoverAnything(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		templates := []string{"t0", "t1"}
		var table []vcluster.Node
		var ids []string
		for i := range rapid.IntRange(0, 12).Draw(t, "nodes") {
			id := fmt.Sprintf("n%02d", i)
			ids = append(ids, id)
			if rapid.IntRange(0, 5).Draw(t, "missing") == 0 {
				continue // known to records only
			}
			alive := rapid.Bool().Draw(t, "alive")
			table = append(table, vcluster.Node{ID: id, Template: rapid.SampledFrom(templates).Draw(t, "tpl"), Alive: alive, Busy: alive && rapid.Bool().Draw(t, "busy")})
		}
		if rapid.Bool().Draw(t, "dup") && len(table) > 0 {
			dup := table[0]
			dup.Alive = !dup.Alive
			table = append(table, dup, vcluster.Node{ID: "", Template: "t0", Alive: true})
		}
		records := genRecords(t, ids, templates)
		tableIn, recordsIn := slices.Clone(table), slices.Clone(records)
		s, p := recoverPlan(table, records)
		if !reflect.DeepEqual(tableIn, table) || !reflect.DeepEqual(recordsIn, records) {
			t.Fatal("PlanRecover modified its input")
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("%v\n%s", err, p)
		}
		if err := checkInvariants(s); err != nil {
			t.Fatal(err)
		}
		s2, p2 := recoverPlan(rapid.Permutation(table).Draw(t, "table order"), rapid.Permutation(records).Draw(t, "record order"))
		if diff := cmp.Diff(s, s2); diff != "" {
			t.Fatalf("recovery depends on input order:\n%s", diff)
		}
		if diff := cmp.Diff(p.String(), p2.String()); diff != "" {
			t.Fatalf("recovery plan depends on input order:\n%s", diff)
		}
		// Write the plan to a store holding the input records, recover again.
		stored := map[string]vcluster.Record{}
		for _, r := range records {
			if r.ID != "" && r.ID != vcluster.PrimaryID {
				stored[r.ID] = r // the store holds one per id; which is irrelevant after the rewrite below
			}
		}
		for id := range stored {
			if r, ok := vcluster.RecordOf(s, id); ok {
				stored[id] = r
			} else {
				delete(stored, id)
			}
		}
		for _, id := range p.Flush {
			if r, ok := vcluster.RecordOf(s, id); ok {
				stored[id] = r
			} else {
				delete(stored, id)
			}
		}
		s3, p3 := recoverPlan(table, recordList(stored))
		if diff := cmp.Diff(normalizeKeepBusy(s), normalizeKeepBusy(s3), equateEmpty); diff != "" {
			t.Fatalf("second recovery differs:\n%s", diff)
		}
		if len(p3.Flush) != 0 {
			t.Fatalf("second recovery rewrites records:\n%s", p3)
		}
	})
}

func normalizeKeepBusy(s vcluster.State) vcluster.State { return s.Clone() }

// TestPropertyRecoverCutBetweenFlushes: a control plane that stored every
// record of s0, planned one random operation and crashed after writing only
// some of the plan's flushes recovers a valid state, and its recovery is a
// fixed point.
func TestPropertyRecoverCutBetweenFlushes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s0, w := genState(t, 120, 15)
		s0 = killSome(t, s0)
		stored := storedRecords(s0)
		var o vclustertest.Op
		if rapid.Bool().Draw(t, "replenish") {
			opts := vcluster.Options{}
			o = vclustertest.Op{Desc: "replenish", Plan: func(s vcluster.State) (vcluster.Plan, error) {
				return vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, opts)
			}}
		} else {
			o = w.Op(vclustertest.RapidChooser(t), s0)
			if o.Plan == nil {
				return
			}
		}
		p, err := o.Plan(s0)
		if err != nil {
			return
		}
		s1, err := s0.Next(p)
		if err != nil {
			t.Fatal(err)
		}
		cut := rapid.IntRange(0, len(p.Flush)).Draw(t, "cut")
		for _, id := range p.Flush[:cut] {
			if r, ok := vcluster.RecordOf(s1, id); ok {
				stored[id] = r
			} else {
				delete(stored, id)
			}
		}
		got, rp := recoverPlan(tableOf(s1), recordList(stored))
		if err := got.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := checkInvariants(got); err != nil {
			t.Fatal(err)
		}
		if cut == len(p.Flush) && len(s1.Primary.Buckets) >= 0 {
			// Everything was written: recovery gives s1 back, except the
			// dead nodes of the primary, which replay never adds.
			want := normalize(s1)
			if _, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: want}, vcluster.Options{}); err != nil {
				t.Fatal(err)
			}
			for _, id := range sortedNodes(want) {
				if !want.Nodes.Node(id).Alive && slices.Contains(want.Primary.Buckets[want.Nodes.Node(id).Template][vcluster.Undivided], id) {
					return
				}
			}
			if diff := cmp.Diff(want, normalize(got), equateEmpty); diff != "" {
				t.Fatalf("complete write recovered differently:\n%s\n%s", diff, rp)
			}
		}
		for _, id := range rp.Flush {
			if r, ok := vcluster.RecordOf(got, id); ok {
				stored[id] = r
			} else {
				delete(stored, id)
			}
		}
		again, p2 := recoverPlan(tableOf(s1), recordList(stored))
		if len(p2.Flush) != 0 {
			t.Fatalf("recovery is not a fixed point:\n%s", p2)
		}
		if diff := cmp.Diff(normalize(got), normalize(again), equateEmpty); diff != "" {
			t.Fatalf("second recovery differs:\n%s", diff)
		}
	})
}

// TestRemoveNodesIgnoresRequestOrder: determinism for the order of
// requested ids.
func TestPropertyRemoveNodesOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, _ := genState(t, 60, 10)
		id := rapid.SampledFrom(vclustertest.LogicalIDs).Draw(t, "id")
		members := s.Members(id)
		if len(members) == 0 {
			return
		}
		ids := rapid.SliceOfN(rapid.SampledFrom(members), 1, 5).Draw(t, "ids")
		p1, err1 := vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: s, ID: id, Nodes: ids, Revision: 7})
		p2, err2 := vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: s, ID: id, Nodes: rapid.Permutation(ids).Draw(t, "perm"), Revision: 7})
		if !reflect.DeepEqual(p1, p2) || fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("order matters:\n%s %v\n%s %v", p1, err1, p2, err2)
		}
	})
}

// TestPropertyScaleDownDeadFirst: a scale-down (the anchor may keep dead
// nodes and hand back alive ones). A scale-down by k of a template
// whose undivided bucket holds at least k dead nodes returns only dead nodes
// (checkPlanRules asserts it for every create/update of checkOp).
func TestPropertyScaleDownDeadFirst(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, _ := genState(t, 80, 12)
		s = killSome(t, s)
		ids := sortedLogical(s)
		if len(ids) == 0 {
			return
		}
		id := rapid.SampledFrom(ids).Draw(t, "cluster")
		c := s.Logical[id]
		rs := s.ReplicaSet(id)
		for _, tpl := range sortedTemplates(c) {
			dead := 0
			for _, n := range c.Buckets[tpl][vcluster.Undivided] {
				if !s.Nodes.Node(n).Alive {
					dead++
				}
			}
			rs[tpl] -= rapid.IntRange(0, dead).Draw(t, "k")
		}
		req := vcluster.Request{ID: id, Divisible: c.Kind == vcluster.Divisible, Revision: c.Revision, ReplicaSets: rs}
		if _, _, err := checkOp(s, vclustertest.Op{Desc: "scale down " + id, Target: id, Request: &req, Plan: func(s vcluster.State) (vcluster.Plan, error) {
			return vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: req, Revision: 99})
		}}); err != nil {
			t.Fatal(err)
		}
	})
}

func sortedLogical(s vcluster.State) []string {
	return slices.Sorted(maps.Keys(s.Logical))
}
