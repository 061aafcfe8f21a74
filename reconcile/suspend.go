package reconcile

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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
	d.plan.Verdict.AwaitsStatus = true
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
		Kind: ActionDeleteAllOf, Group: group, Reason: r, FailureReason: fr,
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
	// The executor's DeleteAllOf selects with the same selector.
	selector := labels.SelectorFromSet(sel)
	for i := range d.s.Pods {
		p := &d.s.Pods[i]
		if p.Namespace != c.Namespace || d.flags[i]&flagTerminating != 0 || !selector.Matches(labels.Set(p.Labels)) {
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

// notMember is the notice for a workersToDelete name that is not a pod of
// the group.
func notMember(group, pod string) Reason {
	r := Reason{Code: ReasonWorkersToDeleteNotMember, Facts: ReasonFacts{Group: group, Pods: []string{pod}}}
	r.Message = fmt.Sprintf("group %s: workersToDelete names %s, which is not a pod of this group; not deleting it", r.Facts.Group, r.Facts.Pods[0])
	return r
}

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
		r := Reason{Code: ReasonRecreateVersionSkip, Facts: ReasonFacts{Pods: []string{h.Name}, From: v, To: d.o.operatorVersion()}}
		r.Message = fmt.Sprintf("head %s was created by KubeRay %s, not %s: adopting the current spec hash instead of recreating", r.Facts.Pods[0], r.Facts.From, r.Facts.To)
		d.plan.Actions = append(d.plan.Actions, Action{
			Kind: ActionPatchPodAnnotations, Group: "",
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
		r := Reason{Code: ReasonRecreateSpecChanged, Facts: ReasonFacts{From: v, To: d.hash}}
		r.Message = fmt.Sprintf("spec hash changed from %s to %s: recreating every pod", r.Facts.From, r.Facts.To)
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
