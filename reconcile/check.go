package reconcile

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/expectations"
)

// CheckPlan reports every invariant that plan, the result of Decide(in, o),
// breaks, joined into one error, or nil when it keeps them all. It is the check
// plancore's own property tests run on every generated snapshot, exported so a
// property over your own controller can run it on each plan it makes:
//
//   - at most one head create, and none while a head pod exists;
//   - a single-host group that deletes an unhealthy pod creates nothing in the
//     same plan; with Compat.StopAtFirstGroupRequeue no group after a stopping
//     group is visited or acted on;
//   - every delete names a pod of this cluster (namespace, cluster label and
//     UID), never twice and, unless Compat.CountTerminatingPods, never a
//     terminating one; blind workersToDelete deletes (KubeRay #733) are exempt;
//     DeleteAllOf selects this cluster and has active pods to delete;
//   - a group whose expectations are unsatisfied gets no action, and a plan that
//     stopped at suspend or recreate creates nothing;
//   - each group's desired count is the clamp of replicas to [min, max] (min
//     wins), times its hosts, zero when suspended;
//   - a new multi-host replica group is created whole, each pod labelled with
//     its replica name, replica index and host index; a multi-host delete covers
//     a whole replica group; replica indices stay unique;
//   - every action has a reason code, and the counters add up to the actions.
//
// CheckPlan does not re-run Decide, so it says nothing of determinism; it
// reads in and plan and changes neither.
func CheckPlan(in Snapshot, o Options, plan Plan) error {
	c := checker{in: in, o: o, p: plan}
	c.headCreates()
	c.unhealthyStopsGroup()
	c.stopAtFirstGroup()
	c.deletesAreSafe()
	c.gates()
	c.desired()
	c.replicaGroups()
	c.reasonsAndCounters()
	return errors.Join(c.errs...)
}

type checker struct {
	in   Snapshot
	o    Options
	p    Plan
	errs []error
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// ours reports whether pod belongs to the checked cluster.
func (c *checker) ours(pod *corev1.Pod) bool {
	return pod.Namespace == c.in.Cluster.Namespace && pod.Labels[LabelCluster] == c.in.Cluster.Name
}

func (c *checker) headCreates() {
	creates, heads := 0, 0
	for _, a := range c.p.Actions {
		if a.Group == HeadGroupLabel && a.Kind == ActionCreatePod {
			creates++
		}
	}
	for i := range c.in.Pods {
		if c.ours(&c.in.Pods[i]) && c.in.Pods[i].Labels[LabelNodeType] == "head" {
			heads++
		}
	}
	if creates > 1 || (creates == 1 && heads > 0) {
		c.fail("%d head creates with %d head pods", creates, heads)
	}
}

func (c *checker) unhealthyStopsGroup() {
	unhealthy, creates := map[string]bool{}, map[string]bool{}
	for _, a := range c.p.Actions {
		switch {
		case a.Kind == ActionDeletePod && (a.Reason.Code == ReasonWorkerTerminalPhase || a.Reason.Code == ReasonWorkerContainerExited):
			unhealthy[a.Group] = true
		case a.Kind == ActionCreatePod && a.Group != HeadGroupLabel:
			creates[a.Group] = true
		}
	}
	for _, g := range slices.Sorted(maps.Keys(unhealthy)) {
		if creates[g] {
			c.fail("group %s deletes an unhealthy pod and creates in the same plan", g)
		}
	}
}

// stopAtFirstGroup: with KubeRay's stop at the first group that requeues, no
// later group is visited and no action follows the stopping group's.
func (c *checker) stopAtFirstGroup() {
	if !c.o.Compat.StopAtFirstGroupRequeue {
		return
	}
	stopped, last := false, ""
	for _, gr := range c.p.Groups {
		if stopped && !gr.NotVisited {
			c.fail("group %s visited after a stop", gr.Group)
		}
		if gr.Stopped != nil {
			stopped, last = true, gr.Group
		}
	}
	if !stopped {
		return
	}
	seen := false
	for _, a := range c.p.Actions {
		if a.Group == last {
			seen = true
		} else if seen && a.Group != "" {
			c.fail("action for group %s after the stopping group %s", a.Group, last)
		}
	}
}

func (c *checker) deletesAreSafe() {
	pods := map[string]*corev1.Pod{}
	for i := range c.in.Pods {
		if p := &c.in.Pods[i]; p.Namespace == c.in.Cluster.Namespace {
			pods[p.Name] = p
		}
	}
	seen := map[string]bool{}
	for _, a := range c.p.Actions {
		switch a.Kind {
		case ActionDeletePod:
			c.deleteIsSafe(a, pods, seen)
		case ActionDeleteAllOf:
			if a.DeleteAll.Selector[LabelCluster] != c.in.Cluster.Name || a.DeleteAll.Namespace != c.in.Cluster.Namespace || a.DeleteAll.Active == 0 {
				c.fail("DeleteAllOf %s in %q with %d active pods", a.DeleteAll.SelectorString(), a.DeleteAll.Namespace, a.DeleteAll.Active)
			}
		}
	}
}

func (c *checker) deleteIsSafe(a Action, pods map[string]*corev1.Pod, seen map[string]bool) {
	d := a.Delete
	if c.o.Compat.BlindWorkersToDelete && a.Reason.Code == ReasonWorkersToDelete && d.UID == "" {
		// KubeRay's blind delete by name (KubeRay #733) may name anything, and
		// the pod's own group may delete it again.
		return
	}
	if seen[d.Name] {
		c.fail("pod %s deleted twice", d.Name)
	}
	seen[d.Name] = true
	pod := pods[d.Name]
	if pod == nil || d.Namespace != c.in.Cluster.Namespace || !c.ours(pod) || pod.UID != d.UID {
		c.fail("delete of %s/%s (UID %q), which is not a pod of this cluster", d.Namespace, d.Name, d.UID)
		return
	}
	if !c.o.Compat.CountTerminatingPods && pod.DeletionTimestamp != nil {
		c.fail("delete of terminating pod %s", d.Name)
	}
}

// pending reports whether group g (the head is "") has unsatisfied expectations.
func (c *checker) pending(g string) bool {
	if c.in.Expectations == nil {
		return false
	}
	cl := c.in.Cluster
	owner := expectations.Owner{Namespace: cl.Namespace, Name: cl.Name, UID: cl.UID}
	res, err := c.in.Expectations.Check(c.in.Now, owner, g, expectations.NewView(c.in.Pods))
	return err == nil && !res.Satisfied
}

func (c *checker) gates() {
	for _, a := range c.p.Actions {
		g := a.Group
		if g == HeadGroupLabel {
			g = ""
		} else if g == "" {
			continue
		}
		if c.pending(g) {
			c.fail("group %q has unsatisfied expectations but gets %s", g, a.Kind)
		}
	}
	if c.p.Verdict.StoppedAt == "suspend" || c.p.Verdict.StoppedAt == "recreate" {
		for _, a := range c.p.Actions {
			if a.Kind == ActionCreatePod || a.Kind == ActionCreateReplicaGroup {
				c.fail("a plan stopped at %s creates pods (%s in %s)", c.p.Verdict.StoppedAt, a.Kind, a.Group)
			}
		}
	}
}

// desiredOf is the documented desired pod count of a group.
func desiredOf(g WorkerGroup, o Options) int64 {
	if g.Suspend != nil && *g.Suspend {
		return 0
	}
	lo, hi := int64(0), int64(math.MaxInt32)
	if g.MinReplicas != nil {
		lo = int64(*g.MinReplicas)
	}
	if g.MaxReplicas != nil {
		hi = int64(*g.MaxReplicas)
	}
	r := lo
	if g.Replicas != nil && int64(*g.Replicas) >= lo {
		r = min(int64(*g.Replicas), hi)
	}
	h := int64(g.NumOfHosts)
	if h <= 0 && !o.Compat.ZeroHostsMeansZeroPods {
		h = 1
	}
	return max(0, min(r*h, math.MaxInt32))
}

func (c *checker) desired() {
	groups := c.in.Cluster.Spec.WorkerGroups
	if len(c.p.Groups) != len(groups) {
		c.fail("%d group reports for %d worker groups", len(c.p.Groups), len(groups))
		return
	}
	for i, g := range groups {
		if want := desiredOf(g, c.o); int64(c.p.Groups[i].Desired) != want {
			c.fail("group %s desired %d, want %d", g.GroupName, c.p.Groups[i].Desired, want)
		}
	}
}

func (c *checker) replicaGroups() {
	deleted, whole := map[string]bool{}, map[string]bool{}
	for _, a := range c.p.Actions {
		if a.Kind == ActionDeletePod {
			deleted[a.Delete.Name] = true
			// Blind workersToDelete deletes (KubeRay's mode) may hit any pod.
			if a.Delete.UID != "" {
				whole[a.Delete.Name] = true
			}
		}
	}
	hosts := map[string]int{}
	for _, g := range c.in.Cluster.Spec.WorkerGroups {
		hosts[g.GroupName] = int(g.NumOfHosts)
	}
	multi := c.o.Gates.MultiHostIndexing != GateOff
	c.createdGroups(hosts, multi)
	if !multi {
		return
	}
	for _, g := range c.in.Cluster.Spec.WorkerGroups {
		h := hosts[g.GroupName]
		if h > 1 {
			c.wholeDeletes(g.GroupName, whole)
		}
		c.uniqueIndices(g.GroupName, h, deleted)
	}
}

// createdGroups: no single pod in a multi-host group, and every new replica
// group has all its hosts, labelled with its name and index.
func (c *checker) createdGroups(hosts map[string]int, multi bool) {
	for _, a := range c.p.Actions {
		if a.Kind == ActionCreatePod && a.Group != HeadGroupLabel && multi && hosts[a.Group] > 1 {
			c.fail("single pod created in multi-host group %s", a.Group)
		}
		if a.Kind != ActionCreateReplicaGroup {
			continue
		}
		cg := a.CreateGroup
		if !cg.Retry && (len(cg.Pods) != hosts[a.Group] || !slices.Equal(cg.Hosts, seq(hosts[a.Group]))) {
			c.fail("new replica group %s of group %s has hosts %v, want all %d", cg.ReplicaName, a.Group, cg.Hosts, hosts[a.Group])
		}
		if len(cg.Hosts) != len(cg.Pods) {
			c.fail("replica group %s: %d hosts for %d pods", cg.ReplicaName, len(cg.Hosts), len(cg.Pods))
			continue
		}
		for k, pod := range cg.Pods {
			if pod.Labels[LabelReplicaName] != cg.ReplicaName || pod.Labels[LabelReplicaIndex] != strconv.Itoa(cg.ReplicaIndex) ||
				pod.Labels[LabelHostIndex] != strconv.Itoa(cg.Hosts[k]) {
				c.fail("replica group %s member %d has labels %v", cg.ReplicaName, k, pod.Labels)
			}
		}
	}
}

// wholeDeletes: every multi-host delete covers the whole (counted) replica
// group.
func (c *checker) wholeDeletes(gname string, whole map[string]bool) {
	members := map[string][]string{}
	for i := range c.in.Pods {
		pod := &c.in.Pods[i]
		if !c.ours(pod) || pod.Labels[LabelGroup] != gname {
			continue
		}
		if pod.DeletionTimestamp != nil && !c.o.Compat.CountTerminatingPods {
			continue
		}
		r, ok := pod.Labels[LabelReplicaName]
		if !ok && c.o.Compat.IgnoreUnlabelledMultiHostPods {
			continue
		}
		members[r] = append(members[r], pod.Name)
	}
	for _, r := range slices.Sorted(maps.Keys(members)) {
		n := 0
		for _, nm := range members[r] {
			if whole[nm] {
				n++
			}
		}
		if n != 0 && n != len(members[r]) {
			c.fail("group %s replica %q: %d of its %d pods deleted", gname, r, n, len(members[r]))
		}
	}
}

// indexOwners maps each replica index of group gname's non-terminating pods
// to its owner (the replica name, or the pod for one host), after the plan's
// deletes; unique reports that no index had two owners before them.
func (c *checker) indexOwners(gname string, h int, deleted map[string]bool) (after map[string]string, unique bool) {
	before := map[string]string{}
	after, unique = map[string]string{}, true
	for i := range c.in.Pods {
		pod := &c.in.Pods[i]
		if !c.ours(pod) || pod.Labels[LabelGroup] != gname || pod.DeletionTimestamp != nil {
			continue
		}
		idx, ok := pod.Labels[LabelReplicaIndex]
		if !ok {
			continue
		}
		owner := pod.Name
		if h > 1 {
			// Unlabelled (legacy) multi-host pods hold no index.
			if owner, ok = pod.Labels[LabelReplicaName]; !ok {
				continue
			}
		}
		if prev, ok := before[idx]; ok && prev != owner {
			unique = false
		}
		before[idx] = owner
		if !deleted[pod.Name] {
			after[idx] = owner
		}
	}
	return after, unique
}

// uniqueIndices: replica indices stay unique after the plan among
// non-terminating pods, if they were unique before.
func (c *checker) uniqueIndices(gname string, h int, deleted map[string]bool) {
	after, unique := c.indexOwners(gname, h, deleted)
	if !unique || c.pending(gname) {
		return
	}
	for _, a := range c.p.Actions {
		if a.Group != gname {
			continue
		}
		var idx, owner string
		switch {
		case a.Create != nil && a.Create.ReplicaIndex >= 0:
			idx, owner = strconv.Itoa(a.Create.ReplicaIndex), "new"+strconv.Itoa(a.Create.ReplicaIndex)
		case a.CreateGroup != nil:
			idx, owner = strconv.Itoa(a.CreateGroup.ReplicaIndex), a.CreateGroup.ReplicaName
		default:
			continue
		}
		if prev, ok := after[idx]; ok && prev != owner {
			c.fail("group %s: replica index %s reused by %s while %s holds it", gname, idx, owner, prev)
		}
		after[idx] = owner
	}
}

func (c *checker) reasonsAndCounters() {
	place, stop, all := 0, 0, 0
	for _, a := range c.p.Actions {
		if a.Reason.Code == "" {
			c.fail("%s action in group %q without a reason code", a.Kind, a.Group)
		}
		switch a.Kind {
		case ActionCreatePod:
			place++
		case ActionCreateReplicaGroup:
			place += len(a.CreateGroup.Pods)
		case ActionDeletePod:
			stop++
		case ActionDeleteAllOf:
			all += a.DeleteAll.Active
		}
	}
	if c.p.Totals.Place != place || c.p.Totals.Stops() != stop || c.p.Totals.DeleteAll != all {
		c.fail("counters say place %d, stop %d, delete-all %d; the actions make %d, %d, %d",
			c.p.Totals.Place, c.p.Totals.Stops(), c.p.Totals.DeleteAll, place, stop, all)
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
