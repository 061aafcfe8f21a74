package reconcile

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// mhPod is a multi-host pod's sort key, read once from its labels. The
// pod's name, the last tie-break, is read from the pod only on a tie.
type mhPod struct {
	idx     int32
	host    int
	replica string
}

// replicaGroup is one multi-host replica: the pods sharing a replica name.
type replicaGroup struct {
	name    string
	members []int32 // by host index, then name
	forming *FormingGroup
	deleted bool

	// The rest is read from the members' pods on first use (facts): a group
	// that is neither ranked nor asked for its index never needs it.
	known    bool
	index    int  // the replica index label of the first member by name
	indexOK  bool // whether that label parses
	notReady bool // a member is not ready or not scheduled
	newest   time.Time
}

// facts fills in rg's index, readiness and newest creation time.
func (d *decider) facts(rg *replicaGroup) *replicaGroup {
	if rg.known {
		return rg
	}
	rg.known = true
	var first *corev1.Pod
	unknownAge := false
	for _, i := range rg.members {
		p := d.pod(i)
		if first == nil || p.Name < first.Name {
			first = p
		}
		if ready, _ := podReady(p); !ready || p.Spec.NodeName == "" {
			rg.notReady = true
		}
		if p.CreationTimestamp.After(rg.newest) {
			rg.newest = p.CreationTimestamp.Time
		}
		unknownAge = unknownAge || p.CreationTimestamp.IsZero()
	}
	if unknownAge {
		// A member of unknown age makes the group the newest, as a zero
		// creation time ranks a single pod (newerOrZeroFirst).
		rg.newest = time.Time{}
	}
	if first != nil {
		rg.index, rg.indexOK = replicaIndexOf(first)
	}
	return rg
}

// multiHost is reconcileMultiHostWorkerGroup (§2.7) with plancore's fixes
// (D4, D7, D8, D9) unless restored by Compat.
func (d *decider) multiHost(gi int) error {
	c := &d.s.Cluster
	g := &c.Spec.WorkerGroups[gi]
	gr := &d.plan.Groups[gi]
	H := int(g.NumOfHosts)

	// Step 1: bucket the counted pods by replica name.
	pods := d.groupPods(gi)
	if cap(d.mhKeys) < len(pods) {
		d.mhKeys = make([]mhPod, 0, len(pods))
	}
	keys := d.mhKeys[:0]
	legacy := d.scratch[:0]
	for _, i := range pods {
		if !d.counted(i) {
			continue
		}
		p := d.pod(i)
		r, ok := p.Labels[LabelReplicaName]
		if !ok {
			gr.Legacy++
			if !d.c.IgnoreUnlabelledMultiHostPods {
				legacy = append(legacy, i)
			}
			continue
		}
		h, _ := hostIndexOf(p)
		keys = append(keys, mhPod{idx: i, replica: r, host: h})
	}
	slices.SortFunc(keys, func(a, b mhPod) int {
		if c := cmp.Compare(a.replica, b.replica); c != 0 {
			return c
		}
		if a.host != b.host {
			return cmp.Compare(a.host, b.host)
		}
		return cmp.Compare(d.pod(a.idx).Name, d.pod(b.idx).Name)
	})
	slices.SortFunc(legacy, func(a, b int32) int { return cmp.Compare(d.pod(a).Name, d.pod(b).Name) })
	// The replica groups and their member lists are carved from two blocks:
	// rgs is in replica-name order, which byName's binary search relies on.
	nrg := 0
	for k := range keys {
		if k == 0 || keys[k].replica != keys[k-1].replica {
			nrg++
		}
	}
	rgBlock := make([]replicaGroup, nrg)
	rgs := make([]*replicaGroup, 0, nrg)
	members := make([]int32, len(keys))
	for k := range keys {
		members[k] = keys[k].idx
	}
	for k := 0; k < len(keys); {
		j := k
		for j < len(keys) && keys[j].replica == keys[k].replica {
			j++
		}
		rg := &rgBlock[len(rgs)]
		rg.name, rg.members = keys[k].replica, members[k:j:j]
		rgs = append(rgs, rg)
		k = j
	}
	byName := func(name string) *replicaGroup {
		k, ok := slices.BinarySearchFunc(rgs, name, func(rg *replicaGroup, n string) int { return cmp.Compare(rg.name, n) })
		if !ok {
			return nil
		}
		return rgs[k]
	}

	// Formation records (D9): attach live ones, drop settled ones.
	if !d.c.DeleteIncompleteGroupsImmediately {
		for _, f := range d.forming[g.GroupName] {
			rg := byName(f.ReplicaName)
			switch {
			case rg == nil || len(rg.members) >= H:
				d.dropForming(g.GroupName, f.ReplicaName)
			default:
				rg.forming = f
			}
		}
	} else {
		for _, f := range d.forming[g.GroupName] {
			d.dropForming(g.GroupName, f.ReplicaName)
		}
	}

	// Step 2: incomplete replica groups.
	var incomplete []*replicaGroup
	for _, rg := range rgs {
		if len(rg.members) >= H {
			continue
		}
		if rg.forming != nil {
			if d.s.Now.Sub(rg.forming.FirstFailure) >= d.o.formationTimeout() {
				d.deleteReplica(gi, rg, Reason{Code: ReasonReplicaGroupFormationTimeout,
					Message: fmt.Sprintf("replica group %s did not form within %s (last error: %s); deleting it", rg.name, d.o.formationTimeout(), rg.forming.LastError)})
				d.dropForming(g.GroupName, rg.name)
				rg.forming = nil
			}
			continue
		}
		incomplete = append(incomplete, rg)
	}
	if len(incomplete) > 0 {
		// KubeRay takes the first in map order, a random choice (D7).
		d.rankReplicas(incomplete)
		rg := incomplete[0]
		msg := fmt.Sprintf("cleaned up incomplete replica group %s, requeueing", rg.name)
		d.deleteReplica(gi, rg, Reason{Code: ReasonIncompleteReplicaGroup, Message: msg})
		d.stopGroup(gi, Reason{Code: ReasonIncompleteReplicaGroup, Message: msg})
		return nil
	}

	// Step 3: unhealthy replica groups go whole; no early return.
	for _, rg := range rgs {
		if rg.deleted {
			continue
		}
		var first deleteVerdict
		for _, i := range rg.members {
			if !d.workerMayDelete(i) {
				continue
			}
			if v := shouldDeletePod(d.pod(i), NodeTypeWorker); v.del {
				gr.Unhealthy++
				if !first.del {
					first = v
				}
			}
		}
		if first.del {
			d.deleteReplica(gi, rg, Reason{Code: ReasonUnhealthyReplicaGroup, Message: first.message})
			if rg.forming != nil {
				d.dropForming(g.GroupName, rg.name)
				rg.forming = nil
			}
		}
	}
	legacyDeleted := false
	if len(legacy) > 0 {
		var first deleteVerdict
		for _, i := range legacy {
			if !d.workerMayDelete(i) {
				continue
			}
			if v := shouldDeletePod(d.pod(i), NodeTypeWorker); v.del {
				gr.Unhealthy++
				if !first.del {
					first = v
				}
			}
		}
		// D8: KubeRay ignores unlabelled pods once the gate is on, so a Failed
		// legacy pod is kept forever and new groups pile on top of them.
		switch {
		case first.del:
			d.deletePods(gi, legacy, Reason{Code: ReasonLegacyMultiHostPods, Message: "unlabelled multi-host pods with an unhealthy member: " + first.message})
			legacyDeleted = true
		case len(legacy)%H != 0:
			d.deletePods(gi, legacy, Reason{Code: ReasonLegacyMultiHostPods,
				Message: fmt.Sprintf("%d unlabelled pods are not a multiple of numOfHosts %d: deleting them", len(legacy), H)})
			legacyDeleted = true
		}
	}

	// Step 4: workersToDelete expands to whole replica groups.
	if n := d.multiHostWorkersToDelete(gi, byName, legacy, &legacyDeleted); n > 0 {
		d.stopGroup(gi, Reason{Code: ReasonWorkersToDelete, Message: fmt.Sprintf("deleted %d worker Pods based on ScaleStrategy, requeueing", n)})
		return nil
	}

	// Step 5: valid groups and indices.
	valid := make([]*replicaGroup, 0, len(rgs))
	forming := false
	for _, rg := range rgs {
		if rg.deleted {
			continue
		}
		valid = append(valid, rg)
		if rg.forming != nil {
			forming = true
		}
	}
	legacyReplicas := 0
	if !legacyDeleted {
		legacyReplicas = len(legacy) / H
	}
	running := len(valid) + legacyReplicas
	desiredPods := int(gr.Desired)
	if desiredPods%H != 0 {
		d.stopGroup(gi, Reason{Code: ReasonNotMultipleOfHosts,
			Message: fmt.Sprintf("desired worker pods (%d) is not a multiple of NumOfHosts (%d) for group %s", desiredPods, H, g.GroupName)})
		return nil
	}
	desired := desiredPods / H
	toCreate := desired - running

	// Step 7: scale down by whole groups.
	if toCreate < 0 {
		if !d.scaleDownAllowed() {
			gr.Ignore += -toCreate * H
			d.plan.Notices = append(d.plan.Notices, Reason{Code: ReasonScaleDownLeftToAutoscaler,
				Message: fmt.Sprintf("group %s: %d surplus replica groups are left to the autoscaler (#1253)", g.GroupName, -toCreate)})
		} else {
			remove := -toCreate
			if legacyReplicas > 0 {
				// Legacy pods hold no index; they go first, all together (D8).
				d.deletePods(gi, legacy, Reason{Code: ReasonScaleDown, Message: "scaling down: unlabelled multi-host pods go first"})
				remove -= legacyReplicas
			}
			if remove > 0 {
				d.rankReplicas(valid)
				for _, rg := range valid[:remove] {
					d.deleteReplica(gi, rg, Reason{Code: ReasonScaleDown, Message: "scaling down"})
					if rg.forming != nil {
						d.dropForming(g.GroupName, rg.name)
					}
				}
			}
			toCreate = max(0, -remove)
		}
	}

	// Step 6: creations: retries of forming groups, then new groups.
	var retries []*replicaGroup
	for _, rg := range valid {
		if rg.forming == nil || rg.deleted {
			continue
		}
		next := rg.forming.LastAttempt.Add(formationBackoff(rg.forming.Attempts))
		if d.s.Now.Before(next) {
			d.addHint(next.Sub(d.s.Now))
			d.plan.Notices = append(d.plan.Notices, Reason{Code: ReasonReplicaGroupFormationBackoff,
				Message: fmt.Sprintf("group %s: replica group %s retries its missing hosts at %s", g.GroupName, rg.name, next.UTC().Format(time.RFC3339))})
			continue
		}
		retries = append(retries, rg)
	}
	if len(retries) == 0 && toCreate <= 0 {
		return nil
	}
	if d.s.TLS.Enabled && !d.s.TLS.SecretsReady {
		d.stopGroup(gi, d.mtlsReason())
		return nil
	}
	for _, rg := range retries {
		present := make([]bool, H)
		for _, i := range rg.members {
			if h, ok := hostIndexOf(d.pod(i)); ok && h < H {
				present[h] = true
			}
		}
		var hosts []int
		for h := range H {
			if !present[h] {
				hosts = append(hosts, h)
			}
		}
		f := rg.forming
		if err := d.createReplica(gi, rg.name, f.ReplicaIndex, hosts, f, Reason{Code: ReasonReplicaGroupFormationRetry,
			Message: fmt.Sprintf("completing replica group %s: hosts %v are missing (attempt %d; last error: %s)", rg.name, hosts, f.Attempts+1, f.LastError)}); err != nil {
			return err
		}
	}
	if toCreate > 0 {
		if forming && !d.c.DeleteIncompleteGroupsImmediately {
			// Two half-formed groups could deadlock on one quota (D9).
			d.plan.Notices = append(d.plan.Notices, Reason{Code: ReasonReplicaGroupForming,
				Message: fmt.Sprintf("group %s: %d new replica groups wait until the forming group is complete", g.GroupName, toCreate)})
			return nil
		}
		allHosts := make([]int, H)
		for h := range allHosts {
			allHosts[h] = h
		}
		// The indices in use: a forming group's recorded index, else the one
		// read from its first pod by name (§2.7 step 5). Creations only
		// follow a scale-down that deleted nothing, so valid is still whole.
		used := newIndexSet(len(valid))
		for _, rg := range valid {
			if rg.forming != nil {
				used.add(rg.forming.ReplicaIndex)
			} else if d.facts(rg).indexOK {
				used.add(rg.index)
			}
		}
		for range d.burstLimit(g.GroupName, toCreate, H) {
			next := used.take()
			gr.FreeIndices = append(gr.FreeIndices, next)
			name := d.replicaName(gi, next)
			if err := d.createReplica(gi, name, next, allHosts, nil, Reason{Code: ReasonReplicaGroupCreate,
				Message: fmt.Sprintf("scaling up: %d of %d replica groups running", running, desired)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// formationBackoff is 2s·2^attempts, capped at 5 minutes.
func formationBackoff(attempts int) time.Duration {
	if attempts >= 20 {
		return formationBackoffCap
	}
	return min(formationBackoffBase<<max(attempts, 0), formationBackoffCap)
}

func (d *decider) dropForming(group, replica string) {
	k := FormingKey{Group: group, ReplicaName: replica}
	if !slices.Contains(d.plan.ExpectationOps.DropForming, k) {
		d.plan.ExpectationOps.DropForming = append(d.plan.ExpectationOps.DropForming, k)
	}
}

// rankReplicas orders replica groups for removal. KubeRay walks a map (D7);
// plancore ranks: a group with a not-ready or unscheduled member (or still
// forming) first, then the highest replica index (keeps indices dense from 0),
// then the newest, then the name. Compat.NameOrderVictims uses name order.
func (d *decider) rankReplicas(rgs []*replicaGroup) {
	if d.c.NameOrderVictims {
		slices.SortFunc(rgs, func(a, b *replicaGroup) int { return cmp.Compare(a.name, b.name) })
		return
	}
	for _, rg := range rgs {
		d.facts(rg)
	}
	slices.SortFunc(rgs, func(a, b *replicaGroup) int {
		ab, bb := a.notReady || a.forming != nil, b.notReady || b.forming != nil
		if ab != bb {
			return boolFirst(ab, bb)
		}
		ai, bi := a.index, b.index
		if !a.indexOK {
			ai = -1
		}
		if !b.indexOK {
			bi = -1
		}
		if ai != bi {
			return cmp.Compare(bi, ai)
		}
		if !a.newest.Equal(b.newest) {
			return newerOrZeroFirst(a.newest, b.newest)
		}
		return cmp.Compare(a.name, b.name)
	})
}

// deleteReplica deletes every member of rg not yet deleted in this plan.
func (d *decider) deleteReplica(gi int, rg *replicaGroup, r Reason) {
	rg.deleted = true
	d.deletePods(gi, rg.members, r)
}

// deletePods plans the deletes of pods (NotFound is success, as KubeRay's
// deletePods skips it), sorted by name, skipping any already planned.
func (d *decider) deletePods(gi int, pods []int32, r Reason) {
	g := d.s.Cluster.Spec.WorkerGroups[gi].GroupName
	gr := &d.plan.Groups[gi]
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b int32) int { return cmp.Compare(d.pod(a).Name, d.pod(b).Name) })
	names := d.names.take(len(sorted))
	for k, i := range sorted {
		names[k] = d.pod(i).Name
	}
	for _, i := range sorted {
		if d.planned[i] {
			continue
		}
		rr := r
		rr.Pods = names
		d.deletePodAt(i, g, g, rr, FailedDeleteWorkerPod, true, &gr.Counters)
	}
}

// createReplica plans one CreateReplicaGroup for the given hosts.
func (d *decider) createReplica(gi int, name string, index int, hosts []int, f *FormingGroup, r Reason) error {
	c := &d.s.Cluster
	g := &c.Spec.WorkerGroups[gi]
	gr := &d.plan.Groups[gi]
	cg := &CreateReplicaGroup{ReplicaName: name, ReplicaIndex: index, Hosts: slices.Clone(hosts), NumOfHosts: int(g.NumOfHosts),
		Serial: d.c.DeleteIncompleteGroupsImmediately}
	if f != nil {
		cg.Retry, cg.Attempts, cg.FirstFailure = true, f.Attempts, f.FirstFailure
	}
	a := Action{Kind: KindCreateReplicaGroup, Group: g.GroupName, Reason: r, FailureReason: FailedCreateWorkerPod, CreateGroup: cg}
	prefix := podNamePrefix(c.Name+"-"+g.GroupName, NodeTypeWorker, true)
	for _, h := range hosts {
		pod, err := d.buildPod(podSpec{group: g, replicaIndex: index, replicaName: name, hostIndex: h})
		if err != nil {
			return err
		}
		d.name(pod, prefix, g.GroupName, index, h)
		cg.Pods = append(cg.Pods, pod)
		a.Expect = append(a.Expect, Expect{Group: g.GroupName, Kind: ExpectCreate, Pod: pod.Name})
		gr.Place++
	}
	d.plan.Actions = append(d.plan.Actions, a)
	return nil
}

// multiHostWorkersToDelete expands listed workers to their whole replica
// groups (§2.7 step 4) and plans the deletes; it returns the expanded count.
func (d *decider) multiHostWorkersToDelete(gi int, byName func(string) *replicaGroup, legacy []int32, legacyDeleted *bool) int {
	c := &d.s.Cluster
	g := &c.Spec.WorkerGroups[gi]
	gr := &d.plan.Groups[gi]
	if len(g.ScaleStrategy.WorkersToDelete) == 0 {
		return 0
	}
	set := map[int32]bool{}
	var expanded []int32
	add := func(pods []int32) {
		for _, i := range pods {
			if !set[i] {
				set[i] = true
				expanded = append(expanded, i)
			}
		}
	}
	var groups []*replicaGroup
	seen := map[string]bool{}
	for _, name := range g.ScaleStrategy.WorkersToDelete {
		if seen[name] {
			continue
		}
		seen[name] = true
		idx := d.wtdNames[name]
		if idx < 0 {
			gr.AbsentWorkersToDelete++
			continue
		}
		p := d.pod(idx)
		if p.Labels[LabelCluster] != c.Name || p.Labels[LabelGroup] != g.GroupName || (!d.c.MatchByLabelsOnly && d.foreignOwner(p)) {
			if !d.c.BlindWorkersToDelete {
				d.plan.Notices = append(d.plan.Notices, Reason{Code: ReasonWorkersToDeleteNotMember, Pods: []string{name},
					Message: fmt.Sprintf("group %s: workersToDelete names %s, which is not a pod of this group; not deleting it", g.GroupName, name)})
			}
			continue
		}
		if !d.counted(idx) {
			gr.Ignore++
			continue
		}
		r, ok := p.Labels[LabelReplicaName]
		switch {
		case ok && byName(r) != nil:
			rg := byName(r)
			add(rg.members)
			groups = append(groups, rg)
		case !ok && len(legacy) > 0:
			add(legacy)
		}
	}
	if len(expanded) == 0 {
		return 0
	}
	reason := Reason{Code: ReasonWorkersToDelete, Message: "autoscaler scale-down request"}
	for _, rg := range groups {
		rg.deleted = true
		if rg.forming != nil {
			d.dropForming(g.GroupName, rg.name)
			rg.forming = nil
		}
	}
	if slices.ContainsFunc(expanded, func(i int32) bool { _, ok := d.pod(i).Labels[LabelReplicaName]; return !ok }) {
		*legacyDeleted = true
	}
	d.deletePods(gi, expanded, reason)
	return len(expanded)
}
