package vcluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// PlanRecover rebuilds the hierarchy after a control-plane restart from the
// node table and the stored records (the anchor's PrimaryCluster::Initialize)
// and returns it with the plan that brings storage in line with it. The
// returned State already includes every repair: State.Apply of the plan on it
// changes nothing, and Apply(ctx, plan, state, exec) writes the repaired
// records.
//
// Replay follows the seed: the primary takes every alive node of the table;
// each logical record takes its nodes (a node missing from the table, or dead
// there, is dead, built from the record's template and hostname); each job
// record of a primary or logical divisible parent P takes its nodes from P's
// undivided bucket into P's bucket named after it. Nodes a job record lists
// but P's record lacks (D = V_job − V_divisible, left by a restart between
// the job's flush and its parent's) are added to P, the same number of dead
// undivided nodes of P per template are dropped, alive ones leave the
// primary, and P is flushed. The anchor adds D to P but leaves those nodes in
// the primary too and never flushes P, so the repair repeats at every restart
// (spec §2.5).
//
// Nothing stored is trusted blindly, and no input makes it fail or panic.
// Each resolution is reported in Anomalies: a node claimed by two records
// stays with the first by id (logical records before job records); a job
// record whose parent is missing or indivisible is deleted and its alive
// nodes stay in the primary; a record template that disagrees with the node
// table yields to the table; removed, duplicate and unnamed records are
// dropped. Every record whose content changes is flushed; removed clusters'
// records are deleted.
//
// Revisions come from the records unchanged (the anchor resets them to the
// load time; spec §2.9). Detached counts and JobDead flags are the caller's
// to restore from its own tables.
func PlanRecover(table []Node, records []Record) (State, Plan) {
	var anomalies []Anomaly
	note := func(kind, cluster, node, format string, args ...any) {
		anomalies = append(anomalies, Anomaly{Kind: kind, Cluster: cluster, Node: node, Message: fmt.Sprintf(format, args...)})
	}

	// The node table. Rows are ordered so that duplicates resolve the same
	// way whatever the input order: a dead row wins (a dead node never comes
	// back), then the smaller template and hostname.
	rows := slices.Clone(table)
	slices.SortFunc(rows, func(a, b Node) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(b2i(a.Alive), b2i(b.Alive)),
			cmp.Compare(a.Template, b.Template), cmp.Compare(a.Hostname, b.Hostname), cmp.Compare(b2i(a.Busy), b2i(b.Busy)))
	})
	known := map[string]Node{}
	for _, n := range rows {
		switch {
		case n.ID == "" || n.Template == "":
			note("bad-node", "", n.ID, "node table row with an empty id or template ignored")
			continue
		case known[n.ID].ID != "":
			note("duplicate-node", "", n.ID, "node table lists the node twice; kept %s", describeNode(known[n.ID]))
			continue
		}
		if !n.Alive {
			n.Busy = false
		}
		known[n.ID] = n
	}

	// The stored records: one per id, the highest revision winning, then the
	// smallest encoding, so the choice never depends on input order.
	byID := map[string]Record{}
	var deleted []string
	deletedPublish := map[string]bool{}
	sorted := slices.Clone(records)
	slices.SortStableFunc(sorted, func(a, b Record) int {
		if c := cmp.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		if recordBefore(a, b) {
			return -1
		}
		if recordBefore(b, a) {
			return 1
		}
		return 0
	})
	for _, r := range sorted {
		switch {
		case r.ID == "" || r.ID == PrimaryID:
			note("bad-record-id", r.ID, "", "record with id %q ignored: the primary has no record", r.ID)
			continue
		case r.Removed:
			note("removed-record", r.ID, "", "removed record deleted")
			deleted = append(deleted, r.ID)
			continue
		}
		if _, dup := byID[r.ID]; dup {
			// Sorted: the first record of an id is the winner.
			note("duplicate-record", r.ID, "", "two records with one id; the higher revision wins")
			continue
		}
		byID[r.ID] = r
	}

	nodes := map[string]Node{}
	type place struct{ holder, bucket string }
	at := map[string]place{}
	for id, n := range known {
		if n.Alive {
			nodes[id] = n
			at[id] = place{PrimaryID, Undivided}
		}
	}
	logical := map[string]Cluster{}
	jobs := map[string]Cluster{}
	// admit brings node id listed by record r into the model, or reports why
	// it cannot: it returns the node and whether it may be placed.
	admit := func(r Record, id string) (Node, bool) {
		rn := r.Nodes[id]
		if id == "" {
			note("bad-node", r.ID, id, "empty node id dropped")
			return Node{}, false
		}
		if n, ok := nodes[id]; ok {
			if rn.Template != n.Template {
				note("template-mismatch", r.ID, id, "record says template %q, node table says %q; the table wins", rn.Template, n.Template)
			}
			return n, true
		}
		if n, ok := known[id]; ok { // dead in the table
			if rn.Template != n.Template {
				note("template-mismatch", r.ID, id, "record says template %q, node table says %q; the table wins", rn.Template, n.Template)
			}
			return n, true
		}
		if rn.Template == "" {
			note("unknown-template", r.ID, id, "node missing from the table and without a template in the record dropped")
			return Node{}, false
		}
		return Node{ID: id, Hostname: rn.Hostname, Template: rn.Template}, true
	}

	ids := slices.Sorted(maps.Keys(byID))
	for _, cid := range ids {
		r := byID[cid]
		if IsJobID(cid) {
			continue
		}
		c := Cluster{ID: cid, Kind: Indivisible, Revision: r.Revision}
		if r.Divisible {
			c.Kind = Divisible
		}
		logical[cid] = c
		for _, id := range slices.Sorted(maps.Keys(r.Nodes)) {
			n, ok := admit(r, id)
			if !ok {
				continue
			}
			if p, owned := at[id]; owned && p.holder != PrimaryID {
				note("claimed-twice", cid, id, "node already in %s; it stays there", p.holder)
				continue
			}
			nodes[id] = n
			at[id] = place{cid, Undivided}
		}
	}

	type pending struct {
		job  string
		node Node
	}
	var d []pending
	for _, jid := range ids {
		if !IsJobID(jid) {
			continue
		}
		r := byID[jid]
		parent, job, _ := SplitJobID(jid)
		if job == "" || (parent != PrimaryID && logical[parent].Kind != Divisible) {
			note("orphan-job", jid, "", "job record without a divisible parent deleted")
			deleted = append(deleted, jid)
			deletedPublish[jid] = true
			continue
		}
		jobs[jid] = Cluster{ID: jid, Kind: Job, Revision: r.Revision}
		for _, id := range slices.Sorted(maps.Keys(r.Nodes)) {
			n, ok := admit(r, id)
			if !ok {
				continue
			}
			p, owned := at[id]
			switch {
			case owned && p == (place{parent, Undivided}):
				at[id] = place{parent, jid}
			case !owned || (p == place{PrimaryID, Undivided}):
				d = append(d, pending{jid, n})
			default:
				note("claimed-twice", jid, id, "node already in %s; it stays there", orJob(p.holder, p.bucket))
			}
		}
	}

	// Repair: D joins its job's bucket; the parent drops as many dead
	// undivided nodes per template (best effort).
	dCount := map[string]map[string]int{}
	for _, pd := range d {
		parent, _, _ := SplitJobID(pd.job)
		id := pd.node.ID
		if p, owned := at[id]; owned && p != (place{PrimaryID, Undivided}) {
			note("claimed-twice", pd.job, id, "node already in %s; it stays there", orJob(p.holder, p.bucket))
			continue
		}
		nodes[id] = pd.node
		at[id] = place{parent, pd.job}
		if parent != PrimaryID {
			note("repair", parent, id, "node of job cluster %s missing from its parent's record added", pd.job)
			if dCount[parent] == nil {
				dCount[parent] = map[string]int{}
			}
			dCount[parent][pd.node.Template]++
		}
	}
	for _, parent := range slices.Sorted(maps.Keys(dCount)) {
		var undivided []string
		for id, p := range at {
			if p == (place{parent, Undivided}) && !nodes[id].Alive {
				undivided = append(undivided, id)
			}
		}
		slices.Sort(undivided)
		for _, t := range slices.Sorted(maps.Keys(dCount[parent])) {
			want := dCount[parent][t]
			for _, id := range undivided {
				if want > 0 && nodes[id].Template == t {
					delete(at, id)
					delete(nodes, id)
					want--
				}
			}
			if want > 0 {
				note("unbalanced-repair", parent, "", "%d dead undivided node(s) of template %s were missing; the cluster grew", want, t)
			}
		}
	}

	s := State{
		Nodes:   nodes,
		Primary: Cluster{ID: PrimaryID, Kind: Primary, Buckets: map[string]map[string][]string{}},
		Logical: logical,
		Jobs:    jobs,
	}
	holders := map[string]*Cluster{PrimaryID: &s.Primary}
	for _, id := range slices.Sorted(maps.Keys(at)) {
		p := at[id]
		h, ok := holders[p.holder]
		if !ok {
			c := logical[p.holder]
			h = &c
			holders[p.holder] = h
		}
		if h.Buckets == nil {
			h.Buckets = map[string]map[string][]string{}
		}
		t := nodes[id].Template
		if h.Buckets[t] == nil {
			h.Buckets[t] = map[string][]string{}
		}
		h.Buckets[t][p.bucket] = append(h.Buckets[t][p.bucket], id)
	}
	for id, h := range holders {
		if id != PrimaryID {
			logical[id] = *h
		}
	}
	for _, cid := range slices.Sorted(maps.Keys(logical)) {
		c := logical[cid]
		rs := s.ReplicaSet(cid)
		var zero []string
		for _, t := range byID[cid].ZeroTemplates {
			if _, has := rs[t]; !has && t != "" {
				zero = append(zero, t)
			}
		}
		slices.Sort(zero)
		c.ZeroTemplates = slices.Compact(zero)
		if c.Buckets == nil {
			c.Buckets = map[string]map[string][]string{}
		}
		logical[cid] = c
	}

	// Flush every record whose content changed; delete the dropped ones.
	var plan Plan
	var flush, publish []string
	for _, id := range ids {
		rec, ok := RecordOf(s, id)
		if !ok {
			continue // deleted above
		}
		if !sameRecord(rec, byID[id]) {
			flush = append(flush, id)
			if c, _ := s.Cluster(id); c.Kind == Job || c.Kind == Indivisible {
				publish = append(publish, id)
			}
		}
	}
	slices.Sort(deleted)
	deleted = slices.Compact(deleted)
	for _, id := range deleted {
		if _, ok := s.Cluster(id); ok {
			continue // a removed tombstone beside a live record of the same id
		}
		plan.Removes = append(plan.Removes, id)
		flush = append(flush, id)
		if deletedPublish[id] {
			publish = append(publish, id)
		}
	}
	plan.Flush = flushOrder(flush)
	plan.Publish = flushOrder(publish)
	plan.Anomalies = anomalies
	return s, plan
}

// recordBefore reports whether a should win over b as the record of one id:
// the higher revision, then the smaller encoding.
func recordBefore(a, b Record) bool {
	if a.Revision != b.Revision {
		return a.Revision > b.Revision
	}
	ea, _ := MarshalRecord(a)
	eb, _ := MarshalRecord(b)
	return string(ea) < string(eb)
}

// sameRecord reports whether two records have the same content.
func sameRecord(a, b Record) bool {
	return a.ID == b.ID && a.Divisible == b.Divisible && a.Revision == b.Revision && a.Removed == b.Removed &&
		maps.Equal(a.Nodes, b.Nodes) && slices.Equal(a.ZeroTemplates, b.ZeroTemplates)
}

func describeNode(n Node) string {
	return fmt.Sprintf("{template %s, hostname %s, alive %v}", n.Template, n.Hostname, n.Alive)
}

func orJob(holder, bucket string) string {
	if bucket != Undivided {
		return bucket
	}
	return holder
}
