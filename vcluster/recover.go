package vcluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// RecoverInput is everything PlanRecover reads.
type RecoverInput struct {
	// Nodes is the node table: every node the control plane knows, alive or
	// dead, with its template and hostname.
	Nodes []Node
	// Records are the stored records, as read back from storage.
	Records []Record
}

// Validate accepts every input: PlanRecover trusts nothing stored and
// reports what it could not use as Anomalies instead of refusing.
func (in RecoverInput) Validate() error { return nil }

// PlanRecover rebuilds the hierarchy after a control-plane restart from the
// node table and the stored records (the anchor's PrimaryCluster::Initialize)
// and returns the plan that brings storage in line with it; the plan's After
// is the recovered state. It already includes every repair: State.Next of
// the plan on it changes nothing, and Apply(ctx, plan, exec) writes the
// repaired records.
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
// the primary too and never flushes P, so the repair repeats at every
// restart.
//
// Nothing stored is trusted blindly, and no input makes it fail or panic
// (only invalid Options are an error). Each resolution is reported in
// Anomalies: a node claimed by two records stays with the first by id
// (logical records before job records); a job record whose parent is
// missing or indivisible is deleted and its alive nodes stay in the primary;
// a record template that disagrees with the node table yields to the table;
// removed, duplicate and unnamed records are dropped. Every record whose
// content changes is flushed; removed clusters' records are deleted.
//
// Revisions come from the records unchanged (the anchor resets them to the
// load time). Detached counts and JobDead flags are the caller's to restore
// from its own tables.
func PlanRecover(in RecoverInput) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	r := &recoverer{deletedPublish: map[string]bool{}, nodes: map[string]Node{}, at: map[string]place{},
		logical: map[string]Cluster{}, jobs: map[string]Cluster{}}
	r.readTable(in.Nodes)
	r.pickRecords(in.Records)
	ids := slices.Sorted(maps.Keys(r.byID))
	r.replayPrimary()
	r.replayLogical(ids)
	r.replayJobs(ids)
	r.repair()
	s := r.build()
	p := r.plan(s, ids)
	p.After = s
	return p, nil
}

// place is where a node sits during recovery: a holder and a bucket.
type place struct{ holder, bucket string }

// pending is a node a job record lists that its parent's record lacks.
type pending struct {
	job  string
	node Node
}

// recoverer carries PlanRecover's findings from one step to the next.
type recoverer struct {
	anomalies      []Anomaly
	known          map[string]Node
	byID           map[string]Record
	deleted        []string
	deletedPublish map[string]bool
	nodes          map[string]Node
	at             map[string]place
	logical        map[string]Cluster
	jobs           map[string]Cluster
	d              []pending
}

func (r *recoverer) note(kind AnomalyKind, cluster, node, format string, args ...any) {
	r.anomalies = append(r.anomalies, Anomaly{Kind: kind, Cluster: cluster, Node: node, Message: fmt.Sprintf(format, args...)})
}

// readTable reads the node table. Rows are ordered so that duplicates
// resolve the same way whatever the input order: a dead row wins (a dead
// node never comes back), then the smaller template and hostname.
func (r *recoverer) readTable(table []Node) {
	rows := slices.Clone(table)
	slices.SortFunc(rows, func(a, b Node) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(b2i(a.Alive), b2i(b.Alive)),
			cmp.Compare(a.Template, b.Template), cmp.Compare(a.Hostname, b.Hostname), cmp.Compare(b2i(a.Busy), b2i(b.Busy)))
	})
	r.known = map[string]Node{}
	for _, n := range rows {
		switch {
		case n.ID == "" || n.Template == "":
			r.note(AnomalyBadNode, "", n.ID, "node table row with an empty id or template ignored")
			continue
		case r.known[n.ID].ID != "":
			r.note(AnomalyDuplicateNode, "", n.ID, "node table lists the node twice; kept %s", describeNode(r.known[n.ID]))
			continue
		}
		if !n.Alive {
			n.Busy = false
		}
		r.known[n.ID] = n
	}
}

// pickRecords keeps one record per id, the highest revision winning, then
// the smallest encoding, so the choice never depends on input order.
func (r *recoverer) pickRecords(records []Record) {
	r.byID = map[string]Record{}
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
	for _, rec := range sorted {
		switch {
		case rec.ID == "" || rec.ID == PrimaryID:
			r.note(AnomalyBadRecordID, rec.ID, "", "record with id %q ignored: the primary has no record", rec.ID)
			continue
		case rec.Removed:
			r.note(AnomalyRemovedRecord, rec.ID, "", "removed record deleted")
			r.deleted = append(r.deleted, rec.ID)
			continue
		}
		if _, dup := r.byID[rec.ID]; dup {
			// Sorted: the first record of an id is the winner.
			r.note(AnomalyDuplicateRecord, rec.ID, "", "two records with one id; the higher revision wins")
			continue
		}
		r.byID[rec.ID] = rec
	}
}

// replayPrimary puts every alive node of the table in the primary.
func (r *recoverer) replayPrimary() {
	for id, n := range r.known {
		if n.Alive {
			r.nodes[id] = n
			r.at[id] = place{PrimaryID, Undivided}
		}
	}
}

// admit brings node id listed by record rec into the model, or reports why
// it cannot: it returns the node and whether it may be placed.
func (r *recoverer) admit(rec Record, id string) (Node, bool) {
	rn := rec.Nodes[id]
	if id == "" {
		r.note(AnomalyBadNode, rec.ID, id, "empty node id dropped")
		return Node{}, false
	}
	n, ok := r.nodes[id]
	if !ok {
		n, ok = r.known[id] // dead in the table
	}
	if ok {
		if rn.Template != n.Template {
			r.note(AnomalyTemplateMismatch, rec.ID, id, "record says template %q, node table says %q; the table wins", rn.Template, n.Template)
		}
		return n, true
	}
	if rn.Template == "" {
		r.note(AnomalyUnknownTemplate, rec.ID, id, "node missing from the table and without a template in the record dropped")
		return Node{}, false
	}
	return Node{ID: id, Hostname: rn.Hostname, Template: rn.Template}, true
}

// replayLogical loads each logical record with its nodes undivided.
func (r *recoverer) replayLogical(ids []string) {
	for _, cid := range ids {
		rec := r.byID[cid]
		if IsJobID(cid) {
			continue
		}
		c := Cluster{ID: cid, Kind: Indivisible, Revision: rec.Revision}
		if rec.Divisible {
			c.Kind = Divisible
		}
		r.logical[cid] = c
		for _, id := range slices.Sorted(maps.Keys(rec.Nodes)) {
			n, ok := r.admit(rec, id)
			if !ok {
				continue
			}
			if p, owned := r.at[id]; owned && p.holder != PrimaryID {
				r.note(AnomalyClaimedTwice, cid, id, "node already in %s; it stays there", p.holder)
				continue
			}
			r.nodes[id] = n
			r.at[id] = place{cid, Undivided}
		}
	}
}

// replayJobs moves each job record's nodes from its parent's undivided
// bucket into the job's bucket, setting aside the nodes the parent lacks.
func (r *recoverer) replayJobs(ids []string) {
	for _, jid := range ids {
		if !IsJobID(jid) {
			continue
		}
		rec := r.byID[jid]
		parent, job, _ := SplitJobID(jid)
		if job == "" || (parent != PrimaryID && r.logical[parent].Kind != Divisible) {
			r.note(AnomalyOrphanJob, jid, "", "job record without a divisible parent deleted")
			r.deleted = append(r.deleted, jid)
			r.deletedPublish[jid] = true
			continue
		}
		r.jobs[jid] = Cluster{ID: jid, Kind: Job, Revision: rec.Revision}
		for _, id := range slices.Sorted(maps.Keys(rec.Nodes)) {
			n, ok := r.admit(rec, id)
			if !ok {
				continue
			}
			p, owned := r.at[id]
			switch {
			case owned && p == (place{parent, Undivided}):
				r.at[id] = place{parent, jid}
			case !owned || (p == place{PrimaryID, Undivided}):
				r.d = append(r.d, pending{jid, n})
			default:
				r.note(AnomalyClaimedTwice, jid, id, "node already in %s; it stays there", orJob(p.holder, p.bucket))
			}
		}
	}
}

// repair adds D to its job's bucket; the parent drops as many dead
// undivided nodes per template (best effort).
func (r *recoverer) repair() {
	dCount := map[string]map[string]int{}
	for _, pd := range r.d {
		parent, _, _ := SplitJobID(pd.job)
		id := pd.node.ID
		if p, owned := r.at[id]; owned && p != (place{PrimaryID, Undivided}) {
			r.note(AnomalyClaimedTwice, pd.job, id, "node already in %s; it stays there", orJob(p.holder, p.bucket))
			continue
		}
		r.nodes[id] = pd.node
		r.at[id] = place{parent, pd.job}
		if parent != PrimaryID {
			r.note(AnomalyRepair, parent, id, "node of job cluster %s missing from its parent's record added", pd.job)
			if dCount[parent] == nil {
				dCount[parent] = map[string]int{}
			}
			dCount[parent][pd.node.Template]++
		}
	}
	for _, parent := range slices.Sorted(maps.Keys(dCount)) {
		r.dropDead(parent, dCount[parent])
	}
}

// dropDead drops, per template, count dead undivided nodes of parent.
func (r *recoverer) dropDead(parent string, count map[string]int) {
	var undivided []string
	for id, p := range r.at {
		if p == (place{parent, Undivided}) && !r.nodes[id].Alive {
			undivided = append(undivided, id)
		}
	}
	slices.Sort(undivided)
	for _, t := range slices.Sorted(maps.Keys(count)) {
		want := count[t]
		for _, id := range undivided {
			if want > 0 && r.nodes[id].Template == t {
				delete(r.at, id)
				delete(r.nodes, id)
				want--
			}
		}
		if want > 0 {
			r.note(AnomalyUnbalancedRepair, parent, "", "%d dead undivided node(s) of template %s were missing; the cluster grew", want, t)
		}
	}
}

// build assembles the recovered state from the placed nodes.
func (r *recoverer) build() State {
	s := State{
		Nodes:   nodeTableOf(r.nodes),
		Primary: Cluster{ID: PrimaryID, Kind: Primary, Buckets: map[string]map[string][]string{}},
		Logical: r.logical,
		Jobs:    r.jobs,
	}
	holders := map[string]*Cluster{PrimaryID: &s.Primary}
	for _, id := range slices.Sorted(maps.Keys(r.at)) {
		p := r.at[id]
		h, ok := holders[p.holder]
		if !ok {
			c := r.logical[p.holder]
			h = &c
			holders[p.holder] = h
		}
		if h.Buckets == nil {
			h.Buckets = map[string]map[string][]string{}
		}
		t := r.nodes[id].Template
		if h.Buckets[t] == nil {
			h.Buckets[t] = map[string][]string{}
		}
		h.Buckets[t][p.bucket] = append(h.Buckets[t][p.bucket], id)
	}
	for id, h := range holders {
		if id != PrimaryID {
			r.logical[id] = *h
		}
	}
	for _, cid := range slices.Sorted(maps.Keys(r.logical)) {
		c := r.logical[cid]
		rs := s.ReplicaSet(cid)
		var zero []string
		for _, t := range r.byID[cid].ZeroTemplates {
			if _, has := rs[t]; !has && t != "" {
				zero = append(zero, t)
			}
		}
		slices.Sort(zero)
		c.ZeroTemplates = slices.Compact(zero)
		if c.Buckets == nil {
			c.Buckets = map[string]map[string][]string{}
		}
		r.logical[cid] = c
	}
	return s
}

// plan flushes every record whose content changed and deletes the dropped
// ones.
func (r *recoverer) plan(s State, ids []string) Plan {
	var plan Plan
	var flush, publish []string
	for _, id := range ids {
		rec, ok := RecordOf(s, id)
		if !ok {
			continue // deleted above
		}
		if !sameRecord(rec, r.byID[id]) {
			flush = append(flush, id)
			if c, _ := s.Cluster(id); c.Kind == Job || c.Kind == Indivisible {
				publish = append(publish, id)
			}
		}
	}
	slices.Sort(r.deleted)
	for _, id := range slices.Compact(r.deleted) {
		if _, ok := s.Cluster(id); ok {
			continue // a removed tombstone beside a live record of the same id
		}
		plan.Removes = append(plan.Removes, Removal{Cluster: id, Reason: Reason{Code: ReasonRecordDropped, Message: "stored record of " + id + " is not kept"}})
		flush = append(flush, id)
		if r.deletedPublish[id] {
			publish = append(publish, id)
		}
	}
	plan.Flush = flushOrder(flush)
	plan.Publish = flushOrder(publish)
	plan.Anomalies = r.anomalies
	return plan
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
