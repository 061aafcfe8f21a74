// Package strtab indexes the entries of a caller's slice by a string key in
// one flat open-addressing table, for the validations and lookups every
// decision runs over thousands of entries: the duplicate-name checks and the
// name indexes. It allocates one slice where a Go map of the same size
// allocates a directory and a group array per table (about 18 allocations at
// 5,000 entries), and it stores 32 hash bits beside each entry so a probe
// compares another entry's key only when those bits match
// (BenchmarkTable against BenchmarkMap).
//
// The table holds entry numbers, never keys: the caller's key function
// reads an entry's key from its own slice, so equality is always decided
// by comparing the keys themselves.
package strtab

import "hash/maphash"

// Table maps keys to entry numbers 0..n-1 of the caller's slice. The zero
// Table is empty and refuses nothing; New sizes one for n entries.
type Table struct {
	slots []uint64 // tag<<32 | entry+1; 0 is empty
	mask  uint64
	seed  maphash.Seed
}

// New returns a table with room for n entries, at most two thirds full:
// with the hash bits in the slots, a longer probe costs less than a larger
// table to clear.
func New(n int) Table {
	size := 1
	for size < n+n/2+1 {
		size <<= 1
	}
	return Table{slots: make([]uint64, size), mask: uint64(size - 1), seed: maphash.MakeSeed()}
}

// Hash returns s's hash in this table. A key made of several strings
// combines their hashes (reconcile's pods xor a namespace's and a name's).
// The zero Table, which holds nothing, hashes everything to 0.
func (t *Table) Hash(s string) uint64 {
	if len(t.slots) == 0 {
		return 0
	}
	return maphash.String(t.seed, s)
}

// Insert adds entry i, whose key hashes to h, unless an earlier entry has the
// same key: then it returns that entry and leaves the table unchanged.
// same(j) reports whether entry j's key equals entry i's. Insert returns -1
// when it added i. A table holds at most the n entries New sized it for.
func (t *Table) Insert(h uint64, i int, same func(j int) bool) int {
	tag := h >> 32
	for k := h & t.mask; ; k = (k + 1) & t.mask {
		switch e := t.slots[k]; {
		case e == 0:
			t.slots[k] = tag<<32 | uint64(i+1)
			return -1
		case e>>32 == tag && same(int(uint32(e))-1):
			return int(uint32(e)) - 1
		}
	}
}

// Find returns the entry whose key hashes to h and for which same reports
// true, or -1.
func (t *Table) Find(h uint64, same func(j int) bool) int {
	if len(t.slots) == 0 {
		return -1
	}
	tag := h >> 32
	for k := h & t.mask; ; k = (k + 1) & t.mask {
		switch e := t.slots[k]; {
		case e == 0:
			return -1
		case e>>32 == tag && same(int(uint32(e))-1):
			return int(uint32(e)) - 1
		}
	}
}
