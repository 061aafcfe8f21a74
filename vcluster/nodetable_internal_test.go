package vcluster

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// tableVersion is one table derived in a property run and the map it must
// still hold at the end of the run.
type tableVersion struct {
	t    NodeTable
	want map[string]Node
}

// checkTable fails t unless table holds exactly want.
func checkTable(t *rapid.T, label string, table NodeTable, want map[string]Node) {
	t.Helper()
	if table.Len() != len(want) {
		t.Fatalf("%s: Len %d, want %d", label, table.Len(), len(want))
	}
	got := map[string]Node{}
	rank := 0
	for id, n := range table.All() {
		if _, dup := got[id]; dup {
			t.Fatalf("%s: All yields %s twice", label, id)
		}
		got[id] = n
		if e, r := table.entry(id); e == nil || e.node != n || r != rank {
			t.Fatalf("%s: entry(%s) has rank %d, want its place %d in All", label, id, r, rank)
		}
		rank++
	}
	if e, _ := table.entry("not-an-id"); e != nil {
		t.Fatalf("%s: entry finds an id never set", label)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("%s: holds %v, want %v", label, got, want)
	}
	for id, n := range want {
		if m, ok := table.Get(id); !ok || m != n {
			t.Fatalf("%s: Get(%s) = %v, %v; want %v", label, id, m, ok, n)
		}
	}
	if !slices.Equal(table.IDs(), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("%s: IDs not the sorted keys", label)
	}
}

// propNodeTable: a NodeTable behaves as a map under random sets and deletes
// (single and batched), every older version still holds what it held when
// it was made, and the trie's shape depends only on its contents
// (reflect.DeepEqual to a table built from scratch). Sharing a node between
// versions instead of copying it (editable returning n for every edit) makes
// the history check fail; skipping the collapse on delete makes the shape
// check fail; leaving upto unchanged on a delete makes the rank check fail.
func propNodeTable(t *rapid.T) {
	ids := rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p",
		"q", "r", "s", "t", "u", "v", "w", "x", "y", "z", "aa", "ab", "ba", "bb", "n001", "n002", ""})
	var table NodeTable
	want := map[string]Node{}
	history := []tableVersion{{table, maps.Clone(want)}}
	for step := range rapid.IntRange(0, 60).Draw(t, "steps") {
		var edit *batchEdit
		if rapid.Bool().Draw(t, "batch") {
			edit = &batchEdit{}
		} else {
			edit = frozen
		}
		for range rapid.IntRange(1, 8).Draw(t, "ops") {
			id := ids.Draw(t, "id")
			if rapid.IntRange(0, 2).Draw(t, "delete") == 0 {
				table = table.del(id, edit)
				delete(want, id)
				continue
			}
			n := Node{ID: id, Template: fmt.Sprint("t", step%3), Alive: rapid.Bool().Draw(t, "alive")}
			table = table.set(id, n, edit)
			want[id] = n
		}
		checkTable(t, fmt.Sprintf("step %d", step), table, want)
		history = append(history, tableVersion{table, maps.Clone(want)})
	}
	for i, v := range history {
		checkTable(t, fmt.Sprintf("version %d at the end", i), v.t, v.want)
	}
	fresh := nodeTableOf(want)
	if !reflect.DeepEqual(table, fresh) || !table.Equal(fresh) || !fresh.Equal(table) {
		t.Fatalf("a table and one built from its contents differ:\n%#v\n%#v", table, fresh)
	}
}

func TestPropertyNodeTable(t *testing.T) { rapid.Check(t, propNodeTable) }

// TestPropertyNodeTableCollisions is TestPropertyNodeTable with a hash of 3
// bits, above the first two levels' fragments: every id goes three levels
// deep and many share the whole hash, which exercises the deep paths, the
// collapse on delete and the collision lists.
func TestPropertyNodeTableCollisions(t *testing.T) {
	defer func(h func(string) uint64) { hashID = h }(hashID)
	hashID = func(id string) uint64 { return idHash(id) & (7 << 10) }
	rapid.Check(t, propNodeTable)
}
