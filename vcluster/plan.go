package vcluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Place is a bucket of a cluster: where a node sits.
type Place struct {
	// Cluster is the id of the cluster whose Buckets hold the bucket: the
	// primary or a logical cluster (a job cluster's nodes are its parent's
	// bucket named after it).
	Cluster string
	// Bucket is Undivided or a job cluster id.
	Bucket string
}

func (p Place) String() string { return p.Cluster + "/" + p.Bucket }

// Move takes one node from one bucket to another, for a reason.
type Move struct {
	Node     string
	Template string
	From, To Place
	// Reason says why the node moves (ReasonScaleUp, ReasonReplaceDead, ...).
	Reason Reason
}

// Revision is the new revision (and zero templates) of a cluster the plan
// updates, for a reason.
type Revision struct {
	Cluster       string
	Revision      uint64
	ZeroTemplates []string
	Reason        Reason
}

// Creation is a cluster the plan adds (attributes only; nodes arrive by
// Moves), for a reason.
type Creation struct {
	Cluster
	Reason Reason
}

// Removal is a cluster the plan deletes, for a reason.
type Removal struct {
	Cluster string
	Reason  Reason
}

// PurgedNode is a dead node that leaves the model, for a reason.
type PurgedNode struct {
	Node   string
	Reason Reason
}

// Unreplaced lists the dead nodes of one template of one cluster that
// PlanReplenish could not heal for lack of a provider: the autoscaler's
// launch signal. Nodes held back by a swap budget are not listed.
type Unreplaced struct {
	Cluster  string
	Template string
	Nodes    []string
}

// AnomalyKind says, machine-readably, what PlanRecover did not trust.
type AnomalyKind string

const (
	// AnomalyDuplicateRecord: two records share one id; the higher revision
	// wins.
	AnomalyDuplicateRecord AnomalyKind = "duplicate-record"
	// AnomalyRemovedRecord: a removal tombstone was stored; it is deleted.
	AnomalyRemovedRecord AnomalyKind = "removed-record"
	// AnomalyBadRecordID: a record without id, or of the primary, is ignored.
	AnomalyBadRecordID AnomalyKind = "bad-record-id"
	// AnomalyTemplateMismatch: a record's template disagrees with the node
	// table; the table wins.
	AnomalyTemplateMismatch AnomalyKind = "template-mismatch"
	// AnomalyUnknownTemplate: a node missing from the table has no template
	// in its record; it is dropped.
	AnomalyUnknownTemplate AnomalyKind = "unknown-template"
	// AnomalyClaimedTwice: two records list one node; the first keeps it.
	AnomalyClaimedTwice AnomalyKind = "claimed-twice"
	// AnomalyOrphanJob: a job record without a divisible parent is deleted.
	AnomalyOrphanJob AnomalyKind = "orphan-job"
	// AnomalyRepair: a job cluster's node missing from its parent's record is
	// added to the parent.
	AnomalyRepair AnomalyKind = "repair"
	// AnomalyUnbalancedRepair: a repaired parent had too few dead undivided
	// nodes to drop, so it grew.
	AnomalyUnbalancedRepair AnomalyKind = "unbalanced-repair"
	// AnomalyBadNode: a node-table row or record entry without id or
	// template is ignored.
	AnomalyBadNode AnomalyKind = "bad-node"
	// AnomalyDuplicateNode: the node table lists one id twice.
	AnomalyDuplicateNode AnomalyKind = "duplicate-node"
)

// Anomaly is one stored record (or node-table row) PlanRecover did not trust,
// and how it was resolved.
type Anomaly struct {
	// Kind says what was found.
	Kind AnomalyKind
	// Cluster is the record the anomaly was found in ("" for the node table).
	Cluster string
	// Node is the node concerned, if any.
	Node string
	// Message says what was found and what was done.
	Message string
}

func (a Anomaly) String() string {
	return fmt.Sprintf("%s %s %s: %s", a.Kind, orDash(a.Cluster), orDash(a.Node), a.Message)
}

// Plan is the outcome of one planning call: the moves and writes that carry
// it out, or a Refusal. After is the state it leads to; write the plan out
// with Apply and an Executor, then keep After as the current state.
//
// Every list is in a deterministic order. Plans are values; an empty Plan
// changes nothing.
type Plan struct {
	// Refusal is set when the call cannot act now (out of resource, unsafe
	// to remove): nothing moves and nothing is written, and After is the
	// state the call was given.
	Refusal *Refusal
	// Moves are applied in order. Creates of the clusters moved into are
	// applied before them, Removes after them.
	Moves []Move
	// Creates are the clusters the plan adds (attributes only; nodes arrive by
	// Moves).
	Creates []Creation
	// Removes are the clusters the plan deletes; they are empty after the
	// Moves. An id absent from the state (a stored record being deleted by
	// PlanRecover) is a no-op for State.Next.
	Removes []Removal
	// Purge are dead nodes that leave the model, State.Nodes included. They
	// are in the primary's undivided bucket once Moves are applied.
	Purge []PurgedNode
	// Revisions are the clusters whose revision (and zero templates) change.
	Revisions []Revision
	// Flush are the clusters whose stored record must be written, or deleted
	// when the id is in Removes or absent from the state after the plan.
	// Job clusters come first, then logical clusters, each group in id
	// order, so a crash between two writes leaves a job record ahead of its
	// parent's: the cut PlanRecover repairs. The primary is
	// never listed. WRITE EACH RECORD BEFORE PUBLISHING IT.
	Flush []string
	// Publish is the subset of Flush sent to every worker: indivisible and
	// job clusters only, never a divisible one.
	Publish []string
	// Unreplaced is set by PlanReplenish only.
	Unreplaced []Unreplaced
	// Truncated is set when a swap budget cut the plan short; the rest
	// follows in later rounds.
	Truncated bool
	// Anomalies is set by PlanRecover only.
	Anomalies []Anomaly
	// Launch is set by PlanScale only: per template, how many nodes to
	// start (additions the primary could not supply plus dead nodes that
	// cannot be replaced).
	Launch ReplicaSet
	// Release is set by PlanScale only: idle alive nodes of the primary's
	// undivided bucket above MaxFree, in ascending id order; the autoscaler
	// may terminate them.
	Release []string
	// After is the state the plan leads to (for PlanRecover, the recovered
	// state). Apply writes its records; the caller keeps it as the next
	// state. It is not rendered by String.
	After State
}

// Removed reports whether p removes cluster id.
func (p Plan) Removed(id string) bool {
	return slices.ContainsFunc(p.Removes, func(r Removal) bool { return r.Cluster == id })
}

// Refused reports whether p is a refusal.
func (p Plan) Refused() bool { return p.Refusal != nil }

// Empty reports whether p is no refusal and changes and writes nothing: the
// "nothing to do" of a planner. A refused plan is never Empty.
func (p Plan) Empty() bool { return p.Refusal == nil && !p.Acts() }

// Acts reports whether p moves, creates, removes, purges or revises
// anything, or writes a record. A refused plan never acts.
func (p Plan) Acts() bool {
	return len(p.Moves) > 0 || len(p.Creates) > 0 || len(p.Removes) > 0 ||
		len(p.Purge) > 0 || len(p.Revisions) > 0 || len(p.Flush) > 0 || len(p.Publish) > 0
}

// Delta is the net change of one cluster's membership in a plan.
type Delta struct {
	Cluster        string
	Added, Removed []string
}

// Deltas returns, per cluster whose membership changes, the node ids that
// join and leave it, in cluster id order. An executor may publish these
// instead of whole records where workers accept deltas (about 100 bytes per
// changed node instead of per member). The primary is included.
func (p Plan) Deltas() []Delta {
	added := map[string]map[string]bool{}
	removed := map[string]map[string]bool{}
	mark := func(m map[string]map[string]bool, c, n string) {
		if m[c] == nil {
			m[c] = map[string]bool{}
		}
		m[c][n] = true
	}
	for _, m := range p.Moves {
		// Each place is a member of its holder and, for a job bucket, of the
		// job cluster named by the bucket.
		from := []string{m.From.Cluster}
		if m.From.Bucket != Undivided {
			from = append(from, m.From.Bucket)
		}
		to := []string{m.To.Cluster}
		if m.To.Bucket != Undivided {
			to = append(to, m.To.Bucket)
		}
		for _, c := range from {
			if !slices.Contains(to, c) {
				if added[c][m.Node] {
					delete(added[c], m.Node)
				} else {
					mark(removed, c, m.Node)
				}
			}
		}
		for _, c := range to {
			if !slices.Contains(from, c) {
				if removed[c][m.Node] {
					delete(removed[c], m.Node)
				} else {
					mark(added, c, m.Node)
				}
			}
		}
	}
	ids := map[string]bool{}
	for c := range added {
		ids[c] = true
	}
	for c := range removed {
		ids[c] = true
	}
	var out []Delta
	for _, c := range slices.Sorted(maps.Keys(ids)) {
		d := Delta{Cluster: c, Added: slices.Sorted(maps.Keys(added[c])), Removed: slices.Sorted(maps.Keys(removed[c]))}
		if len(d.Added)+len(d.Removed) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// String renders p one item per line, in plan order, for logs and golden
// transcripts. An empty plan renders as "(empty plan)".
func (p Plan) String() string {
	if p.Refusal != nil {
		return "refused " + p.Refusal.String() + "\n"
	}
	if p.Empty() && len(p.Unreplaced) == 0 && len(p.Anomalies) == 0 && !p.Truncated && p.Launch == nil && p.Release == nil {
		return "(empty plan)\n"
	}
	var b strings.Builder
	for _, c := range p.Creates {
		fmt.Fprintf(&b, "create %s kind=%s revision=%d", c.ID, c.Kind, c.Revision)
		if len(c.ZeroTemplates) > 0 {
			fmt.Fprintf(&b, " zero=%v", c.ZeroTemplates)
		}
		b.WriteByte('\n')
	}
	for _, m := range p.Moves {
		fmt.Fprintf(&b, "move %s (%s) %s -> %s\n", m.Node, m.Template, m.From, m.To)
	}
	for _, r := range p.Removes {
		fmt.Fprintf(&b, "remove %s\n", r.Cluster)
	}
	for _, n := range p.Purge {
		fmt.Fprintf(&b, "purge %s\n", n.Node)
	}
	for _, r := range p.Revisions {
		fmt.Fprintf(&b, "revision %s %d", r.Cluster, r.Revision)
		if len(r.ZeroTemplates) > 0 {
			fmt.Fprintf(&b, " zero=%v", r.ZeroTemplates)
		}
		b.WriteByte('\n')
	}
	for _, u := range p.Unreplaced {
		fmt.Fprintf(&b, "unreplaced %s %s %v\n", u.Cluster, u.Template, u.Nodes)
	}
	if p.Truncated {
		b.WriteString("truncated\n")
	}
	for _, a := range p.Anomalies {
		fmt.Fprintf(&b, "anomaly %s\n", a)
	}
	fmt.Fprintf(&b, "flush %v\npublish %v\n", p.Flush, p.Publish)
	if p.Launch != nil || p.Release != nil {
		fmt.Fprintf(&b, "launch %s\nrelease %s\n", p.Launch, fmtIDs(p.Release))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// flushOrder sorts ids into Plan.Flush order: job clusters first, then logical
// clusters, each group ascending, duplicates removed.
func flushOrder(ids []string) []string {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int {
		ja, jb := IsJobID(a), IsJobID(b)
		switch {
		case ja && !jb:
			return -1
		case jb && !ja:
			return 1
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}
