package reconcile

import (
	"cmp"
	"slices"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/expectations"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
