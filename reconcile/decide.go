package reconcile

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/plancore/plancore"
)

// maxActionsHint bounds the action list's initial capacity beyond the pods.
const maxActionsHint = 4096

// requeueAfterError is the anchor's outer-loop delay after a requeue error.
const requeueAfterError = 2 * time.Second

// requeueForStatus is the wake-up of a plan that waits on the caller's own
// status write (Verdict.AwaitsStatus): a loop driven by watch events sees that
// write at once; one that is not comes back after this.
const requeueForStatus = time.Second

// Formation retry backoff: 2s·2^attempts, capped (KubeRay #4540).
const (
	formationBackoffBase = 2 * time.Second
	formationBackoffCap  = 5 * time.Minute
)

// Decide turns one snapshot into one plan (package doc). It never mutates s and
// returns an error only for input it cannot plan: invalid options
// (ErrInvalidOptions), a snapshot that Snapshot.Validate refuses
// (ErrInvalidInput, every problem at once), a spec that cannot be hashed
// (ErrHash) or a failing PodBuilder (ErrPodBuilder). Every cluster situation,
// including KubeRay's requeue errors, is expressed in the plan.
func Decide(s Snapshot, o Options) (Plan, error) {
	if err := o.Validate(); err != nil {
		return Plan{}, err
	}
	if err := plancore.Invalid(ErrInvalidInput, append(s.validate(), validateGated(&s.Cluster.Spec, o)...)); err != nil {
		return Plan{}, err
	}
	d := &decider{s: &s, o: o, c: o.Compat}
	if err := d.run(); err != nil {
		return Plan{}, err
	}
	return d.plan, nil
}

type decider struct {
	s    *Snapshot
	o    Options
	c    Compat
	hash string
	plan Plan

	stopped   bool // the chain stopped (anchor's early return)
	firstStop *Reason
	hint      time.Duration

	groupIdx map[string]int
	// order holds pod indices bucketed by group (counting sort); start[g] ..
	// start[g+1] is group g's slice. tmp is scratch of the same length.
	order, start []int32
	heads        []int32
	activeAll    int   // non-terminating pods matching ray.io/cluster (DeleteAllOf)
	activeGroup  []int // the same per group
	termGroup    []int // terminating pods in each group's bucket
	mayDelGroup  []int // pods flagged flagMayDelete in each group's bucket
	// flags holds what the bucket pass learnt about each pod of this cluster
	// (indexed like Snapshot.Pods), so that the group passes touch a pod's
	// memory only for the few that need more than a flag.
	flags     []podFlags
	notInSpec map[string]int
	foreign   int

	wtdNames  map[string]int32    // union of workersToDelete names -> pod index or -1
	pending   map[string][]string // groups whose expectations are pending -> pods awaited
	lingering map[string]bool     // pods of expired deletes still in view (not counted)
	forming   map[string][]*FormingGroup
	planned   map[int32]bool  // pods with a planned DeletePod
	blindSent map[string]bool // names of blind workersToDelete deletes
	taken     map[string]bool // pod names, built lazily for derived names
	replicas  map[string]bool // replica names, built lazily

	// scratch is a pod-index buffer as long as the largest group, reused by
	// every group (a group's running pods, or its unlabelled multi-host pods).
	scratch []int32
	// mhKeys is multiHost's reusable sort buffer.
	mhKeys []mhPod
	// Per-action parts come from arenas (arena.go).
	dels    arena[DeletePod]
	expects arena[Expect]
	names   arena[string]
}

func (d *decider) run() error {
	s, c := d.s, &d.s.Cluster
	d.plan.Cluster = c.Namespace + "/" + c.Name
	d.plan.ClusterUID = c.UID
	d.plan.Now = s.Now
	d.plan.Verdict.Reason = Reason{Code: ReasonOK}
	if s.ClusterHash != "" {
		d.hash = s.ClusterHash
	} else {
		h, err := SpecHash(c.Spec)
		if err != nil {
			return err
		}
		d.hash = h
	}
	d.plan.ClusterHash = d.hash
	if err := d.checkExpectations(); err != nil {
		return err
	}
	d.bucket()
	d.plan.Groups = make([]GroupReport, len(c.Spec.WorkerGroups))
	for i := range c.Spec.WorkerGroups {
		g := &c.Spec.WorkerGroups[i]
		gr := &d.plan.Groups[i]
		gr.Group, gr.Replicas, gr.Hosts = g.GroupName, g.Replicas, g.NumOfHosts
		gr.Min, gr.Max = minMax(g)
		gr.Desired = d.desiredPods(g)
		gr.DesiredReplicas = d.desiredReplicas(g)
	}
	d.sizeActions()
	if err := d.chain(); err != nil {
		return err
	}
	if len(d.plan.Actions) == 0 {
		d.plan.Actions = nil // a plan without actions has none, not an empty list
	}
	d.finish()
	return nil
}

// sizeActions gives the plan's action list a capacity that usually fits, so
// that the 168-byte actions are not copied while the list grows: per group
// whose expectations allow actions, the gap between desired and active pods
// (creations capped at BurstReplicas, deletions only where scale-down is
// allowed) plus the pods that may be deleted as unhealthy, and one head
// action. It is only a hint; append still grows the list when it is short.
func (d *decider) sizeActions() {
	est := 0
	for i := range d.plan.Groups {
		gr := &d.plan.Groups[i]
		if _, pending := d.pending[gr.Group]; pending {
			continue
		}
		gap := int(gr.Desired) - d.activeGroup[i]
		switch {
		case gap > 0:
			gap = min(gap, d.o.burst())
		case d.scaleDownAllowed():
			gap = -gap
		default:
			gap = 0
		}
		est += gap + d.mayDelGroup[i]
	}
	if est > 0 {
		// The hint is bounded: with no burst cap (Compat.UnlimitedBurst) a huge replica count must
		// not turn into one huge allocation before any pod is built.
		d.plan.Actions = make([]Action, 0, min(est, len(d.s.Pods)+maxActionsHint)+1)
	}
}

// chain runs the anchor's decision chain.
func (d *decider) chain() error {
	notVisited := func(from int) {
		for j := from; j < len(d.plan.Groups); j++ {
			d.plan.Groups[j].NotVisited = true
		}
	}
	if d.suspend() || d.recreate() {
		notVisited(0)
		return nil
	}
	if err := d.head(); err != nil || d.stopped {
		notVisited(0)
		return err
	}
	for i := range d.s.Cluster.Spec.WorkerGroups {
		if d.stopped {
			notVisited(i)
			break
		}
		if err := d.group(i); err != nil {
			return err
		}
	}
	return nil
}

func (d *decider) finish() {
	p := &d.plan
	for i := range p.Groups {
		p.Totals.add(&p.Groups[i].Counters)
	}
	p.Totals.add(&p.Head)
	if d.firstStop != nil {
		p.Verdict.Reason = *d.firstStop
		d.addHint(requeueAfterError)
	}
	p.Verdict.RequeueAfter = d.hint
	if d.foreign > 0 {
		r := Reason{Code: ReasonForeignOwner, Facts: ReasonFacts{Count: d.foreign}}
		r.Message = fmt.Sprintf("%d pods labelled for this cluster are controlled by another RayCluster UID and are ignored", r.Facts.Count)
		p.Notices = append(p.Notices, r)
	}
	for _, g := range sortedKeys(d.notInSpec) {
		r := Reason{Code: ReasonGroupNotInSpec, Facts: ReasonFacts{Group: g, Count: d.notInSpec[g]}}
		r.Message = fmt.Sprintf("%d pods carry ray.io/group=%s, which is not in the spec; they are never deleted (#1739)", r.Facts.Count, r.Facts.Group)
		p.Notices = append(p.Notices, r)
	}
	slices.SortFunc(p.ExpectationOps.DropForming, func(a, b FormingKey) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.ReplicaName, b.ReplicaName))
	})
}

func (d *decider) addHint(h time.Duration) {
	if h > 0 && (d.hint == 0 || h < d.hint) {
		d.hint = h
	}
}

// stopChain ends the whole plan (head-stage stops, and group stops in
// Compat.StopAtFirstGroupRequeue mode).
func (d *decider) stopChain(at string, r Reason, requeue bool) {
	d.stopped = true
	d.plan.Verdict.StoppedAt = at
	if requeue {
		if d.firstStop == nil {
			d.firstStop = &r
		}
	} else if d.firstStop == nil {
		d.plan.Verdict.Reason = r
	}
}

// stopGroup is a requeue inside group gi. Plancore stops only that group;
// KubeRay stops the chain.
func (d *decider) stopGroup(gi int, r Reason) {
	gr := &d.plan.Groups[gi]
	gr.Stopped = &r
	if d.firstStop == nil {
		d.firstStop = &r
	}
	if d.c.StopAtFirstGroupRequeue {
		d.stopped = true
		d.plan.Verdict.StoppedAt = "group " + gr.Group
	}
}

// indexSet is a set of non-negative replica indices that hands out the
// lowest free ones. Indices below the size hint
// live in a bool slice; others (large label values, or a negative index in a
// formation record) in a map.
type indexSet struct {
	used  []bool
	extra map[int]bool
	next  int
}

// newIndexSet sizes the set for n indices in use: the lowest free index is
// then at most n, so the first n+1 take calls need no map.
func newIndexSet(n int) *indexSet { return &indexSet{used: make([]bool, n+1)} }

func (s *indexSet) add(n int) {
	if uint(n) < uint(len(s.used)) {
		s.used[n] = true
		return
	}
	if s.extra == nil {
		s.extra = map[int]bool{}
	}
	s.extra[n] = true
}

func (s *indexSet) has(n int) bool {
	if uint(n) < uint(len(s.used)) {
		return s.used[n]
	}
	return s.extra[n]
}

// take returns the lowest index that is neither in the set nor taken before.
func (s *indexSet) take() int {
	for s.has(s.next) {
		s.next++
	}
	n := s.next
	s.next++
	return n
}

func sortDeletes(a []Action) {
	slices.SortStableFunc(a, func(x, y Action) int { return cmp.Compare(x.Delete.Name, y.Delete.Name) })
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
