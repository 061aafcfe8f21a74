package expectations_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/expectations/expectationstest"
)

// A check of one owner decides the same on CloneOwner's copy as on the
// whole State's Clone, settling the same items, and leaves the State it was
// copied from alone. (Copying only owner's own items, not the predecessor
// a recreation under a new UID drops, makes Count differ after a check;
// sharing items instead of copying them makes the original change.)
func TestPropertyCloneOwnerDecidesAsClone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := expectationstest.State().Draw(t, "state")
		owner := expectationstest.Owners[rapid.IntRange(0, len(expectationstest.Owners)-1).Draw(t, "owner")]
		group := expectationstest.Groups[rapid.IntRange(0, len(expectationstest.Groups)-1).Draw(t, "group")]
		view := expectations.NewView(expectationstest.BuildPods(expectationstest.View().Draw(t, "view")))
		before := b.State.Clone()

		whole := b.State.Clone()
		part, err := b.State.CloneOwner(owner)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := part.Count(owner), whole.Count(owner); got != want {
			t.Fatalf("the copy holds %d items of the owner, the State %d", got, want)
		}
		for _, settle := range []bool{false, true} {
			check := (*expectations.State).Check
			if settle {
				check = (*expectations.State).Satisfied
			}
			want, werr := check(whole, b.Now, owner, group, view)
			got, gerr := check(part, b.Now, owner, group, view)
			if diff := cmp.Diff(want, got); diff != "" || (werr == nil) != (gerr == nil) {
				t.Fatalf("settle=%v: the copy decided differently (-clone +copy):\n%s\nerrors: %v, %v", settle, diff, werr, gerr)
			}
			for _, o := range expectationstest.Owners {
				if o.Namespace == owner.Namespace && o.Name == owner.Name && part.Count(o) != whole.Count(o) {
					t.Fatalf("settle=%v: after the check %v holds %d items on the copy, %d on the clone", settle, o, part.Count(o), whole.Count(o))
				}
			}
		}
		for _, o := range expectationstest.Owners {
			for _, g := range expectationstest.Groups {
				want, _ := before.Check(b.Now, o, g, view)
				got, _ := b.State.Check(b.Now, o, g, view)
				if diff := cmp.Diff(want, got); diff != "" || before.Count(o) != b.State.Count(o) {
					t.Fatalf("checking the copies changed the State's %v, group %q (-before +after):\n%s", o, g, diff)
				}
			}
		}
	})
}
