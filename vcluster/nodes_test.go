package vcluster_test

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"runtime/debug"
	"testing"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/vcluster"
)

// stateVersion is one State derived in a property run with what it held
// when it was made.
type stateVersion struct {
	s     vcluster.State
	nodes map[string]vcluster.Node
	text  string
}

func versionOf(s vcluster.State) stateVersion {
	return stateVersion{s: s, nodes: maps.Collect(s.Nodes.All()), text: s.String()}
}

// TestPropertyStatesStayValues: deriving States by node events (SetNode,
// SetNodes, Join) and plans (replenish with its purge) never changes an
// older State, and SetNodes equals the same changes made one SetNode at a
// time (reflect.DeepEqual). A node table updated in place (NodeTable.Set
// reusing the old trie's nodes) makes it fail.
func TestPropertyStatesStayValues(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, w := genState(t, 120, 15)
		history := []stateVersion{versionOf(s)}
		joined := 0
		for i := range rapid.IntRange(1, 12).Draw(t, "steps") {
			ids := s.Nodes.IDs()
			switch k := rapid.IntRange(0, 3).Draw(t, "event"); {
			case k == 0 && len(ids) > 0:
				id := rapid.SampledFrom(ids).Draw(t, "id")
				alive := s.Nodes.Node(id).Alive && rapid.Bool().Draw(t, "alive")
				next, err := s.SetNode(id, alive, rapid.Bool().Draw(t, "busy"))
				if err != nil {
					t.Fatal(err)
				}
				s = next
			case k == 1 && len(ids) > 0:
				var changes []vcluster.NodeChange
				seen := map[string]bool{}
				for range rapid.IntRange(1, 30).Draw(t, "batch") {
					id := rapid.SampledFrom(ids).Draw(t, "id")
					if seen[id] {
						continue
					}
					seen[id] = true
					changes = append(changes, vcluster.NodeChange{ID: id, Alive: s.Nodes.Node(id).Alive && rapid.Bool().Draw(t, "alive"), Busy: rapid.Bool().Draw(t, "busy")})
				}
				next, err := s.SetNodes(changes)
				if err != nil {
					t.Fatal(err)
				}
				one := s
				for _, c := range changes {
					if one, err = one.SetNode(c.ID, c.Alive, c.Busy); err != nil {
						t.Fatal(err)
					}
				}
				if !reflect.DeepEqual(next, one) {
					t.Fatalf("SetNodes(%v) differs from SetNode one at a time:\n%s\n%s", changes, next, one)
				}
				s = next
			case k == 2:
				joined++
				next, err := s.Join(vcluster.Node{ID: fmt.Sprintf("j%03d-%d", joined, i), Template: w.Templates[joined%len(w.Templates)], Alive: true})
				if err != nil {
					t.Fatal(err)
				}
				s = next
			default:
				p, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if s, err = s.Next(p); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			history = append(history, versionOf(s))
		}
		for i, v := range history {
			if now := versionOf(v.s); !maps.Equal(now.nodes, v.nodes) || now.text != v.text {
				t.Fatalf("version %d changed after newer states were derived:\nthen %s\nnow  %s", i, v.text, now.text)
			}
		}
	})
}

// nodeStateOf returns a State of n alive nodes of 10 templates, ids as in
// the anchor (56 hex characters).
func nodeStateOf(b *testing.B, n int) (vcluster.State, []string) {
	b.Helper()
	nodes := make([]vcluster.Node, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%056x", uint64(i)*0x9e3779b97f4a7c15)
		nodes[i] = vcluster.Node{ID: ids[i], Template: fmt.Sprintf("t%d", i%10), Alive: true}
	}
	s, err := vcluster.NewState(nodes)
	if err != nil {
		b.Fatal(err)
	}
	return s, ids
}

// BenchmarkSetNode marks one node dead at 10,000, 100,000 and 1,000,000
// nodes: the cost should not grow with the table (it was a copy of the whole
// table, 123 ms at a million nodes).
//
// Its gc-paused variant runs the same updates with the garbage collector
// paused (a collection with the timer stopped every 20,000 updates): what
// the first variant adds at a million nodes is the cost of collecting
// beside the State's large live heap, not of the update (see
// BenchmarkNodeTableSet for the bytes an update copies).
func BenchmarkSetNode(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		s, ids := nodeStateOf(b, n)
		for _, gc := range []string{"", "/gc-paused"} {
			b.Run(fmt.Sprint(n)+gc, func(b *testing.B) {
				if gc != "" {
					defer debug.SetGCPercent(debug.SetGCPercent(-1))
					runtime.GC()
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := s.SetNode(ids[(i*7919)%n], false, false); err != nil {
						b.Fatal(err)
					}
					i++
					if gc != "" && i%20_000 == 0 {
						b.StopTimer()
						runtime.GC()
						b.StartTimer()
					}
				}
			})
		}
	}
}

// BenchmarkSetNodes25kOf200k marks 25,000 of 200,000 nodes dead: as one
// SetNodes batch, and one SetNode at a time (which took over 30 s when each
// update copied the table).
func BenchmarkSetNodes25kOf200k(b *testing.B) {
	s, ids := nodeStateOf(b, 200_000)
	changes := make([]vcluster.NodeChange, 25_000)
	for i := range changes {
		changes[i] = vcluster.NodeChange{ID: ids[i*8]}
	}
	b.Run("batch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.SetNodes(changes); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-at-a-time", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cur := s
			for _, c := range changes {
				var err error
				if cur, err = cur.SetNode(c.ID, false, false); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
