package reconcile

import (
	"fmt"
	"math"
	"slices"
)

// minMax is the group's replica bounds: a nil min is 0, a nil max MaxInt32.
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
		r := Reason{Code: ReasonInvalidNumOfHosts, Facts: ReasonFacts{Group: g.GroupName, NumOfHosts: int(g.NumOfHosts)}}
		r.Message = fmt.Sprintf("group %s: numOfHosts %d is treated as 1 (KubeRay would delete every worker, #2084)", r.Facts.Group, r.Facts.NumOfHosts)
		d.plan.Notices = append(d.plan.Notices, r)
	}
	if pods, ok := d.pending[g.GroupName]; ok {
		gr.Blocked += max(1, len(pods))
		r := Reason{Code: ReasonExpectationsPending, Facts: ReasonFacts{Pods: slices.Clone(pods), Group: g.GroupName}}
		r.Message = fmt.Sprintf("group %s: expectations are not satisfied; the group is skipped this pass", r.Facts.Group)
		d.plan.Notices = append(d.plan.Notices, r)
		return nil
	}
	if g.Suspend != nil && *g.Suspend {
		r := Reason{Code: ReasonGroupSuspended, Facts: ReasonFacts{Group: g.GroupName}}
		r.Message = fmt.Sprintf("group %s is suspended: deleting its pods", r.Facts.Group)
		d.deleteAll(g.GroupName, r,
			map[string]string{LabelCluster: c.Name, LabelGroup: g.GroupName}, d.activeGroup[gi], FailedDeleteWorkerPod, &gr.Counters)
		return nil
	}
	if g.NumOfHosts > 1 && d.o.multiHostIndexing() {
		return d.multiHost(gi)
	}
	return d.singleHost(gi)
}
