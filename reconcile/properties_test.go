package reconcile_test

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/reconcile"
)

// bothModes runs a property in default mode and with KubeRayV170().
func bothModes(t *testing.T, prop func(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan)) {
	for _, mode := range []struct {
		name   string
		compat bool
	}{{"default", false}, {"anchor", true}} {
		t.Run(mode.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				s := genSnapshot(t, 6)
				o := genOptions(t, mode.compat)
				p, err := reconcile.Decide(s, o)
				if err != nil {
					t.Fatalf("Decide: %v", err)
				}
				prop(t, s, o, p)
			})
		})
	}
}

func clusterPods(s reconcile.Snapshot) map[string]*corev1.Pod {
	m := map[string]*corev1.Pod{}
	for i := range s.Pods {
		p := &s.Pods[i]
		if p.Namespace == s.Cluster.Namespace {
			m[p.Name] = p
		}
	}
	return m
}

func isPending(s reconcile.Snapshot, g string) bool {
	if s.Expectations == nil {
		return false
	}
	res, err := s.Expectations.Check(s.Now, expectations.Owner{Namespace: "ns", Name: "rc", UID: "uid-rc"}, g, expectations.NewView(s.Pods))
	return err == nil && !res.Satisfied
}

// Invariant 1: at most one head create, none while any head pod exists.
func TestPropHeadCreates(t *testing.T) {
	bothModes(t, func(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan) {
		creates := 0
		for _, a := range p.Actions {
			if a.Group == reconcile.HeadGroupLabel && a.Kind == reconcile.KindCreatePod {
				creates++
			}
		}
		heads := 0
		for _, pod := range s.Pods {
			if pod.Namespace == "ns" && pod.Labels[reconcile.LabelCluster] == "rc" && pod.Labels[reconcile.LabelNodeType] == "head" {
				heads++
			}
		}
		if creates > 1 || (creates == 1 && heads > 0) {
			t.Fatalf("%d head creates with %d head pods:\n%s", creates, heads, p.Explain())
		}
	})
}

// Invariant 2: no create in a single-host group whose unhealthy pod is being
// deleted; in compat mode nothing after a stopping group.
func TestPropUnhealthyStopsGroup(t *testing.T) {
	bothModes(t, func(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan) {
		unhealthy, creates := map[string]bool{}, map[string]bool{}
		for _, a := range p.Actions {
			switch {
			case a.Kind == reconcile.KindDeletePod && (a.Reason.Code == reconcile.ReasonWorkerTerminalPhase || a.Reason.Code == reconcile.ReasonWorkerContainerExited):
				unhealthy[a.Group] = true
			case a.Kind == reconcile.KindCreatePod && a.Group != reconcile.HeadGroupLabel:
				creates[a.Group] = true
			}
		}
		for g := range unhealthy {
			if creates[g] {
				t.Fatalf("group %s deletes an unhealthy pod and creates:\n%s", g, p.Explain())
			}
		}
		if o.Compat.StopAtFirstGroupRequeue {
			stopped := false
			for _, gr := range p.Groups {
				if stopped && !gr.NotVisited {
					t.Fatalf("group %s visited after a stop:\n%s", gr.Group, p.Explain())
				}
				if gr.Stopped != nil {
					stopped = true
				}
			}
			if stopped {
				last := ""
				for _, gr := range p.Groups {
					if gr.Stopped != nil {
						last = gr.Group
					}
				}
				seen := false
				for _, a := range p.Actions {
					if a.Group == last {
						seen = true
					} else if seen && a.Group != "" {
						t.Fatalf("action for %s after the stopping group %s:\n%s", a.Group, last, p.Explain())
					}
				}
			}
		}
	})
}

// Invariant 3: deletes name this cluster's pods, never twice, never a
// terminating pod in default mode; DeleteAllOf always selects the cluster.
func TestPropDeletesAreSafe(t *testing.T) {
	bothModes(t, func(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan) {
		pods := clusterPods(s)
		seen := map[string]bool{}
		for _, a := range p.Actions {
			switch a.Kind {
			case reconcile.KindDeletePod:
				d := a.Delete
				blind := o.Compat.BlindWorkersToDelete && a.Reason.Code == reconcile.ReasonWorkersToDelete && d.UID == ""
				if seen[d.Name] && !blind {
					t.Fatalf("pod %s deleted twice:\n%s", d.Name, p.Explain())
				}
				if blind {
					// KubeRay's blind delete by name (KubeRay #733) may name anything, and
					// the pod's own group may delete it again.
					continue
				}
				seen[d.Name] = true
				pod := pods[d.Name]
				if pod == nil || d.Namespace != "ns" || pod.Labels[reconcile.LabelCluster] != "rc" || pod.UID != d.UID {
					t.Fatalf("delete of %s, which is not this cluster's pod:\n%s", d.Name, p.Explain())
				}
				if !o.Compat.CountTerminatingPods && pod.DeletionTimestamp != nil {
					t.Fatalf("default mode deletes terminating pod %s:\n%s", d.Name, p.Explain())
				}
			case reconcile.KindDeleteAllOf:
				if a.DeleteAll.Selector[reconcile.LabelCluster] != "rc" || a.DeleteAll.Active == 0 {
					t.Fatalf("DeleteAllOf %v (%d active):\n%s", a.DeleteAll.Selector, a.DeleteAll.Active, p.Explain())
				}
			}
		}
	})
}

// Invariant 4: pending groups get no actions; suspending or recreating plans
// create nothing; desired is the clamp (min wins), saturated.
func TestPropGatesAndDesired(t *testing.T) {
	bothModes(t, func(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan) {
		for _, a := range p.Actions {
			g := a.Group
			if g == reconcile.HeadGroupLabel {
				g = ""
			} else if g == "" {
				continue
			}
			if isPending(s, g) {
				t.Fatalf("pending group %q got %s:\n%s", g, a.Kind, p.Explain())
			}
		}
		if p.Outcome.StoppedAt == "suspend" || p.Outcome.StoppedAt == "recreate" {
			for _, a := range p.Actions {
				if a.Kind == reconcile.KindCreatePod || a.Kind == reconcile.KindCreateReplicaGroup {
					t.Fatalf("creates in a %s plan:\n%s", p.Outcome.StoppedAt, p.Explain())
				}
			}
		}
		for i, g := range s.Cluster.Spec.WorkerGroups {
			want := int64(0)
			if g.Suspend == nil || !*g.Suspend {
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
				want = max(0, min(r*h, math.MaxInt32))
			}
			if int64(p.Groups[i].Desired) != want {
				t.Fatalf("group %s desired %d, want %d", g.GroupName, p.Groups[i].Desired, want)
			}
		}
	})
}

// Invariant 5: replica groups are created whole with one name and index, and
// multi-host deletes cover whole replica groups; indices stay unique.
func TestPropReplicaGroups(t *testing.T) {
	bothModes(t, func(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan) {
		deleted, whole := map[string]bool{}, map[string]bool{}
		for _, a := range p.Actions {
			if a.Kind == reconcile.KindDeletePod {
				deleted[a.Delete.Name] = true
				// Blind workersToDelete deletes (KubeRay's mode) may hit any pod.
				if a.Delete.UID != "" {
					whole[a.Delete.Name] = true
				}
			}
		}
		hosts := map[string]int{}
		for _, g := range s.Cluster.Spec.WorkerGroups {
			hosts[g.GroupName] = int(g.NumOfHosts)
		}
		multi := o.Gates.MultiHostIndexing != reconcile.GateOff
		checkCreatedGroups(t, p, hosts, multi)
		if !multi {
			return
		}
		for gname, h := range hosts {
			if h > 1 {
				checkWholeDeletes(t, s, o, p, gname, whole)
			}
			checkUniqueIndices(t, s, p, gname, h, deleted)
		}
	})
}

// checkCreatedGroups: no single pod in a multi-host group, and every new
// replica group has all its hosts, labelled with its name and index.
func checkCreatedGroups(t *rapid.T, p reconcile.Plan, hosts map[string]int, multi bool) {
	for _, a := range p.Actions {
		if a.Kind == reconcile.KindCreatePod && a.Group != reconcile.HeadGroupLabel && multi && hosts[a.Group] > 1 {
			t.Fatalf("single pod created in multi-host group %s", a.Group)
		}
		if a.Kind != reconcile.KindCreateReplicaGroup {
			continue
		}
		cg := a.CreateGroup
		if !cg.Retry && (len(cg.Pods) != hosts[a.Group] || !cmp.Equal(cg.Hosts, seq(hosts[a.Group]))) {
			t.Fatalf("new replica group with hosts %v for H=%d", cg.Hosts, hosts[a.Group])
		}
		for k, pod := range cg.Pods {
			if pod.Labels[reconcile.LabelReplicaName] != cg.ReplicaName || pod.Labels[reconcile.LabelReplicaIndex] != strconv.Itoa(cg.ReplicaIndex) ||
				pod.Labels[reconcile.LabelHostIndex] != strconv.Itoa(cg.Hosts[k]) {
				t.Fatalf("member %d labels %v", k, pod.Labels)
			}
		}
	}
}

// checkWholeDeletes: every multi-host delete covers the whole (counted)
// replica group.
func checkWholeDeletes(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan, gname string, whole map[string]bool) {
	members := map[string][]string{}
	for _, pod := range s.Pods {
		if pod.Namespace != "ns" || pod.Labels[reconcile.LabelCluster] != "rc" || pod.Labels[reconcile.LabelGroup] != gname {
			continue
		}
		if pod.DeletionTimestamp != nil && !o.Compat.CountTerminatingPods {
			continue
		}
		r, ok := pod.Labels[reconcile.LabelReplicaName]
		if !ok && o.Compat.IgnoreUnlabelledMultiHostPods {
			continue
		}
		members[r] = append(members[r], pod.Name)
	}
	for r, names := range members {
		n := 0
		for _, nm := range names {
			if whole[nm] {
				n++
			}
		}
		if n != 0 && n != len(names) {
			t.Fatalf("group %s replica %q: %d of %d members deleted:\n%s", gname, r, n, len(names), p.Explain())
		}
	}
}

// indexOwners maps each replica index of group gname's non-terminating pods
// to its owner (the replica name, or the pod for H=1), before and after the
// plan's deletes; unique reports that no index had two owners before.
func indexOwners(s reconcile.Snapshot, gname string, h int, deleted map[string]bool) (after map[string]string, unique bool) {
	before := map[string]string{}
	after, unique = map[string]string{}, true
	for _, pod := range s.Pods {
		if pod.Namespace != "ns" || pod.Labels[reconcile.LabelCluster] != "rc" || pod.Labels[reconcile.LabelGroup] != gname || pod.DeletionTimestamp != nil {
			continue
		}
		idx, ok := pod.Labels[reconcile.LabelReplicaIndex]
		if !ok {
			continue
		}
		owner := pod.Name
		if h > 1 {
			// Unlabelled (legacy) multi-host pods hold no index.
			if owner, ok = pod.Labels[reconcile.LabelReplicaName]; !ok {
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

// checkUniqueIndices: indices stay unique after the plan among
// non-terminating pods, if they were unique before.
func checkUniqueIndices(t *rapid.T, s reconcile.Snapshot, p reconcile.Plan, gname string, h int, deleted map[string]bool) {
	after, unique := indexOwners(s, gname, h, deleted)
	if !unique || isPending(s, gname) {
		return
	}
	for _, a := range p.Actions {
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
			t.Fatalf("group %s: index %s reused by %s while %s holds it:\n%s", gname, idx, owner, prev, p.Explain())
		}
		after[idx] = owner
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Invariant 6: determinism, permutation invariance, counters add up, reasons.
func TestPropDeterministic(t *testing.T) {
	bothModes(t, func(t *rapid.T, s reconcile.Snapshot, o reconcile.Options, p reconcile.Plan) {
		again, err := reconcile.Decide(s, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, again) || p.Explain() != again.Explain() {
			t.Fatalf("second Decide differs:\n%s", cmp.Diff(p, again))
		}
		perm := s
		perm.Pods = rapid.Permutation(s.Pods).Draw(t, "perm")
		permuted, err := reconcile.Decide(perm, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, permuted) {
			t.Fatalf("permuting pods changed the plan:\n%s", cmp.Diff(p, permuted))
		}
		for _, a := range p.Actions {
			if a.Reason.Code == "" {
				t.Fatalf("action without a reason code: %+v", a)
			}
		}
		if msg := countersMismatch(p); msg != "" {
			t.Fatal(msg)
		}
	})
}

// Invariant 7: the snapshot is unchanged by Decide.
func TestPropInputUnchanged(t *testing.T) {
	for _, compatMode := range []bool{false, true} {
		rapid.Check(t, func(t *rapid.T) {
			s := genSnapshot(t, 6)
			o := genOptions(t, compatMode)
			before := cloneSnapshot(s)
			if _, err := reconcile.Decide(s, o); err != nil {
				t.Fatal(err)
			}
			if diff := snapshotDiff(before, s); diff != "" {
				t.Fatalf("Decide changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

// snapshotDiff reports how after differs from before, or "". The plain
// fields are diffed with cmp, the cluster and the pods on their own so that
// a change reads with its path. The expectations state has only unexported
// fields, which cmp refuses to read; its records are compared with
// reflect.DeepEqual and described by the exported counts.
func snapshotDiff(before, after reconcile.Snapshot) string {
	var b strings.Builder
	if d := cmp.Diff(before.Cluster, after.Cluster); d != "" {
		fmt.Fprintf(&b, "Cluster:\n%s", d)
	}
	if d := cmp.Diff(before.Pods, after.Pods); d != "" {
		fmt.Fprintf(&b, "Pods:\n%s", d)
	}
	rest := func(s reconcile.Snapshot) reconcile.Snapshot {
		s.Cluster, s.Pods, s.Expectations = reconcile.Cluster{}, nil, nil
		return s
	}
	if d := cmp.Diff(rest(before), rest(after)); d != "" {
		fmt.Fprintf(&b, "Snapshot (other fields):\n%s", d)
	}
	if !reflect.DeepEqual(before.Expectations, after.Expectations) {
		fmt.Fprintf(&b, "Expectations: the state changed (%d records before, %d after)\n",
			before.Expectations.Len(), after.Expectations.Len())
	}
	return b.String()
}

// TestConcurrentDecide runs Decide on one snapshot from two goroutines; the
// race detector checks that nothing is written.
func TestConcurrentDecide(t *testing.T) {
	s := snap(cluster(group("a", 3), mhGroup("tpu", 2, 2)), withHead(worker("w1", "a", phase(corev1.PodFailed)), worker("w2", "a"))...)
	var wg sync.WaitGroup
	plans := make([]reconcile.Plan, 4)
	for i := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := opts()
			o.NameMode = reconcile.NameModeDerived
			p, err := reconcile.Decide(s, o)
			if err != nil {
				t.Error(err)
			}
			plans[i] = p
		}()
	}
	wg.Wait()
	for i := 1; i < len(plans); i++ {
		if diff := cmp.Diff(plans[0], plans[i]); diff != "" {
			t.Fatal(diff)
		}
	}
}

// countersMismatch checks that a plan's counters add up to its actions: Place
// to the pods created, Stop to the DeletePods, DeleteAll to the active pods
// DeleteAllOf targets. It returns "" when they do.
func countersMismatch(p reconcile.Plan) string {
	place, stop, all := 0, 0, 0
	for _, a := range p.Actions {
		switch a.Kind {
		case reconcile.KindCreatePod:
			place++
		case reconcile.KindCreateReplicaGroup:
			place += len(a.CreateGroup.Pods)
		case reconcile.KindDeletePod:
			stop++
		case reconcile.KindDeleteAllOf:
			all += a.DeleteAll.Active
		}
	}
	if p.Totals.Place != place || p.Totals.Stops() != stop || p.Totals.DeleteAll != all {
		return fmt.Sprintf("counters place %d stop %d delete-all %d, actions %d %d %d", p.Totals.Place, p.Totals.Stops(), p.Totals.DeleteAll, place, stop, all)
	}
	return ""
}
