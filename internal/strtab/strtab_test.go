package strtab_test

import (
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/internal/strtab"
)

// TestPropTableIsAMap: inserting keys one after another reports exactly the
// repeats a map reports, with the first entry of each key, and Find answers
// every key as the map does, absent keys included. Keys are drawn from a
// few short strings so repeats are common, and hashed either by the table or
// by their length alone, so that keys of one length collide in every bit and
// the keys themselves must decide. Breaking it: return the slot's entry without comparing keys
// (same), or stop probing at a slot whose tag differs.
func TestPropTableIsAMap(t *testing.T) {
	key := rapid.SampledFrom([]string{"", "a", "b", "ab", "ba", "job-1", "job-10", "job-2", "x\x00", "x"})
	rapid.Check(t, func(t *rapid.T) {
		keys := rapid.SliceOfN(key, 0, 40).Draw(t, "keys")
		tab := strtab.New(len(keys))
		hash := tab.Hash
		if rapid.Bool().Draw(t, "byLength") {
			hash = func(k string) uint64 { return uint64(len(k)+1) * 0x9e3779b97f4a7c15 }
		}
		first := map[string]int{}
		for i, k := range keys {
			got := tab.Insert(hash(k), i, func(j int) bool { return keys[j] == k })
			want, dup := first[k]
			if !dup {
				want = -1
				first[k] = i
			}
			if got != want {
				t.Fatalf("Insert(%q) at %d = %d, want %d", k, i, got, want)
			}
		}
		for _, k := range []string{"", "a", "b", "ab", "ba", "job-1", "job-10", "job-2", "x\x00", "x", "absent"} {
			want, ok := first[k]
			if !ok {
				want = -1
			}
			if got := tab.Find(hash(k), func(j int) bool { return keys[j] == k }); got != want {
				t.Fatalf("Find(%q) = %d, want %d", k, got, want)
			}
		}
	})
}

// TestZeroTableFindsNothing: a zero Table (a workflow with no flows) answers
// every lookup as absent.
func TestZeroTableFindsNothing(t *testing.T) {
	var tab strtab.Table
	if got := tab.Find(tab.Hash("a"), func(int) bool { return true }); got != -1 {
		t.Fatalf("Find on a zero table = %d, want -1", got)
	}
}

var names5k = func() []string {
	names := make([]string, 5000)
	for i := range names {
		names[i] = "workflow-" + strconv.Itoa(i) + "-step"
	}
	return names
}()

// BenchmarkTable indexes 5,000 names and looks each up once, as dag's flow
// index does per Decide; BenchmarkMap does the same with a Go map.
func BenchmarkTable(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		tab := strtab.New(len(names5k))
		for i, s := range names5k {
			tab.Insert(tab.Hash(s), i, func(j int) bool { return names5k[j] == s })
		}
		for _, s := range names5k {
			if tab.Find(tab.Hash(s), func(j int) bool { return names5k[j] == s }) < 0 {
				b.Fatal(s)
			}
		}
	}
}

func BenchmarkMap(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		m := make(map[string]int32, len(names5k))
		for i, s := range names5k {
			if _, ok := m[s]; !ok {
				m[s] = int32(i)
			}
		}
		for _, s := range names5k {
			if _, ok := m[s]; !ok {
				b.Fatal(s)
			}
		}
	}
}
