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
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/expectations/expectationstest"
)

// The properties in this file drive a State with random operations, without
// the fake world: exact wake-ups, Forget, no leaks, purity, and the Tracker against the core.

// TestPropertyRequeueAfterIsExact says: with an unchanged view, the
// result changes at RequeueAfter and not before (expectations.CheckResult).
// Break that makes it fail: RequeueAfter set a second before the earliest
// deadline in State.Check (check.go).
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
		if err := expectations.CheckResult(s, now, owner, group, view, r); err != nil {
			t.Fatalf("%v:\n%s", err, r)
		}
	})
}

// checkCounts is expectations.CheckState over every owner the operations use.
func checkCounts(t *rapid.T, s *expectations.State) {
	if err := expectations.CheckState(s, propOwners); err != nil {
		t.Fatal(err)
	}
}

// The generators, under the names the tests use.
var (
	propOwners = expectationstest.Owners
	propGroups = expectationstest.Groups
)

type op = expectationstest.Op
type viewSpec = expectationstest.PodSpec

func genView(t *rapid.T, label string) []viewSpec { return expectationstest.View().Draw(t, label) }
func buildPods(specs []viewSpec) []corev1.Pod     { return expectationstest.BuildPods(specs) }
func genOp(t *rapid.T, owners int) op             { return expectationstest.Operation(owners).Draw(t, "op") }
func genOptions(t *rapid.T) expectations.Options {
	return expectationstest.Options().Draw(t, "options")
}

// randomState builds a State by running random operations; it returns the
// State, the time reached and the operations.
func randomState(t *rapid.T) (*expectations.State, time.Time, []op) {
	b := expectationstest.State().Draw(t, "state")
	return b.State, b.Now, b.Ops
}

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
				o.Apply(s, &now)
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
				out = append(out, o.Apply(s, &now))
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
					got[i] = append(got[i], o.Apply(tr, &now))
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
				want = append(want, o.Apply(s, &now))
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
