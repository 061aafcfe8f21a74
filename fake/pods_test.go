package fake_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/fake"
)

var (
	podsT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

func testPod(name, generateName string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, GenerateName: generateName,
		Labels: map[string]string{"app": "x"}}}
}

func podNames(ps []corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		n := p.Name
		if p.DeletionTimestamp != nil {
			n += "~"
		}
		out = append(out, n)
	}
	return out
}

func TestPodStoreConforms(t *testing.T) {
	ctx := context.Background()
	seed := uint64(0)
	vs := fake.CheckPodClient(ctx, func(context.Context) (fake.PodClient, string, error) {
		seed++
		return fake.NewPodStore(fake.NewWorld(seed, podsT0), fake.PodStoreOptions{GraceMin: time.Second, GraceMax: time.Minute}), "ns", nil
	})
	for _, v := range vs {
		t.Error(v)
	}
}

// sloppyClient breaks the contract in the ways real clients do: it swallows
// NotFound on delete and AlreadyExists on create (returning the existing pod),
// so a caller cannot tell what happened.
type sloppyClient struct{ *fake.PodStore }

func (c sloppyClient) CreatePod(ctx context.Context, p corev1.Pod) (corev1.Pod, error) {
	got, err := c.PodStore.CreatePod(ctx, p)
	if apierrors.IsAlreadyExists(err) {
		return c.GetPod(ctx, p.Namespace, p.Name)
	}
	return got, err
}

func (c sloppyClient) DeletePod(ctx context.Context, ns, name string, o fake.DeleteOptions) error {
	err := c.PodStore.DeletePod(ctx, ns, name, fake.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func TestConformanceFindsViolations(t *testing.T) {
	ctx := context.Background()
	vs := fake.CheckPodClient(ctx, func(context.Context) (fake.PodClient, string, error) {
		return sloppyClient{fake.NewPodStore(fake.NewWorld(1, podsT0), fake.PodStoreOptions{})}, "ns", nil
	})
	var checks []string
	for _, v := range vs {
		checks = append(checks, v.Check)
	}
	want := []string{
		"create of an existing name reports AlreadyExists and changes nothing",
		"delete of a missing pod reports NotFound",
		"delete with another pod's UID reports Conflict and keeps the pod",
		"delete with another pod's UID reports Conflict and keeps the pod",
	}
	if diff := cmp.Diff(want, checks); diff != "" {
		t.Fatalf("violations (-want +got):\n%s\n%v", diff, vs)
	}
	failing := fake.CheckPodClient(ctx, func(context.Context) (fake.PodClient, string, error) {
		return nil, "", errors.New("no cluster")
	})
	if len(failing) == 0 || !strings.Contains(failing[0].Detail, "no cluster") {
		t.Fatalf("constructor failure not reported: %v", failing)
	}
}

func TestGenerateNameIsDeterministicAndDistinct(t *testing.T) {
	ctx := context.Background()
	run := func(seed uint64) []string {
		s := fake.NewPodStore(fake.NewWorld(seed, podsT0), fake.PodStoreOptions{})
		var out []string
		for range 50 {
			p, err := s.CreatePod(ctx, testPod("", "rc-worker-"))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.Name)
		}
		return out
	}
	a := run(3)
	if diff := cmp.Diff(a, run(3)); diff != "" {
		t.Fatalf("same seed, different names:\n%s", diff)
	}
	if cmp.Equal(a, run(4)) {
		t.Fatal("different seeds gave the same names")
	}
	seen := map[string]bool{}
	for _, n := range a {
		suffix := strings.TrimPrefix(n, "rc-worker-")
		if len(suffix) != 5 || strings.Trim(suffix, "bcdfghjklmnpqrstvwxz2456789") != "" || seen[n] {
			t.Fatalf("bad or repeated generated name %q", n)
		}
		seen[n] = true
	}
	s := fake.NewPodStore(fake.NewWorld(3, podsT0), fake.PodStoreOptions{})
	long, err := s.CreatePod(ctx, testPod("", strings.Repeat("x", 70)))
	if err != nil || len(long.Name) != 63 {
		t.Fatalf("long prefix: %q, %v", long.Name, err)
	}
}

func TestPodStoreErrorsAndFaults(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(1, podsT0)
	s := fake.NewPodStore(w, fake.PodStoreOptions{})
	if _, err := s.CreatePod(ctx, corev1.Pod{}); !apierrors.IsBadRequest(err) {
		t.Errorf("create without namespace: %v", err)
	}
	if _, err := s.CreatePod(ctx, testPod("", "")); !apierrors.IsInvalid(err) {
		t.Errorf("create without name: %v", err)
	}
	w.Faults.FailNext(fake.KindPodCreate, 1, errors.New("down"))
	if _, err := s.CreatePod(ctx, testPod("a", "")); err == nil || len(s.Pods("ns")) != 0 {
		t.Fatalf("failed create: err %v, pods %v", err, podNames(s.Pods("ns")))
	}
	w.Faults.LoseResponseNext(fake.KindPodCreate, 1, errors.New("timeout"))
	got, err := s.CreatePod(ctx, testPod("", "g-"))
	if err == nil || got.Name != "" || len(s.Pods("ns")) != 1 {
		t.Fatalf("lost create: %q, %v, pods %v", got.Name, err, podNames(s.Pods("ns")))
	}
	w.Faults.LoseResponseNext(fake.KindPodDelete, 1, errors.New("timeout"))
	name := s.Pods("ns")[0].Name
	if err := s.DeletePod(ctx, "ns", name, fake.DeleteOptions{}); err == nil || len(s.Pods("ns")) != 0 {
		t.Fatalf("lost delete: %v, pods %v", err, podNames(s.Pods("ns")))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.CreatePod(cancelled, testPod("b", "")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled create: %v", err)
	}
	want := []string{
		"pod.create ns/ injected-fail", // placeholder replaced below
	}
	_ = want
	var kinds []string
	for _, c := range w.Calls.Calls() {
		kinds = append(kinds, fmt.Sprintf("%s %s %s", c.Kind, c.Target, c.Outcome))
	}
	wantKinds := []string{
		"pod.create ns/* error",
		"pod.create ns/* error",
		"pod.create ns/a injected-fail",
		"pod.create ns/g-* lost-response",
		"pod.delete ns/" + name + " lost-response",
	}
	// The first call has an empty namespace.
	wantKinds[0] = "pod.create /* error"
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
}

func TestGraceFinalizersAndDeleteAllOf(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(1, podsT0)
	s := fake.NewPodStore(w, fake.PodStoreOptions{GraceMin: 10 * time.Second, GraceMax: 10 * time.Second})
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.CreatePod(ctx, testPod(n, "")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Mutate("ns", "b", func(p *corev1.Pod) { p.Finalizers = []string{"keep"} }); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePod(ctx, "ns", "a", fake.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := podNames(s.Pods("ns")); !cmp.Equal(got, []string{"a~", "b", "c"}) {
		t.Fatalf("after delete: %v", got)
	}
	// Deleting a terminating pod again succeeds and changes nothing.
	if err := s.DeletePod(ctx, "ns", "a", fake.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := s.DeleteAllOf(ctx, "ns", labels.SelectorFromSet(labels.Set{"app": "x"}))
	if err != nil || n != 2 {
		t.Fatalf("DeleteAllOf = %d, %v; want 2 (a is already terminating)", n, err)
	}
	w.Clock.Advance(10 * time.Second)
	if got := podNames(s.Pods("ns")); !cmp.Equal(got, []string{"b~"}) {
		t.Fatalf("after the grace period: %v (b has a finalizer)", got)
	}
	w.Clock.Advance(time.Hour)
	if got := podNames(s.Pods("ns")); !cmp.Equal(got, []string{"b~"}) {
		t.Fatalf("an hour later: %v", got)
	}
	if err := s.RemoveFinalizers("ns", "b"); err != nil {
		t.Fatal(err)
	}
	if got := s.Pods("ns"); len(got) != 0 {
		t.Fatalf("after removing the finalizer: %v", podNames(got))
	}
	if err := s.SetPhase("ns", "b", corev1.PodFailed); !apierrors.IsNotFound(err) {
		t.Fatalf("SetPhase on a missing pod: %v", err)
	}
}

func TestInformerLagsAndDeliversInOrder(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(1, podsT0)
	s := fake.NewPodStore(w, fake.PodStoreOptions{Lag: 10 * time.Second})
	inf := s.Informer()
	var events []string
	inf.AddHandler(func(ev fake.PodEvent) { events = append(events, string(ev.Type)+" "+ev.Pod.Name) })
	if _, err := s.CreatePod(ctx, testPod("a", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePod(ctx, testPod("b", "")); err != nil {
		t.Fatal(err)
	}
	if inf.Pending() != 2 {
		t.Fatalf("Pending = %d, want 2", inf.Pending())
	}
	next, ok := inf.NextDelivery()
	if !ok || next.Before(podsT0) || next.After(podsT0.Add(10*time.Second)) {
		t.Fatalf("NextDelivery = %v, %v", next, ok)
	}
	w.Clock.Advance(10 * time.Second)
	if got := podNames(inf.List("ns", nil)); !cmp.Equal(got, []string{"a", "b"}) {
		t.Fatalf("after the lag the informer shows %v", got)
	}
	if err := s.DeletePod(ctx, "ns", "a", fake.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := inf.Get("ns", "a"); !ok && inf.Pending() == 0 {
		t.Fatal("the delete was lost")
	}
	if n := inf.Sync(); n != 1 {
		t.Fatalf("Sync delivered %d, want 1", n)
	}
	if _, ok := inf.Get("ns", "a"); ok {
		t.Fatal("a is still cached after Sync")
	}
	if diff := cmp.Diff([]string{"ADDED a", "ADDED b", "DELETED a"}, sortedFirstTwoEvents(events)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}

// sortedFirstTwoEvents sorts the two creates, whose relative delivery order depends
// on their seeded delays.
func sortedFirstTwoEvents(evs []string) []string {
	if len(evs) >= 2 && evs[0] > evs[1] {
		evs[0], evs[1] = evs[1], evs[0]
	}
	return evs
}

func TestDroppedEventsHideShortLivedPods(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(1, podsT0)
	s := fake.NewPodStore(w, fake.PodStoreOptions{Lag: time.Minute, DropRate: 1})
	p, err := s.CreatePod(ctx, testPod("", "short-"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePod(ctx, "ns", p.Name, fake.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	s.Informer().AddHandler(func(ev fake.PodEvent) { seen = append(seen, ev.Pod.Name) })
	w.Clock.Advance(time.Hour)
	if got := s.Informer().List("ns", nil); len(got) != 0 || len(seen) != 0 || s.Informer().Pending() != 0 {
		t.Fatalf("informer showed %v, delivered %v", podNames(got), seen)
	}
}

// TestInformerShowsRecentStates is the lag contract as a property: at time t
// the informer shows each pod as the store had it at some time in [t-Lag, t],
// and never goes back to an older state.
func TestInformerShowsRecentStates(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		lag := time.Duration(rapid.IntRange(0, 20).Draw(rt, "lagSeconds")) * time.Second
		w := fake.NewWorld(rapid.Uint64().Draw(rt, "seed"), podsT0)
		s := fake.NewPodStore(w, fake.PodStoreOptions{
			Lag:      lag,
			DropRate: rapid.Float64Range(0, 1).Draw(rt, "dropRate"),
			GraceMax: time.Duration(rapid.IntRange(0, 10).Draw(rt, "graceSeconds")) * time.Second,
		})
		// history[name] lists the store's states of the pod: at From, it showed
		// resourceVersion RV ("" while absent).
		type state struct {
			From time.Time
			RV   string
		}
		history := map[string][]state{}
		lastShown := map[string]int{}
		observe := func() {
			now := w.Clock.Now()
			truth := map[string]string{}
			for _, p := range s.Pods("ns") {
				truth[p.Name] = p.ResourceVersion
			}
			for _, n := range []string{"a", "b", "c"} {
				h := history[n]
				if len(h) == 0 || h[len(h)-1].RV != truth[n] {
					history[n] = append(h, state{From: now, RV: truth[n]})
				}
			}
		}
		check := func() {
			now := w.Clock.Now()
			shown := map[string]string{}
			for _, p := range s.Informer().List("ns", nil) {
				shown[p.Name] = p.ResourceVersion
			}
			for _, n := range []string{"a", "b", "c"} {
				h := history[n]
				// Absence repeats (before a create, after a delete), so match
				// greedily: the earliest state not older than the last one shown.
				ok := false
				for i := lastShown[n]; i < len(h); i++ {
					end := now.Add(time.Nanosecond)
					if i+1 < len(h) {
						end = h[i+1].From
					}
					if h[i].RV == shown[n] && end.After(now.Add(-lag)) && !h[i].From.After(now) {
						lastShown[n], ok = i, true
						break
					}
				}
				if !ok && (len(h) > 0 || shown[n] != "") {
					rt.Fatalf("at %v the informer shows %s at rv %q, not a state of the last %v at or after the one shown before: %+v", now.Sub(podsT0), n, shown[n], lag, h)
				}
			}
		}
		observe()
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			n := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(rt, "pod")
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0:
				_, _ = s.CreatePod(ctx, testPod(n, ""))
			case 1:
				_ = s.DeletePod(ctx, "ns", n, fake.DeleteOptions{})
			case 2:
				_ = s.SetPhase("ns", n, corev1.PodRunning)
			case 3:
				// Advance in small steps, recording the vanishing of pods whose
				// grace period ends on the way.
				for range rapid.IntRange(1, 15).Draw(rt, "seconds") {
					w.Clock.Advance(time.Second)
					observe()
				}
			}
			observe()
			check()
		}
	})
}

// TestInformerDropKeepsTheLatestDelete replays the sequence rapid found
// (seed 0, lag 1s, drop rate 0.5): a pod created, deleted, created and deleted
// again at one instant. A dropped delete once removed a queued create that had
// replaced an earlier queued delete, so the first create stayed in the cache
// forever.
func TestInformerDropKeepsTheLatestDelete(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(0, podsT0)
	s := fake.NewPodStore(w, fake.PodStoreOptions{Lag: time.Second, DropRate: 0.5})
	for _, op := range []struct {
		create bool
		name   string
	}{{true, "a"}, {true, "b"}, {false, "a"}, {true, "a"}, {false, "a"}} {
		if op.create {
			if _, err := s.CreatePod(ctx, testPod(op.name, "")); err != nil {
				t.Fatal(err)
			}
		} else if err := s.DeletePod(ctx, "ns", op.name, fake.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.Clock.Advance(time.Second)
	for _, p := range s.Informer().List("ns", nil) {
		if p.Name == "a" {
			t.Fatalf("one lag after its last delete, the informer still shows a at resourceVersion %q", p.ResourceVersion)
		}
	}
}
