package fake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/reconcile"
)

// TestPodStorePatchPodAnnotations checks the store's annotation patch: keys
// are merged, the UID and resourceVersion preconditions hold, faults go
// through World.Do like every write, and the informer sees the change.
func TestPodStorePatchPodAnnotations(t *testing.T) {
	errInjected := errors.New("injected")
	type call struct {
		name string
		uid  types.UID // "=" means the pod's own
		rv   string    // "=" means the pod's current, "old" its first
	}
	tests := []struct {
		name      string
		setup     func(w *fake.World, s *fake.PodStore)
		ctx       func() context.Context
		call      call
		wantErr   func(error) bool
		wantAnn   map[string]string // the stored pod's annotations after the call
		wantCalls []fake.Outcome    // the pod.patch calls in the log
	}{
		{name: "both preconditions hold", call: call{"p", "=", "="},
			wantAnn: map[string]string{"keep": "1", "k": "v"}, wantCalls: []fake.Outcome{fake.OutcomeOK}},
		{name: "no preconditions", call: call{"p", "", ""},
			wantAnn: map[string]string{"keep": "1", "k": "v"}, wantCalls: []fake.Outcome{fake.OutcomeOK}},
		{name: "stale resourceVersion", call: call{"p", "=", "old"},
			setup: func(_ *fake.World, s *fake.PodStore) {
				if err := s.Mutate("ns", "p", func(p *corev1.Pod) { p.Labels["bumped"] = "yes" }); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: apierrors.IsConflict, wantAnn: map[string]string{"keep": "1"}, wantCalls: []fake.Outcome{fake.OutcomeError}},
		{name: "another pod's UID", call: call{"p", "uid-of-a-predecessor", ""},
			wantErr: apierrors.IsConflict, wantAnn: map[string]string{"keep": "1"}, wantCalls: []fake.Outcome{fake.OutcomeError}},
		{name: "missing pod", call: call{"gone", "", ""},
			wantErr: apierrors.IsNotFound, wantAnn: map[string]string{"keep": "1"}, wantCalls: []fake.Outcome{fake.OutcomeError}},
		{name: "terminating pod stays writable", call: call{"p", "=", "="},
			setup: func(_ *fake.World, s *fake.PodStore) {
				if err := s.Mutate("ns", "p", func(p *corev1.Pod) { p.Finalizers = []string{"hold"} }); err != nil {
					t.Fatal(err)
				}
				if err := s.DeletePod(context.Background(), "ns", "p", fake.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			wantAnn: map[string]string{"keep": "1", "k": "v"}, wantCalls: []fake.Outcome{fake.OutcomeOK}},
		{name: "injected failure changes nothing", call: call{"p", "=", "="},
			setup:   func(w *fake.World, _ *fake.PodStore) { w.Faults.FailNext(fake.KindPodPatch, 1, errInjected) },
			wantErr: func(err error) bool { return errors.Is(err, errInjected) },
			wantAnn: map[string]string{"keep": "1"}, wantCalls: []fake.Outcome{fake.OutcomeInjectedFail}},
		{name: "lost response still applies", call: call{"p", "=", "="},
			setup:   func(w *fake.World, _ *fake.PodStore) { w.Faults.LoseResponseNext(fake.KindPodPatch, 1, errInjected) },
			wantErr: func(err error) bool { return errors.Is(err, errInjected) },
			wantAnn: map[string]string{"keep": "1", "k": "v"}, wantCalls: []fake.Outcome{fake.OutcomeLostResponse}},
		{name: "cancelled context makes no call", call: call{"p", "=", "="},
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			wantErr: func(err error) bool { return errors.Is(err, context.Canceled) },
			wantAnn: map[string]string{"keep": "1"}, wantCalls: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := fake.NewWorld(1, podsT0)
			s := fake.NewPodStore(w, fake.PodStoreOptions{GraceMin: time.Minute, GraceMax: time.Minute})
			p := testPod("p", "")
			p.Annotations = map[string]string{"keep": "1"}
			created, err := s.CreatePod(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				tc.setup(w, s)
			}
			cur := storedPod(t, s, "p")
			uid, rv := tc.call.uid, tc.call.rv
			if uid == "=" {
				uid = cur.UID
			}
			switch rv {
			case "=":
				rv = cur.ResourceVersion
			case "old":
				rv = created.ResourceVersion
			}
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			w.Calls.Reset()
			err = s.PatchPodAnnotations(ctx, "ns", tc.call.name, uid, rv, map[string]string{"k": "v"})
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("PatchPodAnnotations: %v", err)
			case tc.wantErr != nil && !tc.wantErr(err):
				t.Fatalf("PatchPodAnnotations error = %v, not the expected kind", err)
			}
			after := storedPod(t, s, "p")
			if diff := cmp.Diff(tc.wantAnn, after.Annotations); diff != "" {
				t.Errorf("stored annotations (-want +got):\n%s", diff)
			}
			changed := tc.wantAnn["k"] == "v"
			if bumped := after.ResourceVersion != cur.ResourceVersion; bumped != changed {
				t.Errorf("resourceVersion %s -> %s: changed %v, want %v", cur.ResourceVersion, after.ResourceVersion, bumped, changed)
			}
			if inf, ok := s.Informer().Get("ns", "p"); !ok || inf.Annotations["k"] != tc.wantAnn["k"] {
				t.Errorf("informer shows annotations %v, want k=%q", inf.Annotations, tc.wantAnn["k"])
			}
			var outcomes []fake.Outcome
			for _, c := range w.Calls.Calls() {
				if c.Kind == fake.KindPodPatch {
					outcomes = append(outcomes, c.Outcome)
				}
			}
			if diff := cmp.Diff(tc.wantCalls, outcomes); diff != "" {
				t.Errorf("pod.patch calls (-want +got):\n%s", diff)
			}
		})
	}
}

func storedPod(t *testing.T, s *fake.PodStore, name string) corev1.Pod {
	t.Helper()
	for _, p := range s.Pods("ns") {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("pod %s is not stored", name)
	return corev1.Pod{}
}

// TestRayClusterLoopAdoptsHashOnOperatorUpgrade drives the whole loop over
// an operator upgrade under the Recreate strategy (the upgrade step of the head pod): the plan
// patches the head's recreate hash and version through the fake executor
// instead of recreating the cluster, and the next pass plans nothing.
func TestRayClusterLoopAdoptsHashOnOperatorUpgrade(t *testing.T) {
	ctx := context.Background()
	recreate := reconcile.UpgradeRecreate
	one := int32(1)
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray", Image: "rayproject/ray:2.9"}}}}
	c := reconcile.Cluster{Name: "rc", Namespace: "ns", UID: "uid-rc", Spec: reconcile.ClusterSpec{
		UpgradeStrategy: &reconcile.UpgradeStrategy{Type: &recreate},
		HeadGroup:       reconcile.HeadGroup{Template: tmpl},
		WorkerGroups: []reconcile.WorkerGroup{{GroupName: "small", Replicas: &one, MinReplicas: &one, MaxReplicas: &one,
			NumOfHosts: 1, Template: tmpl}},
	}}
	w := fake.NewWorld(7, podsT0)
	l, err := fake.NewRayClusterLoop(w, fake.PodStoreOptions{}, expectations.Options{}, c, reconcile.Options{OperatorVersion: "v1.6.0"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, _, err := l.Step(ctx); err != nil {
			t.Fatal(err)
		}
		w.Clock.Advance(time.Second)
	}
	head := func() corev1.Pod {
		for _, p := range l.Store.Pods("ns") {
			if p.Labels[reconcile.LabelNodeType] == reconcile.NodeTypeHead {
				return p
			}
		}
		t.Fatal("no head pod")
		return corev1.Pod{}
	}
	before := head()
	if v := before.Annotations[reconcile.AnnotationKubeRayVersion]; v != "v1.6.0" {
		t.Fatalf("head created with version %q, want v1.6.0", v)
	}

	l.Options.OperatorVersion = "v1.7.0"
	w.Calls.Reset()
	p, rep, err := l.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions) != 1 || p.Actions[0].Kind != reconcile.ActionPatchPodAnnotations || p.Actions[0].Reason.Code != reconcile.ReasonRecreateVersionSkip {
		t.Fatalf("after the upgrade the plan is\n%s\nwant one RecreateVersionSkip patch", p)
	}
	if rep.Results[0].Status != reconcile.CallDone {
		t.Fatalf("patch result %+v", rep.Results[0])
	}
	after := head()
	if after.UID != before.UID {
		t.Fatalf("head was recreated (uid %s -> %s)", before.UID, after.UID)
	}
	want := map[string]string{reconcile.AnnotationKubeRayVersion: "v1.7.0", reconcile.AnnotationRecreateHash: p.ClusterHash}
	for k, v := range want {
		if after.Annotations[k] != v {
			t.Errorf("head annotation %s = %q, want %q", k, after.Annotations[k], v)
		}
	}
	if n := w.Calls.Count(fake.KindPodPatch, fake.OutcomeOK); n != 1 {
		t.Errorf("%d successful pod.patch calls, want 1", n)
	}

	p, _, err = l.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions) != 0 {
		t.Fatalf("the pass after the patch plans\n%s\nwant nothing", p)
	}
}

// TestZeroReconcileTypes: a zero executor and a zero loop answer with an
// error, never a panic.
func TestZeroReconcileTypes(t *testing.T) {
	var e fake.ReconcileExecutor
	if _, err := e.CreatePod(context.Background(), &corev1.Pod{}); err == nil {
		t.Error("CreatePod on a zero executor: no error")
	}
	if err := e.DeletePod(context.Background(), "ns", "p", ""); err == nil {
		t.Error("DeletePod on a zero executor: no error")
	}
	var l fake.RayClusterLoop
	l.Kubelet()
	if _, _, err := l.Step(context.Background()); err == nil {
		t.Error("Step on a zero loop: no error")
	}
}
