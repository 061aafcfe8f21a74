package fake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
)

// phases returns "name=phase[/ready]" of the store's pods in ns.
func phases(s *fake.PodStore, ns string) []string {
	var out []string
	for _, p := range s.Pods(ns) {
		e := p.Name + "=" + string(p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				e += "/ready"
			}
		}
		if p.DeletionTimestamp != nil {
			e += "~"
		}
		out = append(out, e)
	}
	return out
}

func TestKubelet(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(1, podsT0)
	s := fake.NewPodStore(w, fake.PodStoreOptions{GraceMin: time.Hour, GraceMax: time.Hour})
	mk := func(ns, name string) {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
		if _, err := s.CreatePod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("ns", "a")
	mk("ns", "gone")
	mk("other", "x")
	w.Clock.Advance(2 * time.Second)
	mk("ns", "b")
	if err := s.DeletePod(ctx, "ns", "gone", fake.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	k := &fake.Kubelet{Store: s, Namespace: "ns", StartDelay: 5 * time.Second}

	if n, err := k.Step(); n != 0 || err != nil {
		t.Fatalf("Step before the delay: %d, %v", n, err)
	}
	next, ok := k.NextStart()
	if !ok || !next.Equal(podsT0.Add(5*time.Second)) {
		t.Fatalf("NextStart = %v, %v, want %v", next, ok, podsT0.Add(5*time.Second))
	}
	w.Clock.Advance(next.Sub(w.Clock.Now()))
	if n, err := k.Step(); n != 1 || err != nil {
		t.Fatalf("Step at a's start: %d, %v", n, err)
	}
	if d := cmp.Diff([]string{"a=Running/ready", "b=Pending", "gone=Pending~"}, phases(s, "ns")); d != "" {
		t.Fatalf("after the first start (-want +got):\n%s", d)
	}
	w.Clock.Advance(2 * time.Second)
	if n, err := k.Step(); n != 1 || err != nil {
		t.Fatalf("Step at b's start: %d, %v", n, err)
	}
	if _, ok := k.NextStart(); ok {
		t.Fatal("NextStart reports a pod after every one started")
	}
	if d := cmp.Diff([]string{"x=Pending"}, phases(s, "other")); d != "" {
		t.Fatalf("another namespace's pod was started (-want +got):\n%s", d)
	}
	if p, _ := s.GetPod(ctx, "ns", "a"); p.Spec.NodeName != "node-1" {
		t.Fatalf("a runs on %q, want node-1", p.Spec.NodeName)
	}

	if err := k.Finish("ns", "a", corev1.PodSucceeded); err != nil {
		t.Fatal(err)
	}
	if err := k.Finish("ns", "b", corev1.PodFailed); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a=Succeeded", "b=Failed", "gone=Pending~"}, phases(s, "ns")); d != "" {
		t.Fatalf("after Finish (-want +got):\n%s", d)
	}
	// The changes reach the informer like any other.
	s.Informer().Sync()
	if p, ok := s.Informer().Get("ns", "b"); !ok || p.Status.Phase != corev1.PodFailed {
		t.Fatalf("the informer shows b as %v (found %v), want Failed", p.Status.Phase, ok)
	}

	if err := k.Finish("ns", "a", corev1.PodRunning); err == nil {
		t.Fatal("Finish with Running: no error")
	}
	if err := k.Finish("ns", "missing", corev1.PodFailed); !apierrors.IsNotFound(err) {
		t.Fatalf("Finish of a missing pod: %v, want NotFound", err)
	}
	var zero fake.Kubelet
	if _, err := zero.Step(); err == nil {
		t.Fatal("a Kubelet without a Store stepped without an error")
	}
	if err := zero.Finish("ns", "a", corev1.PodFailed); err == nil {
		t.Fatal("a Kubelet without a Store finished a pod without an error")
	}
}

func TestPodObserver(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(1, podsT0)
	s := fake.NewPodStore(w, fake.PodStoreOptions{Lag: 10 * time.Second})
	tr, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := expectations.Owner{Namespace: "ns", Name: "demo", UID: "u1"}
	if _, err := tr.Record(w.Clock.Now(), expectations.Record{Owner: owner, Group: "cpu", Action: expectations.Create, Pod: "w1"}); err != nil {
		t.Fatal(err)
	}
	var enqueued []expectations.Owner
	obs := &fake.PodObserver{Tracker: tr, OwnerKind: schema.GroupKind{Group: "ray.io", Kind: "RayCluster"},
		Enqueue: func(o expectations.Owner) { enqueued = append(enqueued, o) }}
	s.Informer().AddHandler(obs.Handle)

	yes := true
	ctrlBy := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u1", Controller: &yes}}
	}
	for _, p := range []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w1", OwnerReferences: ctrlBy("ray.io/v1", "RayCluster", "demo")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j1", OwnerReferences: ctrlBy("batch/v1", "Job", "demo")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bare"}},
	} {
		if _, err := s.CreatePod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// The informer lags: nothing is observed until it delivers.
	if obs.Observed() != 0 || len(enqueued) != 0 {
		t.Fatalf("observed %d, enqueued %v before any delivery", obs.Observed(), enqueued)
	}
	s.Informer().Sync()
	if obs.Observed() != 1 {
		t.Fatalf("observed %d items, want 1 (w1's create)", obs.Observed())
	}
	if d := cmp.Diff([]expectations.Owner{owner}, enqueued); d != "" {
		t.Fatalf("enqueued (-want +got):\n%s", d)
	}
	// The tracker saw w1 through the event, with no pod list.
	res, err := tr.Check(w.Clock.Now(), owner, "cpu", nil)
	if err != nil || !res.Satisfied {
		t.Fatalf("expectations after the event: %+v, %v; want satisfied", res, err)
	}

	var errs []error
	noTracker := &fake.PodObserver{OnError: func(err error) { errs = append(errs, err) }, Enqueue: func(expectations.Owner) { enqueued = append(enqueued, owner) }}
	noTracker.Handle(fake.PodEvent{Type: fake.EventAdded, Pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w2", OwnerReferences: ctrlBy("ray.io/v1", "RayCluster", "demo")}}})
	if len(errs) != 1 || !errors.Is(errs[0], fake.ErrObserverNoTracker) || len(enqueued) != 2 {
		t.Fatalf("an observer without a tracker: errors %v, enqueued %v", errs, enqueued)
	}
}
