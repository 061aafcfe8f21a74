package reconcile

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/expectations"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxActionsHint bounds the action list's initial capacity beyond the pods.
const maxActionsHint = 4096

// requeueAfterError is the anchor's outer-loop delay after a requeue error.
const requeueAfterError = 2 * time.Second

// requeueForStatus is the wake-up of a plan that waits on the caller's own
// status write (Outcome.AwaitsStatus): a loop driven by watch events sees that
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
	if err := plancore.Invalid(ErrInvalidInput, s.validate()); err != nil {
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
	d.plan.Outcome.Reason = Reason{Code: ReasonOK}
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
		p.Outcome.Reason = *d.firstStop
		d.addHint(requeueAfterError)
	}
	p.Outcome.RequeueAfter = d.hint
	if d.foreign > 0 {
		r := Reason{Code: ReasonForeignOwner, Count: d.foreign}
		r.Message = fmt.Sprintf("%d pods labelled for this cluster are controlled by another RayCluster UID and are ignored", r.Count)
		p.Notices = append(p.Notices, r)
	}
	for _, g := range sortedKeys(d.notInSpec) {
		r := Reason{Code: ReasonGroupNotInSpec, Group: g, Count: d.notInSpec[g]}
		r.Message = fmt.Sprintf("%d pods carry ray.io/group=%s, which is not in the spec; they are never deleted (#1739)", r.Count, r.Group)
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
	d.plan.Outcome.StoppedAt = at
	if requeue {
		if d.firstStop == nil {
			d.firstStop = &r
		}
	} else if d.firstStop == nil {
		d.plan.Outcome.Reason = r
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
		d.plan.Outcome.StoppedAt = "group " + gr.Group
	}
}

// bucket makes the single pass over the pods: it keeps this cluster's pods,
// finds the heads, and counting-sorts worker pods by group into d.order.
func (d *decider) bucket() {
	s, c := d.s, &d.s.Cluster
	groups := c.Spec.WorkerGroups
	d.groupIdx = make(map[string]int, len(groups))
	for i := range groups {
		d.groupIdx[groups[i].GroupName] = i
	}
	for i := range groups {
		for _, n := range groups[i].ScaleStrategy.WorkersToDelete {
			if d.wtdNames == nil {
				d.wtdNames = map[string]int32{}
			}
			d.wtdNames[n] = -1
		}
	}
	n := len(s.Pods)
	buf := make([]int32, 2*n+len(groups)+1)
	gid, order, start := buf[:n], buf[n:2*n], buf[2*n:]
	G := len(groups)
	counts := make([]int, 4*G)
	d.activeGroup, d.termGroup, d.mayDelGroup = counts[:G:G], counts[G:2*G:2*G], counts[2*G:3*G:3*G]
	d.flags = make([]podFlags, n)
	for i := range s.Pods {
		p := &s.Pods[i]
		gid[i] = -1
		if d.wtdNames != nil && p.Namespace == c.Namespace {
			if _, ok := d.wtdNames[p.Name]; ok {
				d.wtdNames[p.Name] = int32(i)
			}
		}
		if p.Namespace != c.Namespace || p.Labels[LabelCluster] != c.Name {
			continue
		}
		term := terminating(p)
		if term {
			d.flags[i] = flagTerminating
		} else {
			d.activeAll++
		}
		g, hasGroup := p.Labels[LabelGroup]
		gi, inSpec := d.groupIdx[g]
		if inSpec && !term {
			d.activeGroup[gi]++
		}
		if !d.c.MatchByLabelsOnly && d.foreignOwner(p) {
			d.foreign++
			continue
		}
		if p.Labels[LabelNodeType] == NodeTypeHead {
			d.heads = append(d.heads, int32(i))
		}
		if inSpec {
			if mayDelete(p) {
				d.flags[i] |= flagMayDelete
				d.mayDelGroup[gi]++
			}
			gid[i] = int32(gi)
			start[gi+1]++
			if term {
				d.termGroup[gi]++
			}
		} else if hasGroup && g != HeadGroupLabel {
			if d.notInSpec == nil {
				d.notInSpec = map[string]int{}
			}
			d.notInSpec[g]++
		}
	}
	for g := 1; g < len(start); g++ {
		start[g] += start[g-1]
	}
	fill := counts[3*G:]
	for g := range groups {
		fill[g] = int(start[g])
	}
	for i := range n {
		if g := gid[i]; g >= 0 {
			order[fill[g]] = int32(i)
			fill[g]++
		}
	}
	d.order, d.start = order, start
	// gid is dead now; its n slots serve every group as scratch.
	d.scratch = gid[:0]
	slices.SortFunc(d.heads, func(a, b int32) int { return cmp.Compare(s.Pods[a].Name, s.Pods[b].Name) })
	if len(s.Forming) > 0 {
		d.forming = map[string][]*FormingGroup{}
		for i := range s.Forming {
			f := &s.Forming[i]
			d.forming[f.Group] = append(d.forming[f.Group], f)
		}
	}
}

// foreignOwner reports a pod whose controller is a RayCluster with another UID
// (an earlier incarnation of this cluster's name).
func (d *decider) foreignOwner(p *corev1.Pod) bool {
	if d.s.Cluster.UID == "" {
		return false
	}
	for i := range p.OwnerReferences {
		r := &p.OwnerReferences[i]
		if r.Controller != nil && *r.Controller && r.Kind == "RayCluster" {
			return r.UID != d.s.Cluster.UID
		}
	}
	return false
}

func (d *decider) groupPods(gi int) []int32 { return d.order[d.start[gi]:d.start[gi+1]] }

func (d *decider) pod(i int32) *corev1.Pod { return &d.s.Pods[i] }

// counted reports whether pod i of this cluster takes part in counts, health
// checks and victim choice: terminating pods do not (KubeRay #4078) unless
// Compat.CountTerminatingPods. It reads the flag the bucket pass recorded, not
// the pod.
func (d *decider) counted(i int32) bool {
	term := d.flags[i]&flagTerminating != 0
	if term && d.lingering != nil && d.lingering[d.s.Pods[i].Name] {
		// An expired delete whose pod is still terminating (expectations'
		// Lingering): counting it would revive #3286. A lingering pod that is
		// not terminating was never deleted, and counts.
		return false
	}
	return d.c.CountTerminatingPods || !term
}

// podFlags are per-pod facts recorded by the bucket pass.
type podFlags uint8

const (
	// flagTerminating marks a pod with a deletion timestamp.
	flagTerminating podFlags = 1 << iota
	// flagMayDelete marks a worker pod that shouldDeletePod may delete
	// (mayDelete); for the others it is known to keep the pod.
	flagMayDelete
)

// workerMayDelete reports whether the worker pod i could be deleted as
// unhealthy; shouldDeletePod gives the verdict and its message.
func (d *decider) workerMayDelete(i int32) bool { return d.flags[i]&flagMayDelete != 0 }

// checkExpectations runs the pure expectations check for every group of this
// cluster that holds items, against this snapshot's pods.
func (d *decider) checkExpectations() error {
	st := d.s.Expectations
	if st == nil {
		return nil
	}
	c := &d.s.Cluster
	if d.c.CountTerminatingPods && st.Options().DeleteSatisfiedBy == expectations.SatisfiedByTerminating {
		// KubeRay #3286: counting terminating pods while a terminating pod
		// satisfies its delete deletes more pods than asked.
		return plancore.Invalid(ErrInvalidOptions, field.ErrorList{field.Invalid(field.NewPath("compat", "countTerminatingPods"), true,
			"with expectations that a terminating pod satisfies, a scale-down deletes more pods than asked (KubeRay #3286)")})
	}
	owner := expectations.Owner{Namespace: c.Namespace, Name: c.Name, UID: c.UID}
	groups := st.Groups(owner)
	if len(groups) == 0 {
		return nil
	}
	// Only the pods the cluster's records name are indexed: a full view of
	// 10,000 pods costs several plans' worth of time (see
	// BenchmarkPlan10kPodsPendingDelete).
	view, err := st.ViewFor(owner, d.s.Pods)
	if err != nil {
		return plancore.Invalid(ErrInvalidInput, field.ErrorList{field.Invalid(field.NewPath("expectations"), owner.String(), err.Error())})
	}
	for _, g := range groups {
		res, err := st.Check(d.s.Now, owner, g, view)
		if err != nil {
			return plancore.Invalid(ErrInvalidInput, field.ErrorList{field.Invalid(field.NewPath("expectations"), g, err.Error())})
		}
		lingering := map[string]bool{}
		for _, e := range res.Lingering {
			lingering[e.Pod] = true
			if d.lingering == nil {
				d.lingering = map[string]bool{}
			}
			d.lingering[e.Pod] = true
		}
		for _, list := range [][]expectations.Entry{res.Observed, res.Expired} {
			for _, e := range list {
				if !lingering[e.Pod] {
					d.plan.ExpectationOps.Drop = append(d.plan.ExpectationOps.Drop, expectations.Ref{Owner: owner, Group: g, Pod: e.Pod, Token: e.Token})
				}
			}
		}
		if !res.Satisfied {
			if d.pending == nil {
				d.pending = map[string][]string{}
			}
			d.pending[g] = res.PendingPods()
			d.addHint(res.RequeueAfter)
		}
	}
	return nil
}

// ---- suspend ----

func (d *decider) suspend() bool {
	c := &d.s.Cluster
	status := ""
	for _, cond := range c.Conditions {
		if (cond.Type == ConditionSuspending || cond.Type == ConditionSuspended) && cond.Status == metav1.ConditionTrue {
			status = cond.Type
			break
		}
	}
	specSuspend := c.Spec.Suspend != nil && *c.Spec.Suspend
	gate := d.o.statusConditions()
	if status == ConditionSuspending || (!gate && specSuspend) {
		switch {
		case d.activeAll > 0:
			if !d.deleteAll("", Reason{Code: ReasonSuspendDeleteAll, Message: "suspending: deleting every pod of the cluster"},
				map[string]string{LabelCluster: c.Name}, d.activeAll, FailedDeleteAllPods, nil) {
				d.stopChain("suspend", Reason{Code: ReasonExpectationsPending,
					Message: "cluster is suspending: waiting for the pods already being deleted to be observed"}, false)
				d.awaitStatus()
				return true
			}
			d.stopChain("suspend", Reason{Code: ReasonSuspendDeleteAll, Message: "cluster is suspending"}, false)
			if status == ConditionSuspending {
				// Status says RayClusterSuspended once the pods are gone.
				d.awaitStatus()
			}
		default:
			// Status turns Suspending into Suspended once no pod is left; a
			// terminating pod's end is an event too.
			d.stopChain("suspend", Reason{Code: ReasonSuspendDeleteAll, Message: "cluster is suspending"}, false)
			d.awaitStatus()
		}
		return true
	}
	if gate {
		if status == ConditionSuspended {
			d.stopChain("suspend", Reason{Code: ReasonSuspended, Message: "cluster is suspended"}, false)
			if c.Spec.Suspend != nil && !specSuspend {
				// Resuming: Status clears RayClusterSuspended.
				d.awaitStatus()
			}
			return true
		}
		if specSuspend {
			d.stopChain("suspend", Reason{Code: ReasonSuspendRequested, Message: "spec.suspend is true; waiting for the RayClusterSuspending condition"}, false)
			d.awaitStatus()
			return true
		}
	}
	return false
}

// awaitStatus marks a plan whose next step needs the condition this pass's
// Status computes, and wakes the caller after requeueForStatus.
func (d *decider) awaitStatus() {
	d.plan.Outcome.AwaitsStatus = true
	d.addHint(requeueForStatus)
}

// deleteAll plans a DeleteAllOf when at least one matching pod is active
// and the cluster has no pending expectation: a DeleteAllOf the informer has
// not shown yet, or a create it has not shown, whose pod an earlier
// DeleteAllOf may already have removed (it acts on the API server, not the
// informer). It reports whether it did; when it did not, the expectations'
// deadline is the wake-up.
func (d *decider) deleteAll(group string, r Reason, sel map[string]string, active int, fr FailureReason, ctr *Counters) bool {
	if active == 0 || len(d.pending) > 0 {
		return false
	}
	d.plan.Actions = append(d.plan.Actions, Action{
		Kind: KindDeleteAllOf, Group: group, Reason: r, FailureReason: fr,
		Expect:    d.deleteAllExpects(sel),
		DeleteAll: &DeleteAllOf{Namespace: d.s.Cluster.Namespace, Selector: sel, Active: active},
	})
	if ctr != nil {
		ctr.DeleteAll += active
	} else {
		d.plan.Totals.DeleteAll += active
	}
	return true
}

// deleteAllExpects lists a delete expectation for every active pod a
// DeleteAllOf with selector sel removes, each under its own group and sorted
// by group and pod, so that the passes after it wait for the informer to
// show them gone instead of sending the DeleteAllOf again.
func (d *decider) deleteAllExpects(sel map[string]string) []Expect {
	var expects []Expect
	c := &d.s.Cluster
	for i := range d.s.Pods {
		p := &d.s.Pods[i]
		if p.Namespace != c.Namespace || d.flags[i]&flagTerminating != 0 || !matches(p.Labels, sel) {
			continue
		}
		g := p.Labels[LabelGroup]
		if p.Labels[LabelNodeType] == NodeTypeHead {
			g = HeadGroupKey
		}
		expects = append(expects, Expect{Group: g, Kind: ExpectDelete, Pod: p.Name, Seen: true})
	}
	slices.SortFunc(expects, func(a, b Expect) int { return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Pod, b.Pod)) })
	return expects
}

// matches reports whether labels carry every key and value of sel.
func matches(labels, sel map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// notMember is the notice for a workersToDelete name that is not a pod of
// the group.
func notMember(group, pod string) Reason {
	r := Reason{Code: ReasonWorkersToDeleteNotMember, Group: group, Pods: []string{pod}}
	r.Message = fmt.Sprintf("group %s: workersToDelete names %s, which is not a pod of this group; not deleting it", r.Group, r.Pods[0])
	return r
}

// ---- Recreate ----

func (d *decider) recreate() bool {
	c := &d.s.Cluster
	us := c.Spec.UpgradeStrategy
	if us == nil || us.Type == nil || *us.Type != UpgradeRecreate || len(d.heads) == 0 {
		return false
	}
	// KubeRay takes the first head listed (an arbitrary order); plancore the
	// first by name. Terminating heads are included, as in KubeRay.
	h := d.pod(d.heads[0])
	if v := h.Annotations[AnnotationKubeRayVersion]; v != "" && v != d.o.operatorVersion() {
		// KubeRay hides this as an Update inside a predicate.
		r := Reason{Code: ReasonRecreateVersionSkip, Pods: []string{h.Name}, From: v, To: d.o.operatorVersion()}
		r.Message = fmt.Sprintf("head %s was created by KubeRay %s, not %s: adopting the current spec hash instead of recreating", r.Pods[0], r.From, r.To)
		d.plan.Actions = append(d.plan.Actions, Action{
			Kind: KindPatchPodAnnotations, Group: "",
			Reason: r,
			Patch: &PatchPodAnnotations{Namespace: h.Namespace, Name: h.Name, UID: h.UID, ResourceVersion: h.ResourceVersion,
				Set: map[string]string{AnnotationRecreateHash: d.hash, AnnotationKubeRayVersion: d.o.operatorVersion()}},
		})
		return false
	}
	if v := h.Annotations[AnnotationRecreateHash]; v != "" && v != d.hash {
		// The records of the old spec's pods are cleared with the call; once
		// the call is made, its own delete records stand until the informer
		// shows the pods gone, and keep it from being sent again.
		r := Reason{Code: ReasonRecreateSpecChanged, From: v, To: d.hash}
		r.Message = fmt.Sprintf("spec hash changed from %s to %s: recreating every pod", r.From, r.To)
		if d.deleteAll("", r,
			map[string]string{LabelCluster: c.Name}, d.activeAll, FailedDeleteAllPods, nil) {
			d.plan.ExpectationOps.ClearCluster = true
		}
		// The pods of the new spec are created in a later pass, once these
		// are gone: wake the caller even without a watch event.
		d.addHint(requeueAfterError)
		d.stopChain("recreate", Reason{Code: ReasonRecreateSpecChanged, Message: "recreating pods for the new spec"}, false)
		return true
	}
	return false
}

// ---- head ----

func (d *decider) head() error {
	c := &d.s.Cluster
	hc := &d.plan.Head
	var active []int32
	for _, i := range d.heads {
		hc.Observed++
		if d.flags[i]&flagTerminating != 0 {
			hc.Terminating++
		}
		if d.counted(i) {
			active = append(active, i)
		}
	}
	if pods, ok := d.pending[HeadGroupKey]; ok {
		hc.Blocked += max(1, len(pods))
		d.plan.Notices = append(d.plan.Notices, Reason{Code: ReasonExpectationsPending, Pods: slices.Clone(pods),
			Message: "head expectations are not satisfied; the head is reconciled later, workers now"})
		return nil
	}
	switch {
	case len(active) == 1:
		p := d.pod(active[0])
		v := shouldDeletePod(p, NodeTypeHead)
		if !v.del {
			return nil
		}
		hc.Unhealthy++
		d.deletePod(HeadGroupLabel, HeadGroupKey, p, Reason{Code: v.code, Message: v.message, Pods: []string{p.Name}},
			FailedDeleteHeadPod, !d.c.StrictNotFound, hc)
		d.stopChain("head", Reason{Code: v.code, Message: v.message}, true)
	case len(active) == 0:
		if hc.Terminating > 0 {
			// KubeRay counts a terminating head as the head (KubeRay #4078); plancore does
			// not count it, but never creates a second head beside it.
			d.plan.Notices = append(d.plan.Notices, Reason{Code: ReasonHeadPredecessorTerminating,
				Message: "the previous head pod is still terminating; the new head is created once it is gone"})
			return nil
		}
		if meta.IsStatusConditionTrue(c.Conditions, ConditionProvisioned) && c.Annotations[AnnotationDisableProvisionedHeadRestart] == "true" {
			d.stopChain("head", Reason{Code: ReasonHeadRestartDisabled,
				Message: "the head pod is gone and " + AnnotationDisableProvisionedHeadRestart + " is true on a provisioned cluster: not restarting it (workers are skipped too)"}, false)
			return nil
		}
		if d.s.TLS.Enabled && !d.s.TLS.SecretsReady {
			d.stopChain("head", d.mtlsReason(), true)
			return nil
		}
		pod, err := d.buildPod(podSpec{head: true, replicaIndex: -1, hostIndex: -1})
		if err != nil {
			return err
		}
		if d.o.DeterministicHeadName {
			pod.Name = podNamePrefix(c.Name, NodeTypeHead, false)
		} else {
			d.name(pod, podNamePrefix(c.Name, NodeTypeHead, true), HeadGroupKey, 0, 0)
		}
		hc.Place++
		d.plan.Actions = append(d.plan.Actions, Action{
			Kind: KindCreatePod, Group: HeadGroupLabel, FailureReason: FailedCreateHeadPod,
			Reason: Reason{Code: ReasonHeadCreate, Message: "no head pod: creating one"},
			Expect: []Expect{{Group: HeadGroupKey, Kind: ExpectCreate, Pod: pod.Name}},
			Create: &CreatePod{Pod: pod, ReplicaIndex: -1, HostIndex: -1},
		})
	default:
		names := make([]string, len(active))
		for k, i := range active {
			names[k] = d.pod(i).Name
		}
		r := Reason{Code: ReasonMultipleHeads, Pods: names, Count: len(names)}
		r.Message = fmt.Sprintf("%d head pods found %v. Please delete extra head pods", r.Count, r.Pods)
		d.stopChain("head", r, true)
	}
	return nil
}

func (d *decider) mtlsReason() Reason {
	r := Reason{Code: ReasonMTLSNotReady, LastError: d.s.TLS.NotReadyError}
	r.Message = "mTLS secrets not ready: " + r.LastError
	return r
}

// deletePod appends a DeletePod with a UID precondition for a pod of the snapshot.
func (d *decider) deletePod(actionGroup, expGroup string, p *corev1.Pod, r Reason, fr FailureReason, notFoundOK bool, ctr *Counters) {
	d.plan.Actions = append(d.plan.Actions, Action{
		Kind: KindDeletePod, Group: actionGroup, Reason: r, FailureReason: fr,
		Expect: d.expects.one(Expect{Group: expGroup, Kind: ExpectDelete, Pod: p.Name, Seen: true}),
		Delete: d.dels.ptr(DeletePod{Namespace: p.Namespace, Name: p.Name, UID: p.UID, NotFoundIsSuccess: notFoundOK}),
	})
	if ctr.Stop == nil {
		ctr.Stop = map[ReasonCode]int{}
	}
	ctr.Stop[r.Code]++
}

// deletePodAt is deletePod for the snapshot's pod i, remembering it so that no
// pod is deleted twice in one plan.
func (d *decider) deletePodAt(i int32, actionGroup, expGroup string, r Reason, fr FailureReason, notFoundOK bool, ctr *Counters) {
	if d.planned == nil {
		d.planned = map[int32]bool{}
	}
	d.planned[i] = true
	d.deletePod(actionGroup, expGroup, d.pod(i), r, fr, notFoundOK, ctr)
}

// reserve makes the arenas hand out the parts of the next n deletes from one
// block each.
func (d *decider) reserve(n int) {
	d.dels.reserve(n)
	d.expects.reserve(n)
	d.names.reserve(n)
}

// name sets the pod's GenerateName, or a derived Name in NameModeDerived: the
// prefix plus five characters from (Seed, cluster UID, group, replica, host,
// attempt), the attempt growing until the name collides with no pod.
func (d *decider) name(pod *corev1.Pod, prefix, group string, replica, host int) {
	if !d.o.derivedNames() {
		pod.GenerateName = prefix
		return
	}
	if d.taken == nil {
		d.taken = make(map[string]bool)
		for i := range d.s.Pods {
			if d.s.Pods[i].Namespace == d.s.Cluster.Namespace {
				d.taken[d.s.Pods[i].Name] = true
			}
		}
	}
	for attempt := 0; ; attempt++ {
		n := prefix + suffix5(d.s.Seed, string(d.s.Cluster.UID), group, strconv.Itoa(replica), strconv.Itoa(host), strconv.Itoa(attempt))
		if !d.taken[n] {
			d.taken[n] = true
			pod.Name = n
			return
		}
	}
}

// replicaName derives <group>-<5 chars> for a new replica group, unique among
// the replica names of the group's pods (terminating ones included).
func (d *decider) replicaName(gi int, index int) string {
	g := d.s.Cluster.Spec.WorkerGroups[gi].GroupName
	if d.replicas == nil {
		d.replicas = map[string]bool{}
	}
	for _, i := range d.groupPods(gi) {
		if r := d.pod(i).Labels[LabelReplicaName]; r != "" {
			d.replicas[r] = true
		}
	}
	for attempt := 0; ; attempt++ {
		n := g + "-" + suffix5(d.s.Seed, string(d.s.Cluster.UID), g, "replica", strconv.Itoa(index), strconv.Itoa(attempt))
		if !d.replicas[n] {
			d.replicas[n] = true
			return n
		}
	}
}

// ---- worker groups ----

func minMax(g *WorkerGroup) (int32, int32) {
	lo, hi := int32(0), int32(math.MaxInt32)
	if g.MinReplicas != nil {
		lo = *g.MinReplicas
	}
	if g.MaxReplicas != nil {
		hi = *g.MaxReplicas
	}
	return lo, hi
}

// clampReplicas is GetWorkerGroupDesiredReplicas before the multiplication:
// nil or below min gives min, above max gives max; min wins when min > max.
func clampReplicas(g *WorkerGroup) int32 {
	if g.Suspend != nil && *g.Suspend {
		return 0
	}
	lo, hi := minMax(g)
	switch {
	case g.Replicas == nil || *g.Replicas < lo:
		return lo
	case *g.Replicas > hi:
		return hi
	}
	return *g.Replicas
}

// hosts is the effective numOfHosts: KubeRay's guard "≤ 0 becomes 1" is dead
// code since KubeRay #3353, so 0 means 0 pods there; plancore treats 0 as 1
// (validation refuses negative values).
func (d *decider) hosts(g *WorkerGroup) int32 {
	if g.NumOfHosts <= 0 && !d.c.ZeroHostsMeansZeroPods {
		return 1
	}
	return g.NumOfHosts
}

// desiredPods is replicas × hosts, computed in int64 and saturated at
// MaxInt32 (KubeRay multiplies in int32 and can overflow).
func (d *decider) desiredPods(g *WorkerGroup) int32 {
	r, h := int64(clampReplicas(g)), int64(d.hosts(g))
	if r < 0 || h < 0 {
		return 0
	}
	return int32(min(r*h, math.MaxInt32))
}

func (d *decider) desiredReplicas(g *WorkerGroup) int32 {
	h := d.hosts(g)
	if h <= 0 {
		return 0
	}
	if h > 1 && d.o.multiHostIndexing() {
		return d.desiredPods(g) / h
	}
	return d.desiredPods(g)
}

func satAdd(a, b int32) int32 { return int32(min(int64(a)+int64(b), math.MaxInt32)) }

func (d *decider) group(gi int) error {
	c := &d.s.Cluster
	g := &c.Spec.WorkerGroups[gi]
	gr := &d.plan.Groups[gi]
	gr.Observed, gr.Terminating = len(d.groupPods(gi)), d.termGroup[gi]
	if g.NumOfHosts <= 0 && !d.c.ZeroHostsMeansZeroPods {
		r := Reason{Code: ReasonInvalidNumOfHosts, Group: g.GroupName, NumOfHosts: int(g.NumOfHosts)}
		r.Message = fmt.Sprintf("group %s: numOfHosts %d is treated as 1 (KubeRay would delete every worker, #2084)", r.Group, r.NumOfHosts)
		d.plan.Notices = append(d.plan.Notices, r)
	}
	if pods, ok := d.pending[g.GroupName]; ok {
		gr.Blocked += max(1, len(pods))
		r := Reason{Code: ReasonExpectationsPending, Pods: slices.Clone(pods), Group: g.GroupName}
		r.Message = fmt.Sprintf("group %s: expectations are not satisfied; the group is skipped this pass", r.Group)
		d.plan.Notices = append(d.plan.Notices, r)
		return nil
	}
	if g.Suspend != nil && *g.Suspend {
		r := Reason{Code: ReasonGroupSuspended, Group: g.GroupName}
		r.Message = fmt.Sprintf("group %s is suspended: deleting its pods", r.Group)
		d.deleteAll(g.GroupName, r,
			map[string]string{LabelCluster: c.Name, LabelGroup: g.GroupName}, d.activeGroup[gi], FailedDeleteWorkerPod, &gr.Counters)
		return nil
	}
	if g.NumOfHosts > 1 && d.o.multiHostIndexing() {
		return d.multiHost(gi)
	}
	return d.singleHost(gi)
}

func (d *decider) singleHost(gi int) error {
	c := &d.s.Cluster
	g := &c.Spec.WorkerGroups[gi]
	gr := &d.plan.Groups[gi]
	pods := d.groupPods(gi)

	// Step 6: unhealthy pods. Any deletion stops the group (the chain in
	// KubeRay). The same pass collects the counted pods, which are the
	// running pods of step 8 when nothing is unhealthy.
	running := d.scratch[:0]
	nUnhealthy := 0
	for _, i := range pods {
		if !d.counted(i) {
			continue
		}
		running = append(running, i)
		if !d.workerMayDelete(i) {
			continue
		}
		p := d.pod(i)
		if v := shouldDeletePod(p, NodeTypeWorker); v.del {
			nUnhealthy++
			d.deletePod(g.GroupName, g.GroupName, p, Reason{Code: v.code, Message: v.message, Pods: d.names.one(p.Name)},
				FailedDeleteWorkerPod, !d.c.StrictNotFound, &gr.Counters)
		}
	}
	gr.Unhealthy = nUnhealthy
	if nUnhealthy > 0 {
		sortDeletes(d.plan.Actions[len(d.plan.Actions)-nUnhealthy:])
		r := Reason{Code: ReasonUnhealthyWorkers, Group: g.GroupName, Count: nUnhealthy}
		r.Message = "delete " + strconv.Itoa(r.Count) + " unhealthy worker Pods"
		d.stopGroup(gi, r)
		return nil
	}

	// Step 7: workersToDelete.
	deleted := d.workersToDelete(gi)

	// Step 8-10: running = counted pods minus those deleted in step 7.
	if len(deleted) > 0 {
		running = slices.DeleteFunc(running, func(i int32) bool { return deleted[d.pod(i).Name] })
	}
	desired := int(gr.Desired)
	diff := desired - len(running)
	switch {
	case diff > 0:
		if d.s.TLS.Enabled && !d.s.TLS.SecretsReady {
			d.stopGroup(gi, d.mtlsReason())
			return nil
		}
		var free *indexSet
		if d.o.multiHostIndexing() {
			free = newIndexSet(len(running))
			for _, i := range running {
				if n, ok := replicaIndexOf(d.pod(i)); ok {
					free.add(n)
				}
			}
		}
		diff = d.burstLimit(g.GroupName, diff, 1)
		r := Reason{Code: ReasonScaleUp, Group: g.GroupName, Count: len(running), Of: desired}
		r.Message = "scaling up: " + strconv.Itoa(r.Count) + " of " + strconv.Itoa(r.Of) + " worker pods running"
		prefix := podNamePrefix(c.Name+"-"+g.GroupName, NodeTypeWorker, true)
		for k := range diff {
			idx := -1
			if free != nil {
				idx = free.take()
				gr.FreeIndices = append(gr.FreeIndices, idx)
			}
			pod, err := d.buildPod(podSpec{group: g, replicaIndex: idx, hostIndex: -1})
			if err != nil {
				return err
			}
			slot := idx
			if slot < 0 {
				slot = k
			}
			d.name(pod, prefix, g.GroupName, slot, 0)
			gr.Place++
			d.plan.Actions = append(d.plan.Actions, Action{
				Kind: KindCreatePod, Group: g.GroupName, FailureReason: FailedCreateWorkerPod, Reason: r,
				Expect: d.expects.one(Expect{Group: g.GroupName, Kind: ExpectCreate, Pod: pod.Name}),
				Create: &CreatePod{Pod: pod, ReplicaIndex: idx, HostIndex: -1},
			})
		}
	case diff < 0:
		if !d.scaleDownAllowed() {
			gr.Ignore += -diff
			r := Reason{Code: ReasonScaleDownLeftToAutoscaler, Group: g.GroupName, Count: -diff}
			r.Message = fmt.Sprintf("group %s: %d surplus pods are left to the autoscaler (#1253)", r.Group, r.Count)
			d.plan.Notices = append(d.plan.Notices, r)
			return nil
		}
		victims := d.victims(running, -diff)
		n0 := len(d.plan.Actions)
		d.plan.Actions = slices.Grow(d.plan.Actions, len(victims))
		d.reserve(len(victims))
		msg := "scaling down: " + strconv.Itoa(len(running)) + " worker pods running, " + strconv.Itoa(desired) + " desired"
		for _, i := range victims {
			p := d.pod(i)
			d.deletePod(g.GroupName, g.GroupName, p, Reason{Code: ReasonScaleDown, Message: msg, Pods: d.names.one(p.Name)},
				FailedDeleteWorkerPod, true, &gr.Counters)
		}
		sortDeletes(d.plan.Actions[n0:])
	}
	return nil
}

// burstLimit caps the units (pods, or replica groups of hosts pods) a group
// creates in this plan at Options.BurstReplicas pods, noting the cap and
// asking for a prompt requeue.
func (d *decider) burstLimit(group string, units, hosts int) int {
	limit := max(1, d.o.burst()/max(1, hosts))
	if units <= limit {
		return units
	}
	r := Reason{Code: ReasonBurstLimited, Group: group, Count: limit, Of: units, Limit: d.o.burst()}
	r.Message = fmt.Sprintf("group %s: creating %d of %d missing replicas in this pass (BurstReplicas %d)", r.Group, r.Count, r.Of, r.Limit)
	d.plan.Notices = append(d.plan.Notices, r)
	d.addHint(requeueAfterError)
	return limit
}

func (d *decider) scaleDownAllowed() bool {
	as := d.s.Cluster.Spec.EnableInTreeAutoscaling
	return as == nil || !*as || d.o.RandomPodDelete
}

// workersToDelete plans the deletes of the group's listed workers
// and returns the names deleted.
func (d *decider) workersToDelete(gi int) map[string]bool {
	c := &d.s.Cluster
	g := &c.Spec.WorkerGroups[gi]
	gr := &d.plan.Groups[gi]
	list := g.ScaleStrategy.WorkersToDelete
	if len(list) == 0 {
		return nil
	}
	deleted := make(map[string]bool, len(list))
	n0 := len(d.plan.Actions)
	r := Reason{Code: ReasonWorkersToDelete, Message: "autoscaler scale-down request"}
	for _, name := range list {
		if deleted[name] {
			continue
		}
		idx := d.wtdNames[name]
		if d.c.BlindWorkersToDelete {
			// KubeRay sends a bare delete by name in the namespace, whatever
			// the pod is (KubeRay #733, #3738). A name listed by two groups is
			// sent once per plan (KubeRay's second call would be a 404).
			deleted[name] = true
			if d.blindSent[name] {
				continue
			}
			if d.blindSent == nil {
				d.blindSent = map[string]bool{}
			}
			d.blindSent[name] = true
			rr := r
			rr.Pods = []string{name}
			d.plan.Actions = append(d.plan.Actions, Action{
				Kind: KindDeletePod, Group: g.GroupName, Reason: rr, FailureReason: FailedDeleteWorkerPod,
				Expect: []Expect{{Group: g.GroupName, Kind: ExpectDelete, Pod: name, Seen: idx >= 0}},
				Delete: &DeletePod{Namespace: c.Namespace, Name: name, NotFoundIsSuccess: true},
			})
			if gr.Stop == nil {
				gr.Stop = map[ReasonCode]int{}
			}
			gr.Stop[ReasonWorkersToDelete]++
			continue
		}
		if idx < 0 {
			gr.AbsentWorkersToDelete++
			continue
		}
		p := d.pod(idx)
		if p.Labels[LabelCluster] != c.Name || p.Labels[LabelGroup] != g.GroupName || (!d.c.MatchByLabelsOnly && d.foreignOwner(p)) {
			d.plan.Notices = append(d.plan.Notices, notMember(g.GroupName, name))
			continue
		}
		if !d.counted(idx) {
			gr.Ignore++
			deleted[name] = true
			continue
		}
		deleted[name] = true
		rr := r
		rr.Pods = []string{name}
		d.deletePod(g.GroupName, g.GroupName, p, rr, FailedDeleteWorkerPod, true, &gr.Counters)
	}
	sortDeletes(d.plan.Actions[n0:])
	return deleted
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
