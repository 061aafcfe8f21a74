package dag

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestNameIndexMatchesMap checks the index against a Go map on random
// names, duplicates and absent names included.
func TestNameIndexMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOf(rapid.StringMatching(`[a-c]{0,10}`)).Draw(t, "names")
		var x nameIndex
		x.init(names, len(names))
		want := map[string]int32{}
		for i, s := range names {
			first, dup := x.insert(s, int32(i))
			w, wdup := want[s]
			if !wdup {
				want[s], w = int32(i), int32(i)
			}
			if dup != wdup || first != w {
				t.Fatalf("insert(%q, %d) = %d, %v; want %d, %v", s, i, first, dup, w, wdup)
			}
		}
		for _, s := range append(rapid.SliceOf(rapid.StringMatching(`[a-d]{0,10}`)).Draw(t, "probes"), names...) {
			got, ok := x.lookup(s)
			w, wok := want[s]
			if ok != wok || got != w {
				t.Fatalf("lookup(%q) = %d, %v; want %d, %v", s, got, ok, w, wok)
			}
		}
	})
}

// TestNameIndexSpills feeds names that all share one home slot: past
// maxProbe the index moves to a Go map and still answers every lookup.
func TestNameIndexSpills(t *testing.T) {
	const n = maxProbe + 8
	var x nameIndex
	names := make([]string, 0, n)
	x.init(names, n)
	home := nameHash("seed") & x.mask
	for k := 0; len(names) < n; k++ {
		if s := fmt.Sprint("f", k); nameHash(s)&x.mask == home {
			names = append(names, s)
		}
	}
	x.names = names
	for i, s := range names {
		if _, dup := x.insert(s, int32(i)); dup {
			t.Fatalf("insert(%q) reported a duplicate", s)
		}
	}
	if x.fallback == nil {
		t.Fatalf("%d colliding names did not move the index to a map", n)
	}
	for i, s := range names {
		if got, ok := x.lookup(s); !ok || got != int32(i) {
			t.Fatalf("lookup(%q) = %d, %v; want %d", s, got, ok, i)
		}
	}
	if _, ok := x.lookup("absent"); ok {
		t.Fatal("lookup of an absent name succeeded")
	}
	if first, dup := x.insert(names[3], 99); !dup || first != 3 {
		t.Fatalf("re-insert = %d, %v; want 3, true", first, dup)
	}
}
