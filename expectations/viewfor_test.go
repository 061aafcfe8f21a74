package expectations_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
)

// TestPropertyViewForMatchesNewView checks that a view built by ViewFor, which
// indexes only the pods an owner's records can match, gives every check of
// that owner's groups exactly the result the full view gives, duplicates of a
// name and pods found by token included.
func TestPropertyViewForMatchesNewView(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, now, _ := randomState(t)
		pods := buildPods(genView(t, "view"))
		full := expectations.NewView(pods)
		for _, owner := range propOwners {
			small, err := s.ViewFor(owner, pods)
			if err != nil {
				t.Fatalf("ViewFor(%s): %v", owner, err)
			}
			if small.Len() > full.Len() {
				t.Fatalf("ViewFor(%s) holds %d pods, the full view %d", owner, small.Len(), full.Len())
			}
			for _, group := range propGroups {
				want, werr := s.Check(now, owner, group, full)
				got, gerr := s.Check(now, owner, group, small)
				if diff := cmp.Diff(want, got); diff != "" || (werr == nil) != (gerr == nil) {
					t.Fatalf("owner %s group %q: ViewFor's check differs (-full +ViewFor):\n%s\nerrors %v / %v", owner, group, diff, werr, gerr)
				}
				want, _ = s.Clone().Satisfied(now, owner, group, full)
				got, _ = s.Clone().Satisfied(now, owner, group, small)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("owner %s group %q: ViewFor's Satisfied differs (-full +ViewFor):\n%s", owner, group, diff)
				}
			}
		}
	})
}

// TestViewForNilStateAndBadOwner covers the edges: a nil State has nothing in
// flight, and an owner without a name is refused as Check refuses it.
func TestViewForNilStateAndBadOwner(t *testing.T) {
	var s *expectations.State
	v, err := s.ViewFor(propOwners[0], buildPods([]viewSpec{{Pod: 1}}))
	if err != nil || v.Len() != 0 {
		t.Fatalf("nil State: view of %d pods, error %v", v.Len(), err)
	}
	s, _ = expectations.New(expectations.Options{})
	if _, err := s.ViewFor(expectations.Owner{Namespace: "ns"}, nil); err == nil {
		t.Fatal("an owner without a name was accepted")
	}
	if _, err := (*expectations.State)(nil).ViewFor(expectations.Owner{Namespace: "ns"}, nil); err == nil {
		t.Fatal("nil State: an owner without a name was accepted")
	}
}
