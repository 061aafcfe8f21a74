package vcluster

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// CheckState reports the first way s breaks the hierarchy's invariants, or
// nil. It is written apart from State.Validate, as the reference plancore's
// own properties check every state against, and exported for properties over
// your own control plane: every node of the table in exactly one leaf bucket,
// every member known and of its bucket's template, job buckets one to one
// with job clusters whose parent is divisible, no empty bucket or template,
// buckets sorted, and every divisible cluster's nodes exactly its undivided
// nodes plus its job clusters' nodes.
func CheckState(s State) error { return checkInvariants(s) }

// CheckPlan reports the first rule that p, planned on before, breaks, or nil.
// It holds the per-plan rules plancore's own operation property checks:
//
//   - a refused plan carries OutOfResource or UnsafeToRemove, changes nothing
//     and leaves After equal to before;
//   - a plan applies to before (State.Next), and the result keeps CheckState;
//   - every move, create, remove, purge and revision has a reason code and
//     message;
//   - busy safety: no alive busy node leaves an indivisible cluster or a job
//     cluster, and no alive node leaves a job bucket unless that job cluster
//     is removed;
//   - the primary is never flushed, only flushed indivisible clusters are
//     published, and every changed record is flushed;
//   - a job cluster's revision never changes, and another cluster's only
//     grows.
//
// Rules that depend on the operation asked for (which cluster's revision may
// change, dead nodes returned first on a scale-down) are for your property.
func CheckPlan(before State, p Plan) error {
	if r := p.Refusal; r != nil {
		if r.Reason.Code != ReasonOutOfResource && r.Reason.Code != ReasonUnsafeToRemove {
			return fmt.Errorf("refusal code %q", r.Reason.Code)
		}
		if p.Acts() || !reflect.DeepEqual(p.After, before) {
			return fmt.Errorf("a refused plan changes something")
		}
		return nil
	}
	next, err := before.Next(p)
	if err != nil {
		return fmt.Errorf("the plan does not apply: %w", err)
	}
	for _, check := range []func() error{
		func() error { return checkInvariants(next) },
		func() error { return checkReasons(p) },
		func() error { return checkBusySafety(before, p) },
		func() error { return checkFlushPublish(before, next, p) },
		func() error { return checkRevisionsGrow(before, next) },
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkRevisionsGrow: job revisions never change, the others only grow.
func checkRevisionsGrow(s, next State) error {
	for _, id := range clusterIDs(s, next) {
		a, okA := RecordOf(s, id)
		b, okB := RecordOf(next, id)
		switch {
		case !okA || !okB || a.Revision == b.Revision:
		case IsJobID(id):
			return fmt.Errorf("revisions: job revision of %s changed", id)
		case b.Revision < a.Revision:
			return fmt.Errorf("revisions: revision of %s went down %d → %d", id, a.Revision, b.Revision)
		}
	}
	return nil
}

// checkInvariants is a reference check of the hierarchy's two invariants,
// one leaf per node and division, written independently of
// State.Validate: every node of the table in exactly one leaf, every member
// known with its bucket's template, job buckets one to one with job
// clusters, no empty bucket or template, buckets sorted.
func checkInvariants(s State) error {
	holders := map[string]Cluster{PrimaryID: s.Primary}
	maps.Copy(holders, s.Logical)
	count := map[string]int{}
	jobBuckets := map[string]bool{}
	for _, hid := range slices.Sorted(maps.Keys(holders)) {
		if err := checkHolder(s, hid, holders[hid], count, jobBuckets); err != nil {
			return err
		}
	}
	for id := range s.Nodes.All() {
		if count[id] != 1 {
			return fmt.Errorf("node %s is in %d leaf buckets", id, count[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(count)) {
		if ok := s.Nodes.Has(id); !ok {
			return fmt.Errorf("member %s unknown", id)
		}
	}
	if err := checkJobs(s, holders, jobBuckets); err != nil {
		return err
	}
	return checkDivision(s, holders)
}

// checkHolder checks the buckets of holder c, counting each member.
func checkHolder(s State, hid string, c Cluster, count map[string]int, jobBuckets map[string]bool) error {
	for _, t := range slices.Sorted(maps.Keys(c.Buckets)) {
		byBucket := c.Buckets[t]
		if len(byBucket) == 0 {
			return fmt.Errorf("%s: empty template entry %s", hid, t)
		}
		for _, b := range slices.Sorted(maps.Keys(byBucket)) {
			ids := byBucket[b]
			if b != Undivided && (c.Kind == Indivisible || c.Kind == Job) {
				return fmt.Errorf("indivisible %s has bucket %s", hid, b)
			}
			if len(ids) == 0 {
				return fmt.Errorf("%s: empty bucket %s/%s", hid, t, b)
			}
			if !slices.IsSorted(ids) {
				return fmt.Errorf("%s: bucket %s/%s unsorted", hid, t, b)
			}
			if b != Undivided {
				parent, _, _ := SplitJobID(b)
				if _, ok := s.Jobs[b]; !ok || parent != hid {
					return fmt.Errorf("%s: bucket %s has no job cluster", hid, b)
				}
				jobBuckets[b] = true
			}
			for _, id := range ids {
				n, ok := s.Nodes.Get(id)
				if !ok {
					return fmt.Errorf("%s: member %s not in the node table", hid, id)
				}
				if n.Template != t {
					return fmt.Errorf("%s: member %s of template %s under %s", hid, id, n.Template, t)
				}
				count[id]++
			}
		}
	}
	return nil
}

// checkJobs checks every job cluster against its parent's bucket.
func checkJobs(s State, holders map[string]Cluster, jobBuckets map[string]bool) error {
	for _, jid := range slices.Sorted(maps.Keys(s.Jobs)) {
		j := s.Jobs[jid]
		parent, _, _ := SplitJobID(jid)
		p, ok := holders[parent]
		if !ok || (p.Kind != Primary && p.Kind != Divisible) {
			return fmt.Errorf("job %s has no divisible parent", jid)
		}
		if j.Kind != Job || len(j.Buckets) != 0 {
			return fmt.Errorf("job %s: kind %s, own buckets %v", jid, j.Kind, j.Buckets)
		}
		// An empty job cluster has no bucket; a non-empty one must.
		if len(s.Members(jid)) > 0 != jobBuckets[jid] {
			return fmt.Errorf("job %s: members and bucket disagree", jid)
		}
	}
	return nil
}

// checkDivision checks V_divisible = V_undivided + Σ V_job.
func checkDivision(s State, holders map[string]Cluster) error {
	// V_divisible = V_undivided + Σ V_job, disjoint: the record of each
	// divisible cluster is the union of its buckets.
	for _, hid := range slices.Sorted(maps.Keys(holders)) {
		c := holders[hid]
		if c.Kind != Divisible && c.Kind != Primary {
			continue
		}
		total := 0
		for _, byBucket := range c.Buckets {
			for _, ids := range byBucket {
				total += len(ids)
			}
		}
		sum := 0
		for _, byBucket := range c.Buckets {
			sum += len(byBucket[Undivided])
		}
		for jid := range s.Jobs {
			if p, _, _ := SplitJobID(jid); p == hid {
				sum += len(s.Members(jid))
			}
		}
		if sum != total || len(s.Members(hid)) != total {
			return fmt.Errorf("%s: V_divisible %d != V_undivided + ΣV_job %d", hid, total, sum)
		}
	}
	return nil
}

// checkReasons: every action (move, create, remove, purge, revision) says
// why it happens, with a code. (Dropping the Reason of any planner's moves
// or revisions makes it fail.)
func checkReasons(p Plan) error {
	var reasons []Reason
	for _, m := range p.Moves {
		reasons = append(reasons, m.Reason)
	}
	for _, c := range p.Creates {
		reasons = append(reasons, c.Reason)
	}
	for _, r := range p.Removes {
		reasons = append(reasons, r.Reason)
	}
	for _, n := range p.Purge {
		reasons = append(reasons, n.Reason)
	}
	for _, r := range p.Revisions {
		reasons = append(reasons, r.Reason)
	}
	for i, r := range reasons {
		if r.Code == "" || r.Message == "" {
			return fmt.Errorf("reasons: action %d of the plan has no reason:\n%s", i, p)
		}
	}
	return nil
}

// checkBusySafety: no plan moves an alive busy node out of an indivisible
// cluster, nor a node out of a job bucket except when removing that job
// cluster or swapping out a dead node.
func checkBusySafety(s State, p Plan) error {
	for _, m := range p.Moves {
		n := s.Nodes.Node(m.Node)
		from, _ := s.Cluster(m.From.Cluster)
		if m.From.Bucket != Undivided {
			if n.Alive && !p.Removed(m.From.Bucket) {
				return fmt.Errorf("busy safety: alive node %s moved out of job bucket %s", m.Node, m.From)
			}
			if n.Alive && n.Busy {
				return fmt.Errorf("busy safety: busy node %s left job cluster %s", m.Node, m.From.Bucket)
			}
		}
		if from.Kind == Indivisible && n.Alive && n.Busy && m.To.Cluster != m.From.Cluster {
			return fmt.Errorf("busy safety: busy node %s left indivisible %s", m.Node, m.From.Cluster)
		}
	}
	return nil
}

// checkFlushPublish: the primary is never flushed, every published cluster
// is flushed and indivisible, and every changed record is flushed.
func checkFlushPublish(s, next State, p Plan) error {
	if slices.Contains(p.Flush, PrimaryID) {
		return fmt.Errorf("flush/publish: the primary is flushed")
	}
	for _, id := range p.Publish {
		if !slices.Contains(p.Flush, id) {
			return fmt.Errorf("flush/publish: %s published without a flush", id)
		}
		if c, ok := s.Cluster(id); ok && c.Kind == Divisible {
			return fmt.Errorf("flush/publish: divisible %s published", id)
		}
		if c, ok := next.Cluster(id); ok && c.Kind == Divisible {
			return fmt.Errorf("flush/publish: divisible %s published", id)
		}
	}
	for _, id := range clusterIDs(s, next) {
		a, okA := RecordOf(s, id)
		b, okB := RecordOf(next, id)
		if (okA != okB || !reflect.DeepEqual(a, b)) && !slices.Contains(p.Flush, id) {
			return fmt.Errorf("flush/publish: record of %s changed but it is not flushed", id)
		}
	}
	return nil
}

// clusterIDs returns the logical and job cluster ids of both states, sorted.
func clusterIDs(states ...State) []string {
	ids := map[string]bool{}
	for _, st := range states {
		for id := range st.Logical {
			ids[id] = true
		}
		for id := range st.Jobs {
			ids[id] = true
		}
	}
	return slices.Sorted(maps.Keys(ids))
}
