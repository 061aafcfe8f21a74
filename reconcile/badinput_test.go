package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/internal/invalidtest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/reconcile"
)

// fieldsOf returns the field paths an invalid-input error names.
var fieldsOf = invalidtest.Fields

// TestBadInput feeds bad snapshots and options through Decide. Each row names
// the sentinel and the exact field paths, or nil for input that is legal
// (Decide must then plan without error).
func TestBadInput(t *testing.T) {
	long := strings.Repeat("a", 10000)
	type row struct {
		name   string
		edit   func(*reconcile.Snapshot)
		opts   func(*reconcile.Options)
		kind   error
		fields []string
	}
	g0 := "spec.workerGroupSpecs[0]"
	rows := []row{
		{name: "empty cluster name", edit: func(s *reconcile.Snapshot) { s.Cluster.Name = "" }, kind: reconcile.ErrInvalidInput, fields: []string{"metadata.name"}},
		{name: "cluster name with underscore", edit: func(s *reconcile.Snapshot) { s.Cluster.Name = "my_cluster" }, kind: reconcile.ErrInvalidInput, fields: []string{"metadata.name"}},
		{name: "empty namespace", edit: func(s *reconcile.Snapshot) { s.Cluster.Namespace = "" }, kind: reconcile.ErrInvalidInput, fields: []string{"metadata.namespace"}},
		{name: "upper-case namespace", edit: func(s *reconcile.Snapshot) { s.Cluster.Namespace = "NS" }, kind: reconcile.ErrInvalidInput, fields: []string{"metadata.namespace"}},
		{name: "head without containers", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.HeadGroup.Template.Spec.Containers = nil }, kind: reconcile.ErrInvalidInput, fields: []string{"spec.headGroupSpec.template.spec.containers"}},
		{name: "empty group name", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[0].GroupName = "" }, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".groupName"}},
		{name: "duplicate group name", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[1].GroupName = "a" }, kind: reconcile.ErrInvalidInput, fields: []string{"spec.workerGroupSpecs[1].groupName"}},
		{name: "a name repeated among 70 groups", edit: func(s *reconcile.Snapshot) {
			g := s.Cluster.Spec.WorkerGroups[0]
			s.Cluster.Spec.WorkerGroups = nil
			for i := range 70 {
				g.GroupName = fmt.Sprintf("g%d", i%68)
				s.Cluster.Spec.WorkerGroups = append(s.Cluster.Spec.WorkerGroups, g)
			}
		}, kind: reconcile.ErrInvalidInput, fields: []string{"spec.workerGroupSpecs[68].groupName", "spec.workerGroupSpecs[69].groupName"}},
		{name: "worker without containers", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[1].Template.Spec.Containers = nil }, kind: reconcile.ErrInvalidInput, fields: []string{"spec.workerGroupSpecs[1].template.spec.containers"}},
		{name: "group name giving invalid pod names", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[0].GroupName = "A.-b" }, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".groupName"}},
		{name: "multi-host group name too long for a replica label", edit: func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].GroupName = "g123456789012345678901234567890123456789012345678901234567890"
			s.Cluster.Spec.WorkerGroups[0].NumOfHosts = 2
		}, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".groupName"}},
		{name: "numOfHosts MaxInt32", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[0].NumOfHosts = math.MaxInt32 }, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".numOfHosts"}},
		{name: "numOfHosts -1", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[0].NumOfHosts = -1 }, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".numOfHosts"}},
		{name: "numOfHosts 0 means 1", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[0].NumOfHosts = 0 }},
		{name: "bad group label value", edit: func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].Labels = map[string]string{"k": "bad value"}
		}, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".labels[k]"}},
		{name: "template label value a/b", edit: func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].Template.Labels = map[string]string{"k": "a/b"}
		}, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".template.metadata.labels[k]"}},
		{name: "template label value of 10,000 characters", edit: func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].Template.Labels = map[string]string{"k": long}
		}, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".template.metadata.labels[k]"}},
		{name: "template label with a bad key", edit: func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].Template.Labels = map[string]string{"-k": "v"}
		}, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".template.metadata.labels"}},
		{name: "head template label", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.HeadGroup.Template.Labels = map[string]string{"k": "a/b"} }, kind: reconcile.ErrInvalidInput, fields: []string{"spec.headGroupSpec.template.metadata.labels[k]"}},
		{name: "negative replicas", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[0].Replicas = i32(-1) }, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".replicas"}},
		{name: "MinInt32 replicas", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[0].Replicas = i32(math.MinInt32) }, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".replicas"}},
		{name: "negative min and max", edit: func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].MinReplicas = i32(-1)
			s.Cluster.Spec.WorkerGroups[0].MaxReplicas = i32(-2)
		}, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".minReplicas", g0 + ".maxReplicas"}},
		{name: "MaxInt32 replicas × 2 hosts", edit: func(s *reconcile.Snapshot) {
			g := &s.Cluster.Spec.WorkerGroups[0]
			g.Replicas, g.MaxReplicas, g.NumOfHosts = i32(math.MaxInt32), i32(math.MaxInt32), 2
		}, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".replicas"}},
		{name: "min replicas × hosts past MaxInt32", edit: func(s *reconcile.Snapshot) {
			g := &s.Cluster.Spec.WorkerGroups[0]
			g.Replicas, g.MinReplicas, g.MaxReplicas, g.NumOfHosts = nil, i32(math.MaxInt32/2), i32(math.MaxInt32), 3
		}, kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".minReplicas"}},
		{name: "MaxInt32 replicas × 1 host is legal", edit: func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].Replicas, s.Cluster.Spec.WorkerGroups[0].MaxReplicas = i32(math.MaxInt32), i32(math.MaxInt32)
		}},
		// KubeRay's helper lets min win over max, but its controller refuses
		// such a spec before it reconciles pods.
		{name: "min > max is refused", edit: func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[0].MinReplicas = i32(20) },
			kind: reconcile.ErrInvalidInput, fields: []string{g0 + ".minReplicas"}},
		{name: "unknown upgrade strategy", edit: func(s *reconcile.Snapshot) {
			s.Cluster.Spec.UpgradeStrategy = &reconcile.UpgradeStrategy{Type: sptr("Rolling")}
		}, kind: reconcile.ErrInvalidInput, fields: []string{"spec.upgradeStrategy.type"}},
		{name: "zero now", edit: func(s *reconcile.Snapshot) { s.Now = time.Time{} }, kind: reconcile.ErrInvalidInput, fields: []string{"now"}},
		{name: "three identical pods", edit: func(s *reconcile.Snapshot) {
			s.Pods = []corev1.Pod{worker("w", "a"), worker("w", "a"), worker("w", "a")}
		}, kind: reconcile.ErrInvalidInput, fields: []string{"pods[1].metadata.name", "pods[1].metadata.uid", "pods[2].metadata.name", "pods[2].metadata.uid"}},
		{name: "two pods sharing a UID", edit: func(s *reconcile.Snapshot) {
			b := worker("w2", "a")
			b.UID = "uid-w1"
			s.Pods = []corev1.Pod{worker("w1", "a"), b}
		}, kind: reconcile.ErrInvalidInput, fields: []string{"pods[1].metadata.uid"}},
		{name: "one name in two namespaces is legal", edit: func(s *reconcile.Snapshot) {
			b := worker("w", "a")
			b.Namespace, b.UID = "other", "uid-other"
			s.Pods = []corev1.Pod{worker("w", "a"), b}
		}},
		{name: "formation record without names, negative index and attempts", edit: func(s *reconcile.Snapshot) {
			s.Forming = []reconcile.FormingGroup{{ReplicaIndex: -1, Attempts: math.MinInt}}
		}, kind: reconcile.ErrInvalidInput, fields: []string{"forming[0].group", "forming[0].replicaName", "forming[0].replicaIndex", "forming[0].attempts"}},
		{name: "formation record of MaxInt index and attempts is legal", edit: func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].NumOfHosts = 2
			s.Pods = append(withHead(), mhWorker("m0", "a", "a-xxxxx", math.MaxInt, 0))
			s.Forming = []reconcile.FormingGroup{{Group: "a", ReplicaName: "a-xxxxx", ReplicaIndex: math.MaxInt, Attempts: math.MaxInt,
				Missing: []int{-1, math.MaxInt}, FirstFailure: t0, LastAttempt: t0.Add(-time.Hour)}}
		}},
		{name: "every problem at once", edit: func(s *reconcile.Snapshot) {
			s.Cluster.Name, s.Now = "", time.Time{}
			s.Cluster.Spec.WorkerGroups[1].Replicas = i32(-5)
		}, kind: reconcile.ErrInvalidInput, fields: []string{"metadata.name", "spec.workerGroupSpecs[1].replicas", "now"}},
		// The zero Options are the documented defaults (DefaultOperatorVersion).
		{name: "options: no operator version is the default", opts: func(o *reconcile.Options) { o.OperatorVersion = "" }},
		{name: "options: unknown name mode", opts: func(o *reconcile.Options) { o.NameMode = "Random" }, kind: reconcile.ErrInvalidOptions, fields: []string{"nameMode"}},
		{name: "options: unknown gate value", opts: func(o *reconcile.Options) { o.Gates.StatusConditions = "Maybe" }, kind: reconcile.ErrInvalidOptions, fields: []string{"gates.statusConditions"}},
		{name: "options: negative burst", opts: func(o *reconcile.Options) { o.BurstReplicas = -1 }, kind: reconcile.ErrInvalidOptions, fields: []string{"burstReplicas"}},
		{name: "options: negative formation timeout", opts: func(o *reconcile.Options) { o.GroupFormationTimeout = -1 }, kind: reconcile.ErrInvalidOptions, fields: []string{"groupFormationTimeout"}},
		{name: "options: bad default label", opts: func(o *reconcile.Options) { o.PodDefaults.Labels = map[string]string{"k": "a b"} }, kind: reconcile.ErrInvalidOptions, fields: []string{"podDefaults.labels[k]"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			s := snap(cluster(group("a", 1), group("b", 1)))
			o := opts()
			if r.edit != nil {
				r.edit(&s)
			}
			if r.opts != nil {
				r.opts(&o)
			}
			p, err := reconcile.Decide(s, o)
			if r.kind == nil {
				if err != nil {
					t.Fatalf("legal input refused: %v", err)
				}
				if len(p.Groups) != len(s.Cluster.Spec.WorkerGroups) {
					t.Fatalf("plan has %d groups, want %d", len(p.Groups), len(s.Cluster.Spec.WorkerGroups))
				}
				return
			}
			if !errors.Is(err, r.kind) {
				t.Fatalf("err = %v, want %v", err, r.kind)
			}
			if diff := cmp.Diff(r.fields, fieldsOf(t, err)); diff != "" {
				t.Errorf("fields (-want +got):\n%s\nerr: %v", diff, err)
			}
			if r.kind == reconcile.ErrInvalidInput {
				// Decide refuses exactly what Validate refuses.
				if verr := s.Validate(); verr == nil || verr.Error() != err.Error() {
					t.Errorf("Snapshot.Validate = %v, Decide = %v", verr, err)
				}
			}
		})
	}
}

// TestApplyBadInput covers Apply's refusals: a nil executor, a plan whose
// cluster has no UID applied with a tracker, a record the tracker refuses.
func TestApplyBadInput(t *testing.T) {
	w := fake.NewWorld(1, t0)
	store := fake.NewPodStore(w, fake.PodStoreOptions{})
	exec := fake.NewReconcileExecutor(store)
	p := mustDecide(t, snap(cluster(group("a", 1))), opts())
	if _, err := reconcile.Apply(context.Background(), p, nil); !errors.Is(err, reconcile.ErrNilExecutor) || !errors.Is(err, reconcile.ErrInvalidInput) {
		t.Errorf("nil executor: err = %v", err)
	}
	noUID := p
	noUID.ClusterUID = ""
	var tr expectations.Tracker // the zero Tracker is usable
	rep, err := reconcile.Applier{Expectations: &tr}.Apply(context.Background(), noUID, exec)
	if !errors.Is(err, reconcile.ErrInvalidPlan) || !slices.Equal(fieldsOf(t, err), []string{"clusterUID"}) || len(rep.Results) != 0 {
		t.Errorf("empty UID with a tracker: err = %v, %d results", err, len(rep.Results))
	}
	if n := len(store.Pods("ns")); n != 0 {
		t.Errorf("%d pods created", n)
	}
	// A zero Clock reading makes every record fail: the actions fail before
	// their calls, and Apply says so.
	zero := p
	zero.Now = time.Time{}
	rep, err = reconcile.Applier{Expectations: &tr, KeepGoing: true}.Apply(context.Background(), zero, exec)
	if !errors.Is(err, reconcile.ErrExpectation) || !errors.Is(err, expectations.ErrInvalidInput) {
		t.Fatalf("records at the zero time: err = %v", err)
	}
	for _, r := range rep.Results {
		if r.Status != reconcile.CallFailed || len(r.Created) != 0 {
			t.Errorf("action %d: %s created %v, want failed before the call", r.Index, r.Status, r.Created)
		}
	}
	if tr.Len() != 0 || len(store.Pods("ns")) != 0 {
		t.Errorf("tracker holds %d records, store %d pods", tr.Len(), len(store.Pods("ns")))
	}
	// Without expectations, an empty UID is fine.
	if _, err := reconcile.Apply(context.Background(), noUID, exec); err != nil {
		t.Errorf("no tracker: %v", err)
	}
}

// extremeInt32 draws one of the int32 values at the edges.
func extremeInt32(t *rapid.T, label string) int32 {
	return rapid.SampledFrom([]int32{0, -1, 1, 2, 3, math.MaxInt32, math.MinInt32, math.MaxInt32 / 2, reconcile.MaxNumOfHosts, reconcile.MaxNumOfHosts + 1}).Draw(t, label)
}

// TestPropHostileCounts draws extreme replicas, bounds and numOfHosts: Decide
// either refuses them naming one of the group's count fields, or plans
// exactly replicas × hosts pods without wrapping. (Dropping the product check
// in validateReplicas makes it fail: the desired count saturates at
// MaxInt32, which is not the product.)
func TestPropHostileCounts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := group("a", 0)
		opt := func(label string) *int32 {
			if rapid.Bool().Draw(t, label+"Nil") {
				return nil
			}
			v := extremeInt32(t, label)
			return &v
		}
		g.Replicas, g.MinReplicas, g.MaxReplicas = opt("replicas"), opt("min"), opt("max")
		// MaxNumOfHosts itself is legal but builds 10,000 pods per replica:
		// too slow for every draw, so the bound is probed just above it.
		g.NumOfHosts = rapid.SampledFrom([]int32{0, -1, 1, 2, 3, math.MaxInt32, math.MinInt32, reconcile.MaxNumOfHosts + 1}).Draw(t, "hosts")
		s := snap(cluster(g), withHead()...)
		p, err := reconcile.Decide(s, opts())
		if err != nil {
			if !errors.Is(err, reconcile.ErrInvalidInput) {
				t.Fatalf("err = %v, want ErrInvalidInput", err)
			}
			for _, f := range fieldsOf(t, err) {
				if !slices.Contains([]string{"replicas", "minReplicas", "maxReplicas", "numOfHosts"}, strings.TrimPrefix(f, "spec.workerGroupSpecs[0].")) {
					t.Fatalf("err names %s: %v", f, err)
				}
			}
			return
		}
		r := int64(0)
		lo, hi := int64(0), int64(math.MaxInt32)
		if g.MinReplicas != nil {
			lo = int64(*g.MinReplicas)
		}
		if g.MaxReplicas != nil {
			hi = int64(*g.MaxReplicas)
		}
		switch {
		case g.Replicas == nil || int64(*g.Replicas) < lo:
			r = lo
		case int64(*g.Replicas) > hi:
			r = hi
		default:
			r = int64(*g.Replicas)
		}
		want := r * int64(max(1, g.NumOfHosts))
		if int64(p.Groups[0].Desired) != want {
			t.Fatalf("desired %d pods, want %d (replicas %d × hosts %d)", p.Groups[0].Desired, want, r, max(1, g.NumOfHosts))
		}
		if p.Groups[0].Place > max(reconcile.DefaultBurstReplicas, int(g.NumOfHosts)) {
			t.Fatalf("placed %d pods in one pass", p.Groups[0].Place)
		}
	})
}

// TestPropHostileLabels draws template and group labels from hostile values:
// Decide refuses each bad one naming its path, and every pod it plans carries
// valid labels. (Skipping the template labels in validateGroup makes it fail:
// a value a/b reaches a pod.)
func TestPropHostileLabels(t *testing.T) {
	values := []string{"", "ok", "a/b", strings.Repeat("x", 63), strings.Repeat("x", 64), strings.Repeat("a", 10000), "-x", "x-", "a b"}
	keys := []string{"k", "example.com/k", "-k", "a/b/c", strings.Repeat("k", 64), ""}
	rapid.Check(t, func(t *rapid.T) {
		g := group("a", 1)
		g.Template.Labels = map[string]string{rapid.SampledFrom(keys).Draw(t, "tkey"): rapid.SampledFrom(values).Draw(t, "tval")}
		g.Labels = map[string]string{rapid.SampledFrom(keys).Draw(t, "gkey"): rapid.SampledFrom(values).Draw(t, "gval")}
		p, err := reconcile.Decide(snap(cluster(g), withHead()...), opts())
		if err != nil {
			if !errors.Is(err, reconcile.ErrInvalidInput) {
				t.Fatalf("err = %v", err)
			}
			for _, f := range fieldsOf(t, err) {
				if !strings.HasPrefix(f, "spec.workerGroupSpecs[0].labels") && !strings.HasPrefix(f, "spec.workerGroupSpecs[0].template.metadata.labels") {
					t.Fatalf("err names %s: %v", f, err)
				}
			}
			return
		}
		for _, a := range p.Actions {
			if a.Create == nil {
				continue
			}
			for k, v := range a.Create.Pod.Labels {
				if bad := validLabel(k, v); bad != "" {
					t.Fatalf("pod %s carries label %q=%q: %s", a.Create.Pod.GenerateName, k, v, bad)
				}
			}
		}
	})
}

// TestPropDuplicatePods repeats pods in a snapshot: Decide refuses it naming
// the repeated entries. (Removing validatePods from the snapshot's
// validation makes it fail: the copies are planned as distinct pods, and
// 1,000 copies of one pod would yield hundreds of deletes of it.)
func TestPropDuplicatePods(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.SampledFrom([]int{1, 2, 3, 1000}).Draw(t, "copies")
		pods := withHead()
		for range n {
			pods = append(pods, worker("w", "a"))
		}
		_, err := reconcile.Decide(snap(cluster(group("a", 0)), pods...), opts())
		if n == 1 {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		if !errors.Is(err, reconcile.ErrInvalidInput) {
			t.Fatalf("%d copies: err = %v", n, err)
		}
		if f := fieldsOf(t, err); len(f) != 2*(n-1) || f[0] != "pods[2].metadata.name" {
			t.Fatalf("%d copies: fields %v", n, f[:min(4, len(f))])
		}
	})
}

// TestPropDuplicatePodsModel draws pods from small pools of namespaces, names
// and UIDs, so that names repeat across namespaces and UIDs across names, and
// checks that Snapshot.Validate names exactly the repeats a map of the earlier
// pods finds: a pod is a repeat by name when an earlier one has its namespace
// and name, by UID when an earlier one has its (non-empty) UID. (Leaving the
// namespace out of the name's hash and comparison makes it fail, and so does
// taking a match of the slots' hash bits, with those bits zeroed, for a
// repeat without comparing the strings.)
func TestPropDuplicatePodsModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 40).Draw(t, "pods")
		s := snap(cluster(group("a", 0)))
		var want []string
		names, uids := map[[2]string]bool{}, map[string]bool{}
		for i := range n {
			p := worker(rapid.SampledFrom([]string{"w", "x", "a-much-longer-pod-name-sharing-its-tail-0"}).Draw(t, "name"), "a")
			p.Namespace = rapid.SampledFrom([]string{"ns", "other", ""}).Draw(t, "namespace")
			p.UID = types.UID(rapid.SampledFrom([]string{"", "u1", "u2"}).Draw(t, "uid"))
			s.Pods = append(s.Pods, p)
			if k := [2]string{p.Namespace, p.Name}; names[k] {
				want = append(want, fmt.Sprintf("pods[%d].metadata.name", i))
			} else {
				names[k] = true
			}
			if p.UID == "" {
				continue
			}
			if uids[string(p.UID)] {
				want = append(want, fmt.Sprintf("pods[%d].metadata.uid", i))
			} else {
				uids[string(p.UID)] = true
			}
		}
		err := s.Validate()
		if len(want) == 0 {
			if err != nil {
				t.Fatalf("no repeats, but: %v", err)
			}
			return
		}
		if diff := cmp.Diff(want, fieldsOf(t, err)); diff != "" {
			t.Fatalf("repeats named (-want +got):\n%s", diff)
		}
	})
}

// validLabel returns why k=v is not a valid label, or "".
func validLabel(k, v string) string {
	if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	return strings.Join(validation.IsValidLabelValue(v), "; ")
}

// TestKubeRayV170CreatesEveryMissingPod: the KubeRay preset has no burst cap,
// as KubeRay creates every missing pod in one pass; a caller's cap still holds.
func TestKubeRayV170CreatesEveryMissingPod(t *testing.T) {
	g := group("big", 2000)
	g.MaxReplicas = i32(math.MaxInt32)
	tpu := mhGroup("tpu", 300, 4)
	tpu.MaxReplicas = i32(math.MaxInt32)
	s := snap(cluster(g, tpu), withHead()...)
	p := mustDecide(t, s, reconcile.KubeRayV170())
	if p.Groups[0].Place != 2000 || p.Groups[1].Place != 1200 || p.Verdict.RequeueAfter != 0 {
		t.Fatalf("placed %d and %d pods, requeue after %v; want 2000 and 1200 in one pass", p.Groups[0].Place, p.Groups[1].Place, p.Verdict.RequeueAfter)
	}
	o := reconcile.KubeRayV170()
	o.BurstReplicas = 100
	p = mustDecide(t, s, o)
	if p.Groups[0].Place != 100 || p.Groups[1].Place != 100 {
		t.Fatalf("with BurstReplicas 100: placed %d and %d pods", p.Groups[0].Place, p.Groups[1].Place)
	}
}

// TestVictimsWithZeroTimes: a pod whose ready-transition or creation time is
// zero ranks as the newest, as Kubernetes' ActivePods ranks it, so it is the
// scale-down victim.
func TestVictimsWithZeroTimes(t *testing.T) {
	zeroCreated := func(p *corev1.Pod) { p.CreationTimestamp = metav1.Time{} }
	zeroReady := func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.Time{} }
	for _, tc := range []struct {
		name string
		opt  podOpt
	}{{"zero creation time", zeroCreated}, {"zero ready time", zeroReady}} {
		t.Run(tc.name, func(t *testing.T) {
			// "a" is older than "b" by name order; the zero time must win over both.
			s := snap(cluster(group("g", 2)), withHead(worker("a", "g", created(-time.Minute)), worker("z", "g", tc.opt), worker("b", "g", created(-2*time.Minute)))...)
			p := mustDecide(t, s, opts())
			if got := summarize(p); len(got) != 1 || !strings.Contains(got[0], " z ") {
				t.Fatalf("victims %v, want z", got)
			}
		})
	}
}
