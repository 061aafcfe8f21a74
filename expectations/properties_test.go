package expectations_test

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
)

// The properties in this file drive a State with random operations, without
// the fake world: exact wake-ups, Forget, no leaks, purity, and the Tracker against the core.

var (
	propOwners = []expectations.Owner{
		{Namespace: "ns", Name: "a", UID: "uid-a"},
		{Namespace: "ns", Name: "b", UID: "uid-b"},
		{Namespace: "other", Name: "a", UID: "uid-c"},
		// A recreation of ns/a under a new UID.
		{Namespace: "ns", Name: "a", UID: "uid-a2"},
	}
	propGroups = []string{"", "g"}
	propPods   = []string{"p0", "p1", "p2", "p3"}
)

// op is one operation on a State.
type op struct {
	Kind    string
	Owner   int
	Group   int
	Action  expectations.Action
	Pod     int
	Token   bool
	Seen    bool
	UID     bool
	Timeout time.Duration
	Result  expectations.CallResult
	Advance time.Duration
	View    []viewSpec
}

// viewSpec is one pod in a generated view.
type viewSpec struct {
	Pod         int
	Terminating bool
	UID         int // 0: "u0", 1: "u1"
	Token       bool
}

func genView(t *rapid.T, label string) []viewSpec {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) viewSpec {
		return viewSpec{
			Pod:         rapid.IntRange(0, len(propPods)-1).Draw(t, "pod"),
			Terminating: rapid.Bool().Draw(t, "terminating"),
			UID:         rapid.IntRange(0, 1).Draw(t, "uid"),
			Token:       rapid.Bool().Draw(t, "token"),
		}
	}), 0, 4).Draw(t, label)
}

// buildView turns specs into pods of every owner namespace (pods are matched
// by namespace, so one view serves every owner).
func buildPods(specs []viewSpec) []corev1.Pod {
	var pods []corev1.Pod
	for _, ns := range []string{"ns", "other"} {
		for _, s := range specs {
			p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: propPods[s.Pod], UID: types.UID(fmt.Sprintf("u%d", s.UID))}}
			if s.Terminating {
				ts := metav1.NewTime(simStart)
				p.DeletionTimestamp = &ts
			}
			if s.Token {
				p.Annotations = map[string]string{expectations.TokenAnnotation: "tok-" + propPods[s.Pod]}
			}
			pods = append(pods, p)
		}
	}
	return pods
}

func genOp(t *rapid.T, owners int) op {
	o := op{
		Kind:  rapid.SampledFrom([]string{"record", "record", "record", "conclude", "observe", "satisfied", "forget", "prune", "advance", "advance"}).Draw(t, "kind"),
		Owner: rapid.IntRange(0, owners-1).Draw(t, "owner"),
		Group: rapid.IntRange(0, len(propGroups)-1).Draw(t, "group"),
		Pod:   rapid.IntRange(0, len(propPods)-1).Draw(t, "pod"),
		Token: rapid.Bool().Draw(t, "token"),
	}
	switch o.Kind {
	case "record":
		o.Action = rapid.SampledFrom([]expectations.Action{expectations.Create, expectations.Delete}).Draw(t, "action")
		o.Seen = rapid.Bool().Draw(t, "seen")
		o.UID = rapid.Bool().Draw(t, "withUID")
		o.Timeout = rapid.SampledFrom([]time.Duration{0, 0, 10 * time.Second, expectations.Never}).Draw(t, "timeout")
	case "conclude":
		o.Result = rapid.SampledFrom([]expectations.CallResult{expectations.CallSucceeded, expectations.CallAlreadyDone, expectations.CallFailed, expectations.CallAmbiguous, expectations.CallNotAttempted}).Draw(t, "result")
	case "observe", "satisfied":
		o.View = genView(t, "view")
	case "advance":
		o.Advance = time.Duration(rapid.IntRange(1, 400).Draw(t, "seconds")) * time.Second
	}
	return o
}

// apply runs o on s at *now and returns a rendering of what it returned.
func (o op) apply(s interface {
	Record(time.Time, expectations.Record) (expectations.Ref, error)
	Conclude(time.Time, expectations.Ref, expectations.CallResult, string, types.UID) (bool, error)
	Observe(expectations.Owner, expectations.ObservedPod) (int, error)
	Satisfied(time.Time, expectations.Owner, string, *expectations.View) (expectations.Result, error)
	Forget(expectations.Owner) (int, error)
	Prune(time.Time, []expectations.Owner) (int, error)
}, now *time.Time) string {
	owner := propOwners[o.Owner]
	group := propGroups[o.Group]
	pod := propPods[o.Pod]
	ref := expectations.Ref{Owner: owner, Group: group, Pod: pod}
	if o.Token {
		ref = expectations.Ref{Owner: owner, Group: group, Token: "tok-" + pod}
	}
	switch o.Kind {
	case "record":
		r := expectations.Record{Owner: owner, Group: group, Action: o.Action, Pod: pod, Seen: o.Seen, Timeout: o.Timeout}
		if o.UID {
			r.PodUID = "u0"
		}
		if o.Token && o.Action == expectations.Create {
			r.Pod, r.Token = "", "tok-"+pod
		}
		got, err := s.Record(*now, r)
		return fmt.Sprint(got, err)
	case "conclude":
		found, err := s.Conclude(*now, ref, o.Result, pod, "u0")
		return fmt.Sprint(found, err)
	case "observe":
		n := 0
		for _, p := range buildPods(o.View) {
			if p.Namespace != owner.Namespace {
				continue
			}
			k, err := s.Observe(owner, expectations.ObservedPod{Name: p.Name, UID: p.UID, Token: p.Annotations[expectations.TokenAnnotation]})
			if err != nil {
				return err.Error()
			}
			n += k
		}
		return fmt.Sprint(n)
	case "satisfied":
		r, err := s.Satisfied(*now, owner, group, expectations.NewView(buildPods(o.View)))
		return fmt.Sprint(r, err)
	case "forget":
		n, err := s.Forget(owner)
		return fmt.Sprint(n, err)
	case "prune":
		n, err := s.Prune(*now, []expectations.Owner{owner})
		return fmt.Sprint(n, err)
	case "advance":
		*now = now.Add(o.Advance)
	}
	return ""
}

func genOptions(t *rapid.T) expectations.Options {
	o := expectations.Options{
		CreateTimeout:     rapid.SampledFrom([]time.Duration{0, 30 * time.Second, expectations.Never}).Draw(t, "createTimeout"),
		DeleteTimeout:     rapid.SampledFrom([]time.Duration{0, 30 * time.Second, expectations.Never}).Draw(t, "deleteTimeout"),
		OnExpiry:          rapid.SampledFrom([]expectations.ExpiryRule{expectations.Unblock, expectations.Block}).Draw(t, "onExpiry"),
		OwnerIdentity:     rapid.SampledFrom([]expectations.Identity{expectations.ByUID, expectations.ByName}).Draw(t, "identity"),
		AbsentWithoutSeen: rapid.Bool().Draw(t, "absentWithoutSeen"),
		CountsTerminating: rapid.Bool().Draw(t, "countsTerminating"),
	}
	if !o.CountsTerminating && rapid.Bool().Draw(t, "byTerminating") {
		o.DeleteSatisfiedBy = expectations.SatisfiedByTerminating
	}
	return o
}

// randomState builds a State by running random operations; it returns the
// State, the time reached and the operations.
func randomState(t *rapid.T) (*expectations.State, time.Time, []op) {
	s, err := expectations.New(genOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	now := simStart
	ops := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) op { return genOp(t, len(propOwners)) }), 0, 40).Draw(t, "ops")
	for _, o := range ops {
		o.apply(s, &now)
	}
	return s, now, ops
}

// checkCounts checks Len against Count and Groups.
func checkCounts(t *rapid.T, s *expectations.State) {
	total := 0
	seen := map[string]bool{}
	for _, o := range propOwners {
		key := string(o.UID)
		if s.Options().OwnerIdentity == expectations.ByName {
			key = o.Namespace + "/" + o.Name
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		n := s.Count(o)
		if n < 0 || (n == 0) != (len(s.Groups(o)) == 0) {
			t.Fatalf("owner %s: Count %d, Groups %v", o, n, s.Groups(o))
		}
		total += n
	}
	if total != s.Len() {
		t.Fatalf("Len %d, owners' counts add up to %d", s.Len(), total)
	}
}

// TestPropertyRequeueAfterIsExact says: with an unchanged view, the
// result changes at RequeueAfter and not before.
func TestPropertyRequeueAfterIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, now, _ := randomState(t)
		owner := propOwners[rapid.IntRange(0, len(propOwners)-1).Draw(t, "owner")]
		group := propGroups[rapid.IntRange(0, len(propGroups)-1).Draw(t, "group")]
		view := expectations.NewView(buildPods(genView(t, "view")))
		r, err := s.Check(now, owner, group, view)
		if err != nil {
			t.Fatal(err)
		}
		if r.RequeueAfter == 0 {
			later, _ := s.Check(now.Add(1000*time.Hour), owner, group, view)
			if diff := cmp.Diff(r.Pending, later.Pending, cmp.Comparer(sameReason)); diff != "" && !anyOverdue(later) {
				t.Fatalf("no RequeueAfter, yet the pending list changed:\n%s", diff)
			}
			return
		}
		if r.RequeueAfter < 0 {
			t.Fatalf("RequeueAfter %v is negative", r.RequeueAfter)
		}
		next := now.Add(r.RequeueAfter)
		before, _ := s.Check(next.Add(-time.Nanosecond), owner, group, view)
		if diff := cmp.Diff(r.Pending, before.Pending); diff != "" || before.Satisfied != r.Satisfied {
			t.Fatalf("the result changed before RequeueAfter:\n%s", diff)
		}
		at, _ := s.Check(next, owner, group, view)
		if cmp.Equal(r.Pending, at.Pending) {
			t.Fatalf("the result did not change after RequeueAfter %v:\n%s", r.RequeueAfter, at)
		}
	})
}

// sameReason compares entries ignoring nothing; it exists so a zero RequeueAfter
// can tolerate Block's reason flip (which RequeueAfter does not announce once an
// item is overdue).
func sameReason(a, b expectations.Entry) bool { return reflect.DeepEqual(a, b) }

func anyOverdue(r expectations.Result) bool { return len(r.Overdue) > 0 }

// TestPropertyForgetRemovesEverything: Forget leaves nothing of the owner.
func TestPropertyForgetRemovesEverything(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, now, ops := randomState(t)
		owner := propOwners[rapid.IntRange(0, len(propOwners)-1).Draw(t, "owner")]
		if rapid.Bool().Draw(t, "byName") {
			owner.UID = ""
		}
		if _, err := s.Forget(owner); err != nil {
			t.Fatal(err)
		}
		check := func(when string) {
			for _, o := range propOwners {
				if o.Namespace != owner.Namespace || o.Name != owner.Name || (owner.UID != "" && o.UID != owner.UID && s.Options().OwnerIdentity == expectations.ByUID) {
					continue
				}
				if n := s.Count(o); n != 0 {
					t.Fatalf("%s: owner %s still has %d items", when, o, n)
				}
				for _, g := range propGroups {
					r, err := s.Check(now, o, g, nil)
					if err != nil {
						t.Fatal(err)
					}
					if !r.Satisfied || len(r.Pending)+len(r.Lingering) != 0 || r.RequeueAfter != 0 {
						t.Fatalf("%s: owner %s group %q:\n%s", when, o, g, r)
					}
				}
			}
		}
		check("after Forget")
		// Concluding the owner's old calls revives nothing.
		for _, o := range ops {
			if o.Kind == "record" && propOwners[o.Owner].Namespace == owner.Namespace && propOwners[o.Owner].Name == owner.Name {
				o.Kind = "conclude"
				o.Result = rapid.SampledFrom([]expectations.CallResult{expectations.CallSucceeded, expectations.CallAmbiguous, expectations.CallFailed}).Draw(t, "result")
				o.apply(s, &now)
			}
		}
		check("after concluding old calls")
		checkCounts(t, s)
	})
}

// TestPropertyNoLeak: Prune drops owners not listed, and
// keeps no item whose deadline passed (under Unblock) except lingering ones.
func TestPropertyNoLeak(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, now, _ := randomState(t)
		var live []expectations.Owner
		for _, o := range propOwners {
			if rapid.Bool().Draw(t, "live "+string(o.UID)) {
				live = append(live, o)
			}
		}
		if _, err := s.Prune(now, live); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, s)
		key := func(o expectations.Owner) string {
			if s.Options().OwnerIdentity == expectations.ByName {
				return o.Namespace + "/" + o.Name
			}
			return string(o.UID)
		}
		kept := map[string]bool{}
		for _, o := range live {
			kept[key(o)] = true
		}
		for _, o := range propOwners {
			if !kept[key(o)] {
				if n := s.Count(o); n != 0 {
					t.Fatalf("owner %s not live, still has %d items", o, n)
				}
				continue
			}
			if s.Options().OnExpiry == expectations.Block {
				continue
			}
			for _, g := range propGroups {
				// With an empty view nothing is observed, so an item whose
				// deadline passed would be reported Expired now.
				r, _ := s.Check(now, o, g, nil)
				for _, e := range r.Expired {
					t.Fatalf("owner %s group %q kept %v past its deadline %v (now %v)", o, g, e.Pod+e.Token, e.Deadline, now)
				}
			}
		}
	})
}

// TestPropertyPurity: Check and Satisfied agree, the view is
// never modified, repeating a check settles nothing new, and replaying the same
// calls gives byte-identical results.
func TestPropertyPurity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := genOptions(t)
		ops := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) op { return genOp(t, len(propOwners)) }), 0, 40).Draw(t, "ops")
		replay := func() ([]string, *expectations.State, time.Time) {
			s, err := expectations.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			now := simStart
			var out []string
			for _, o := range ops {
				if o.Kind == "satisfied" {
					// Check on the State, then on a clone, must match Satisfied.
					v := expectations.NewView(buildPods(o.View))
					owner, group := propOwners[o.Owner], propGroups[o.Group]
					checked, cerr := s.Check(now, owner, group, v)
					clone := s.Clone()
					got, err := s.Satisfied(now, owner, group, v)
					if diff := cmp.Diff(checked, got); diff != "" || fmt.Sprint(cerr) != fmt.Sprint(err) {
						t.Fatalf("Check and Satisfied disagree (-check +satisfied):\n%s", diff)
					}
					if !reflect.DeepEqual(v, expectations.NewView(buildPods(o.View))) {
						t.Fatal("the view was modified")
					}
					cloned, _ := clone.Satisfied(now, owner, group, v)
					if diff := cmp.Diff(got, cloned); diff != "" {
						t.Fatalf("a clone decided differently:\n%s", diff)
					}
					again, _ := s.Satisfied(now, owner, group, v)
					if again.Satisfied != got.Satisfied || !cmp.Equal(again.Pending, got.Pending) || again.RequeueAfter != got.RequeueAfter ||
						len(again.Observed)+len(again.Expired)+len(again.Overdue) != 0 {
						t.Fatalf("a repeated check changed or settled something:\nfirst:\n%s\nagain:\n%s", got, again)
					}
					if !cmp.Equal(again.Lingering, got.Lingering) {
						t.Fatalf("lingering changed on repeat:\nfirst:\n%s\nagain:\n%s", got, again)
					}
					out = append(out, got.String())
					continue
				}
				out = append(out, o.apply(s, &now))
				checkCounts(t, s)
			}
			return out, s, now
		}
		first, _, _ := replay()
		second, _, _ := replay()
		if diff := cmp.Diff(first, second); diff != "" {
			t.Fatalf("two replays differ:\n%s", diff)
		}
	})
}

// TestPropertyTrackerMatchesCore runs one goroutine per owner against a
// shared Tracker (under -race in CI), then replays each owner's history on its
// own State: every result must match, since owners are independent.
func TestPropertyTrackerMatchesCore(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := genOptions(t)
		opts.OwnerIdentity = expectations.ByUID
		// Owners 0..2 have distinct namespace/name, so they never supersede one
		// another.
		const owners = 3
		histories := make([][]op, owners)
		for i := range histories {
			ops := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) op { return genOp(t, 1) }), 0, 30).Draw(t, fmt.Sprintf("ops%d", i))
			for j := range ops {
				ops[j].Owner = i
			}
			histories[i] = ops
		}
		tr, err := expectations.NewTracker(opts)
		if err != nil {
			t.Fatal(err)
		}
		got := make([][]string, owners)
		var wg sync.WaitGroup
		for i := range owners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				now := simStart
				for _, o := range histories[i] {
					if o.Kind == "prune" {
						// Prune with one live owner would drop the others,
						// which run concurrently; list them all.
						o.Kind = "advance"
					}
					got[i] = append(got[i], o.apply(tr, &now))
					_ = tr.Len()
				}
			}()
		}
		wg.Wait()
		total := 0
		for i := range owners {
			s, _ := expectations.New(opts)
			now := simStart
			var want []string
			for _, o := range histories[i] {
				if o.Kind == "prune" {
					o.Kind = "advance"
				}
				want = append(want, o.apply(s, &now))
			}
			if diff := cmp.Diff(want, got[i]); diff != "" {
				t.Fatalf("owner %d: tracker and core differ (-core +tracker):\n%s", i, diff)
			}
			if s.Count(propOwners[i]) != tr.Count(propOwners[i]) {
				t.Fatalf("owner %d: counts differ", i)
			}
			total += s.Len()
		}
		if total != tr.Len() || tr.Snapshot().Len() != total {
			t.Fatalf("tracker Len %d, cores add up to %d", tr.Len(), total)
		}
		if !slices.Equal(tr.Groups(propOwners[0]), tr.Snapshot().Groups(propOwners[0])) {
			t.Fatal("Snapshot differs from the tracker")
		}
	})
}
