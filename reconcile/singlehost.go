package reconcile

import (
	"fmt"
	"slices"
	"strconv"
)

// singleHost reconciles a group of one pod per replica, in KubeRay's steps:
// unhealthy pods first (any deletion stops the group), then the
// autoscaler's workersToDelete, then the difference between the running
// pods and the desired count, up (scaleUp) or down (scaleDown).
func (d *decider) singleHost(gi int) error {
	running, stop := d.deleteUnhealthyWorkers(gi)
	if stop {
		return nil
	}
	// running = the counted pods minus those workersToDelete deletes.
	if deleted := d.workersToDelete(gi); len(deleted) > 0 {
		running = slices.DeleteFunc(running, func(i int32) bool { return deleted[d.pod(i).Name] })
	}
	switch diff := int(d.plan.Groups[gi].Desired) - len(running); {
	case diff > 0:
		return d.scaleUp(gi, running, diff)
	case diff < 0:
		d.scaleDown(gi, running, -diff)
	}
	return nil
}

// deleteUnhealthyWorkers deletes the group's unhealthy pods and reports
// whether that stops the group (it does when any is deleted, as KubeRay's
// chain does). The same pass collects the counted pods, which are the
// running pods when nothing is unhealthy.
func (d *decider) deleteUnhealthyWorkers(gi int) (running []int32, stop bool) {
	g := &d.s.Cluster.Spec.WorkerGroups[gi]
	gr := &d.plan.Groups[gi]
	running = d.scratch[:0]
	nUnhealthy := 0
	for _, i := range d.groupPods(gi) {
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
			d.deletePod(g.GroupName, g.GroupName, p, Reason{Code: v.code, Message: v.message, Facts: ReasonFacts{Pods: d.names.one(p.Name)}},
				FailedDeleteWorkerPod, !d.c.StrictNotFound, &gr.Counters)
		}
	}
	gr.Unhealthy = nUnhealthy
	if nUnhealthy == 0 {
		return running, false
	}
	sortDeletes(d.plan.Actions[len(d.plan.Actions)-nUnhealthy:])
	r := Reason{Code: ReasonUnhealthyWorkers, Facts: ReasonFacts{Group: g.GroupName, Count: nUnhealthy}}
	r.Message = "delete " + strconv.Itoa(r.Facts.Count) + " unhealthy worker Pods"
	d.stopGroup(gi, r)
	return running, true
}

// scaleUp creates missing pods of a single-host group (at most the burst),
// each on the lowest free replica index when indexing is on.
func (d *decider) scaleUp(gi int, running []int32, missing int) error {
	c := &d.s.Cluster
	g := &c.Spec.WorkerGroups[gi]
	gr := &d.plan.Groups[gi]
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
	n := d.burstLimit(g.GroupName, missing, 1)
	r := Reason{Code: ReasonScaleUp, Facts: ReasonFacts{Group: g.GroupName, Count: len(running), Of: int(gr.Desired)}}
	r.Message = "scaling up: " + strconv.Itoa(r.Facts.Count) + " of " + strconv.Itoa(r.Facts.Of) + " worker pods running"
	prefix := podNamePrefix(c.Name+"-"+g.GroupName, NodeTypeWorker, true)
	for k := range n {
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
			Kind: ActionCreatePod, Group: g.GroupName, FailureReason: FailedCreateWorkerPod, Reason: r,
			Expect: d.expects.one(Expect{Group: g.GroupName, Kind: ExpectCreate, Pod: pod.Name}),
			Create: &CreatePod{Pod: pod, ReplicaIndex: idx, HostIndex: -1},
		})
	}
	return nil
}

// scaleDown deletes surplus pods of a single-host group, the victims
// ranked by victims, unless only the autoscaler may scale down.
func (d *decider) scaleDown(gi int, running []int32, surplus int) {
	g := &d.s.Cluster.Spec.WorkerGroups[gi]
	gr := &d.plan.Groups[gi]
	if !d.scaleDownAllowed() {
		gr.Ignore += surplus
		r := Reason{Code: ReasonScaleDownLeftToAutoscaler, Facts: ReasonFacts{Group: g.GroupName, Count: surplus}}
		r.Message = fmt.Sprintf("group %s: %d surplus pods are left to the autoscaler (#1253)", r.Facts.Group, r.Facts.Count)
		d.plan.Notices = append(d.plan.Notices, r)
		return
	}
	victims := d.victims(running, surplus)
	n0 := len(d.plan.Actions)
	d.plan.Actions = slices.Grow(d.plan.Actions, len(victims))
	d.reserve(len(victims))
	r := Reason{Code: ReasonScaleDown, Facts: ReasonFacts{Group: g.GroupName, Count: len(running), Of: int(gr.Desired)}}
	r.Message = "scaling down: " + strconv.Itoa(r.Facts.Count) + " worker pods running, " + strconv.Itoa(r.Facts.Of) + " desired"
	for _, i := range victims {
		p := d.pod(i)
		rp := r
		rp.Facts.Pods = d.names.one(p.Name)
		d.deletePod(g.GroupName, g.GroupName, p, rp, FailedDeleteWorkerPod, true, &gr.Counters)
	}
	sortDeletes(d.plan.Actions[n0:])
}

// burstLimit caps the units (pods, or replica groups of hosts pods) a group
// creates in this plan at Options.BurstReplicas pods, noting the cap and
// asking for a prompt requeue.
func (d *decider) burstLimit(group string, units, hosts int) int {
	limit := max(1, d.o.burst()/max(1, hosts))
	if units <= limit {
		return units
	}
	r := Reason{Code: ReasonBurstLimited, Facts: ReasonFacts{Group: group, Count: limit, Of: units, Limit: d.o.burst()}}
	r.Message = fmt.Sprintf("group %s: creating %d of %d missing replicas in this pass (BurstReplicas %d)", r.Facts.Group, r.Facts.Count, r.Facts.Of, r.Facts.Limit)
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
			rr.Facts.Pods = []string{name}
			d.plan.Actions = append(d.plan.Actions, Action{
				Kind: ActionDeletePod, Group: g.GroupName, Reason: rr, FailureReason: FailedDeleteWorkerPod,
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
		rr.Facts.Pods = []string{name}
		d.deletePod(g.GroupName, g.GroupName, p, rr, FailedDeleteWorkerPod, true, &gr.Counters)
	}
	sortDeletes(d.plan.Actions[n0:])
	return deleted
}
