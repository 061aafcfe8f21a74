package reconcile

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

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
		d.plan.Notices = append(d.plan.Notices, Reason{Code: ReasonExpectationsPending,
			Message: "head expectations are not satisfied; the head is reconciled later, workers now", Facts: ReasonFacts{Pods: slices.Clone(pods)}})
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
		d.deletePod(HeadGroupLabel, HeadGroupKey, p, Reason{Code: v.code, Message: v.message, Facts: ReasonFacts{Pods: []string{p.Name}}},
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
			Kind: ActionCreatePod, Group: HeadGroupLabel, FailureReason: FailedCreateHeadPod,
			Reason: Reason{Code: ReasonHeadCreate, Message: "no head pod: creating one"},
			Expect: []Expect{{Group: HeadGroupKey, Kind: ExpectCreate, Pod: pod.Name}},
			Create: &CreatePod{Pod: pod, ReplicaIndex: -1, HostIndex: -1},
		})
	default:
		names := make([]string, len(active))
		for k, i := range active {
			names[k] = d.pod(i).Name
		}
		r := Reason{Code: ReasonMultipleHeads, Facts: ReasonFacts{Pods: names, Count: len(names)}}
		r.Message = fmt.Sprintf("%d head pods found %v. Please delete extra head pods", r.Facts.Count, r.Facts.Pods)
		d.stopChain("head", r, true)
	}
	return nil
}

func (d *decider) mtlsReason() Reason {
	r := Reason{Code: ReasonMTLSNotReady, Facts: ReasonFacts{LastError: d.s.TLS.NotReadyError}}
	r.Message = "mTLS secrets not ready: " + r.Facts.LastError
	return r
}

// deletePod appends a DeletePod with a UID precondition for a pod of the snapshot.
func (d *decider) deletePod(actionGroup, expGroup string, p *corev1.Pod, r Reason, fr FailureReason, notFoundOK bool, ctr *Counters) {
	d.plan.Actions = append(d.plan.Actions, Action{
		Kind: ActionDeletePod, Group: actionGroup, Reason: r, FailureReason: fr,
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
