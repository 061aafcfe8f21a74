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

// mhPass is one multi-host group's state while multiHost runs its steps.
type mhPass struct {
	gi     int
	g      *WorkerGroup
	gr     *GroupReport
	hosts  int
	rgs    []*replicaGroup // in replica-name order (byName relies on it)
	legacy []int32         // unlabelled pods, by name
	// legacyDeleted is set once the legacy pods are planned for deletion.
	legacyDeleted bool
	// valid are the replica groups left after the deletions; forming says one
	// of them is still forming.
	valid   []*replicaGroup
	forming bool
}

// byName finds the replica group called name, or nil.
func (m *mhPass) byName(name string) *replicaGroup {
	k, ok := slices.BinarySearchFunc(m.rgs, name, func(rg *replicaGroup, n string) int { return cmp.Compare(rg.name, n) })
	if !ok {
		return nil
	}
	return m.rgs[k]
}

// multiHost is KubeRay's reconcileMultiHostWorkerGroup with plancore's fixes
// (terminating pods not counted, ranked choices instead of map order,
// unlabelled pods handled as one legacy group, partial groups completed
// rather than deleted) unless restored by Compat. It runs as named steps; a
// step that stops the group ends it.
func (d *decider) multiHost(gi int) error {
	g := &d.s.Cluster.Spec.WorkerGroups[gi]
	m := &mhPass{gi: gi, g: g, gr: &d.plan.Groups[gi], hosts: int(g.NumOfHosts)}
	d.bucketReplicas(m)
	d.attachForming(m)
	if d.deleteIncomplete(m) {
		return nil
	}
	d.deleteUnhealthy(m)
	d.deleteUnhealthyLegacy(m)
	if n := d.multiHostWorkersToDelete(m); n > 0 {
		r := Reason{Code: ReasonWorkersToDelete, Facts: ReasonFacts{Group: g.GroupName, Count: n}}
		r.Message = fmt.Sprintf("deleted %d worker Pods based on ScaleStrategy, requeueing", r.Facts.Count)
		d.stopGroup(gi, r)
		return nil
	}
	d.collectValid(m)
	legacyReplicas := 0
	if !m.legacyDeleted {
		legacyReplicas = len(m.legacy) / m.hosts
	}
	running := len(m.valid) + legacyReplicas
	desiredPods := int(m.gr.Desired)
	if desiredPods%m.hosts != 0 {
		r := Reason{Code: ReasonNotMultipleOfHosts, Facts: ReasonFacts{Group: g.GroupName, Count: desiredPods, NumOfHosts: m.hosts}}
		r.Message = fmt.Sprintf("desired worker pods (%d) is not a multiple of NumOfHosts (%d) for group %s", r.Facts.Count, r.Facts.NumOfHosts, r.Facts.Group)
		d.stopGroup(gi, r)
		return nil
	}
	desired := desiredPods / m.hosts
	toCreate := desired - running
	if toCreate < 0 {
		toCreate = d.scaleDownReplicas(m, -toCreate, legacyReplicas)
	}
	return d.createReplicas(m, toCreate, running, desired)
}

// bucketReplicas groups the counted pods by replica name, and keeps the
// unlabelled ones apart as legacy pods (KubeRay ignores them).
func (d *decider) bucketReplicas(m *mhPass) {
	pods := d.groupPods(m.gi)
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
			m.gr.Legacy++
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
	m.legacy = legacy
	// The replica groups and their member lists are carved from two blocks.
	nrg := 0
	for k := range keys {
		if k == 0 || keys[k].replica != keys[k-1].replica {
			nrg++
		}
	}
	rgBlock := make([]replicaGroup, nrg)
	m.rgs = make([]*replicaGroup, 0, nrg)
	members := make([]int32, len(keys))
	for k := range keys {
		members[k] = keys[k].idx
	}
	for k := 0; k < len(keys); {
		j := k
		for j < len(keys) && keys[j].replica == keys[k].replica {
			j++
		}
		rg := &rgBlock[len(m.rgs)]
		rg.name, rg.members = keys[k].replica, members[k:j:j]
		m.rgs = append(m.rgs, rg)
		k = j
	}
}

// attachForming attaches the live formation records to their replica groups
// and drops the settled ones (KubeRay #4540). In KubeRay's mode every record
// is dropped: partial groups are deleted at once.
func (d *decider) attachForming(m *mhPass) {
	for _, f := range d.forming[m.g.GroupName] {
		rg := m.byName(f.ReplicaName)
		switch {
		case d.c.DeleteIncompleteGroupsImmediately, rg == nil, len(rg.members) >= m.hosts:
			d.dropForming(m.g.GroupName, f.ReplicaName)
		default:
			rg.forming = f
		}
	}
}

// deleteIncomplete deletes forming groups past their formation timeout, and
// the first incomplete group that is not forming, which stops the group.
func (d *decider) deleteIncomplete(m *mhPass) bool {
	var incomplete []*replicaGroup
	for _, rg := range m.rgs {
		if len(rg.members) >= m.hosts {
			continue
		}
		if rg.forming != nil {
			if d.s.Now.Sub(rg.forming.FirstFailure) >= d.o.formationTimeout() {
				r := Reason{Code: ReasonReplicaGroupFormationTimeout, Facts: ReasonFacts{Group: m.g.GroupName, ReplicaGroup: rg.name, Timeout: d.o.formationTimeout(), LastError: rg.forming.LastError}}
				r.Message = fmt.Sprintf("replica group %s did not form within %s (last error: %s); deleting it", r.Facts.ReplicaGroup, r.Facts.Timeout, r.Facts.LastError)
				d.deleteReplica(m.gi, rg, r)
				d.dropForming(m.g.GroupName, rg.name)
				rg.forming = nil
			}
			continue
		}
		incomplete = append(incomplete, rg)
	}
	if len(incomplete) == 0 {
		return false
	}
	// KubeRay takes the first in map order, a random choice; plancore ranks.
	d.rankReplicas(incomplete)
	rg := incomplete[0]
	r := Reason{Code: ReasonIncompleteReplicaGroup, Facts: ReasonFacts{Group: m.g.GroupName, ReplicaGroup: rg.name}}
	r.Message = fmt.Sprintf("cleaned up incomplete replica group %s, requeueing", r.Facts.ReplicaGroup)
	d.deleteReplica(m.gi, rg, r)
	d.stopGroup(m.gi, r)
	return true
}

// firstUnhealthy counts the unhealthy pods among pods and returns the first
// one's verdict.
func (d *decider) firstUnhealthy(m *mhPass, pods []int32) deleteVerdict {
	var first deleteVerdict
	for _, i := range pods {
		if !d.workerMayDelete(i) {
			continue
		}
		if v := shouldDeletePod(d.pod(i), NodeTypeWorker); v.del {
			m.gr.Unhealthy++
			if !first.del {
				first = v
			}
		}
	}
	return first
}

// deleteUnhealthy deletes every replica group with an unhealthy member,
// whole; unlike the single-host path it does not stop the group.
func (d *decider) deleteUnhealthy(m *mhPass) {
	for _, rg := range m.rgs {
		if rg.deleted {
			continue
		}
		if first := d.firstUnhealthy(m, rg.members); first.del {
			d.deleteReplica(m.gi, rg, Reason{Code: ReasonUnhealthyReplicaGroup, Message: first.message})
			if rg.forming != nil {
				d.dropForming(m.g.GroupName, rg.name)
				rg.forming = nil
			}
		}
	}
}

// deleteUnhealthyLegacy deletes the legacy pods when one of them is unhealthy
// or they are not a whole number of replicas. KubeRay ignores unlabelled pods
// once the indexing gate is on, so a Failed legacy pod is kept forever and
// new groups pile on top of them.
func (d *decider) deleteUnhealthyLegacy(m *mhPass) {
	if len(m.legacy) == 0 {
		return
	}
	first := d.firstUnhealthy(m, m.legacy)
	switch {
	case first.del:
		d.deletePods(m.gi, m.legacy, Reason{Code: ReasonLegacyMultiHostPods, Message: "unlabelled multi-host pods with an unhealthy member: " + first.message})
		m.legacyDeleted = true
	case len(m.legacy)%m.hosts != 0:
		r := Reason{Code: ReasonLegacyMultiHostPods, Facts: ReasonFacts{Group: m.g.GroupName, Count: len(m.legacy), NumOfHosts: m.hosts}}
		r.Message = fmt.Sprintf("%d unlabelled pods are not a multiple of numOfHosts %d: deleting them", r.Facts.Count, r.Facts.NumOfHosts)
		d.deletePods(m.gi, m.legacy, r)
		m.legacyDeleted = true
	}
}

// collectValid keeps the replica groups not deleted so far.
func (d *decider) collectValid(m *mhPass) {
	m.valid = make([]*replicaGroup, 0, len(m.rgs))
	for _, rg := range m.rgs {
		if rg.deleted {
			continue
		}
		m.valid = append(m.valid, rg)
		if rg.forming != nil {
			m.forming = true
		}
	}
}

// scaleDownReplicas removes surplus whole replica groups (legacy pods first,
// then the ranked groups) and returns how many replicas are still to create
// (zero, or what the legacy pods over-deleted).
func (d *decider) scaleDownReplicas(m *mhPass, surplus, legacyReplicas int) int {
	if !d.scaleDownAllowed() {
		m.gr.Ignore += surplus * m.hosts
		r := Reason{Code: ReasonScaleDownLeftToAutoscaler, Facts: ReasonFacts{Group: m.g.GroupName, Count: surplus}}
		r.Message = fmt.Sprintf("group %s: %d surplus replica groups are left to the autoscaler (#1253)", r.Facts.Group, r.Facts.Count)
		d.plan.Notices = append(d.plan.Notices, r)
		return 0
	}
	remove := surplus
	if legacyReplicas > 0 {
		// Legacy pods hold no index; they go first, all together.
		d.deletePods(m.gi, m.legacy, Reason{Code: ReasonScaleDown, Message: "scaling down: unlabelled multi-host pods go first"})
		remove -= legacyReplicas
	}
	if remove > 0 {
		d.rankReplicas(m.valid)
		for _, rg := range m.valid[:remove] {
			d.deleteReplica(m.gi, rg, Reason{Code: ReasonScaleDown, Message: "scaling down"})
			if rg.forming != nil {
				d.dropForming(m.g.GroupName, rg.name)
			}
		}
	}
	return max(0, -remove)
}

// formationRetries returns the forming groups whose backoff has passed,
// noting the others and asking to be woken when theirs ends.
func (d *decider) formationRetries(m *mhPass) []*replicaGroup {
	var retries []*replicaGroup
	for _, rg := range m.valid {
		if rg.forming == nil || rg.deleted {
			continue
		}
		next := rg.forming.LastAttempt.Add(formationBackoff(rg.forming.Attempts))
		if d.s.Now.Before(next) {
			d.addHint(next.Sub(d.s.Now))
			r := Reason{Code: ReasonReplicaGroupFormationBackoff, Facts: ReasonFacts{Group: m.g.GroupName, ReplicaGroup: rg.name, At: next}}
			r.Message = fmt.Sprintf("group %s: replica group %s retries its missing hosts at %s", r.Facts.Group, r.Facts.ReplicaGroup, r.Facts.At.UTC().Format(time.RFC3339))
			d.plan.Notices = append(d.plan.Notices, r)
			continue
		}
		retries = append(retries, rg)
	}
	return retries
}

// createReplicas plans the retries of forming groups, then toCreate new
// replica groups at the lowest free indices.
func (d *decider) createReplicas(m *mhPass, toCreate, running, desired int) error {
	retries := d.formationRetries(m)
	if len(retries) == 0 && toCreate <= 0 {
		return nil
	}
	if d.s.TLS.Enabled && !d.s.TLS.SecretsReady {
		d.stopGroup(m.gi, d.mtlsReason())
		return nil
	}
	for _, rg := range retries {
		if err := d.retryReplica(m, rg); err != nil {
			return err
		}
	}
	if toCreate <= 0 {
		return nil
	}
	if m.forming && !d.c.DeleteIncompleteGroupsImmediately {
		// Two half-formed groups could deadlock on one quota (KubeRay #4540).
		r := Reason{Code: ReasonReplicaGroupForming, Facts: ReasonFacts{Group: m.g.GroupName, Count: toCreate}}
		r.Message = fmt.Sprintf("group %s: %d new replica groups wait until the forming group is complete", r.Facts.Group, r.Facts.Count)
		d.plan.Notices = append(d.plan.Notices, r)
		return nil
	}
	allHosts := make([]int, m.hosts)
	for h := range allHosts {
		allHosts[h] = h
	}
	// The indices in use: a forming group's recorded index, else the one read
	// from its first pod by name. Creations only follow a scale-down that
	// deleted nothing, so valid is still whole.
	used := newIndexSet(len(m.valid))
	for _, rg := range m.valid {
		if rg.forming != nil {
			used.add(rg.forming.ReplicaIndex)
		} else if d.facts(rg).indexOK {
			used.add(rg.index)
		}
	}
	for range d.burstLimit(m.g.GroupName, toCreate, m.hosts) {
		next := used.take()
		m.gr.FreeIndices = append(m.gr.FreeIndices, next)
		name := d.replicaName(m.gi, next)
		r := Reason{Code: ReasonReplicaGroupCreate, Facts: ReasonFacts{Group: m.g.GroupName, Count: running, Of: desired}}
		r.Message = fmt.Sprintf("scaling up: %d of %d replica groups running", r.Facts.Count, r.Facts.Of)
		if err := d.createReplica(m.gi, name, next, allHosts, nil, r); err != nil {
			return err
		}
	}
	return nil
}

// retryReplica plans the missing hosts of a forming group.
func (d *decider) retryReplica(m *mhPass, rg *replicaGroup) error {
	present := make([]bool, m.hosts)
	for _, i := range rg.members {
		if h, ok := hostIndexOf(d.pod(i)); ok && h < m.hosts {
			present[h] = true
		}
	}
	var hosts []int
	for h := range m.hosts {
		if !present[h] {
			hosts = append(hosts, h)
		}
	}
	f := rg.forming
	r := Reason{Code: ReasonReplicaGroupFormationRetry, Facts: ReasonFacts{Group: m.g.GroupName, ReplicaGroup: rg.name, Hosts: hosts, Attempt: f.Attempts + 1, LastError: f.LastError}}
	r.Message = fmt.Sprintf("completing replica group %s: hosts %v are missing (attempt %d; last error: %s)", r.Facts.ReplicaGroup, r.Facts.Hosts, r.Facts.Attempt, r.Facts.LastError)
	return d.createReplica(m.gi, rg.name, f.ReplicaIndex, hosts, f, r)
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

// rankReplicas orders replica groups for removal. KubeRay walks a map;
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
		rr.Facts.Pods = names
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
	a := Action{Kind: ActionCreateReplicaGroup, Group: g.GroupName, Reason: r, FailureReason: FailedCreateWorkerPod, CreateGroup: cg}
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
// groups and plans the deletes; it returns the expanded count.
func (d *decider) multiHostWorkersToDelete(m *mhPass) int {
	c := &d.s.Cluster
	gi, g, gr, byName, legacy := m.gi, m.g, m.gr, m.byName, m.legacy
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
				d.plan.Notices = append(d.plan.Notices, notMember(g.GroupName, name))
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
		m.legacyDeleted = true
	}
	d.deletePods(gi, expanded, reason)
	return len(expanded)
}
