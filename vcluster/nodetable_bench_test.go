package vcluster

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"unsafe"
)

// pathBytes returns what an update of id copies in t: every level on id's
// path (its slots, 16 bytes each, and the level's header) and the new entry.
func pathBytes(t NodeTable, id string) int {
	h := hashID(id)
	bytes := int(unsafe.Sizeof(tableEntry{}))
	n := t.root
	for shift := uint(0); n != nil; shift += 5 {
		bytes += int(unsafe.Sizeof(tableNode{})) + len(n.slots)*int(unsafe.Sizeof(tableSlot{}))
		bit := fragment(h, shift)
		if n.bitmap&bit == 0 {
			break
		}
		n = n.slots[n.index(bit)].child
	}
	return bytes
}

// BenchmarkNodeTableSet replaces one node of a pre-built table of 10,000,
// 100,000 and 1,000,000 nodes (the table alone, no State, no validation),
// reporting the bytes an update copies (pathBytes, averaged over the ids
// updated) beside the measured B/op, and runs each size twice: with the
// garbage collector on, and paused (collected with the timer stopped every
// 20,000 updates), so that the trie's own cost reads apart from the cost of
// collecting beside a large live heap; get is a lookup of the same ids, the
// cost of walking the same path without copying it.
func BenchmarkNodeTableSet(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		nodes := make([]Node, n)
		for i := range n {
			id := fmt.Sprintf("%056x", uint64(i)*0x9e3779b97f4a7c15)
			nodes[i] = Node{ID: id, Template: fmt.Sprintf("t%d", i%10), Alive: true}
		}
		t := NewNodeTable(nodes...)
		sample := 0
		for i := 0; i < 10_000; i++ {
			sample += pathBytes(t, nodes[(i*7919)%n].ID)
		}
		b.Run(fmt.Sprintf("%d/get", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, ok := t.Get(nodes[(i*7919)%n].ID); !ok {
					b.Fatal("missing")
				}
				i++
			}
		})
		for _, gc := range []string{"gc", "gc-paused"} {
			b.Run(fmt.Sprintf("%d/%s", n, gc), func(b *testing.B) {
				if gc == "gc-paused" {
					defer debug.SetGCPercent(debug.SetGCPercent(-1))
					runtime.GC()
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					x := nodes[(i*7919)%n]
					x.Alive = false
					_ = t.Set(x.ID, x)
					i++
					if gc == "gc-paused" && i%20_000 == 0 {
						b.StopTimer()
						runtime.GC()
						b.StartTimer()
					}
				}
				b.ReportMetric(float64(sample)/10_000, "path-bytes/update")
			})
		}
	}
}
