package dag

import "encoding/binary"

// nameIndex maps the flow names of a graph to their node index. It is an
// open-addressing table of words holding a name's hash tag and node+1 (0:
// empty slot), probed linearly. Compared with a map[string]int32 it holds
// no pointer (the GC never scans it), inserts with one probe sequence
// instead of a lookup and an assignment, and compares a string only when
// the 32-bit tags match: a plan of 10,000 flows makes about 70,000 lookups.
//
// The hash is deterministic (FNV-1a over words), so crafted names could
// collide on purpose; a probe sequence longer than maxProbe moves the
// index to a Go map, whose seeded hash bounds the cost of any input.
type nameIndex struct {
	slots []uint64
	names []string // node → name; only the nodes inserted are looked at
	mask  uint64
	// dist is the longest probe sequence an insert made: a name is never
	// further than dist slots from its home, so a lookup stops there.
	dist uint64
	// fallback replaces the table once a probe sequence gets too long.
	fallback map[string]int32
}

// maxProbe bounds a probe sequence. With the table at most half full, a
// sequence longer than this is vanishingly rare unless names collide on
// purpose.
const maxProbe = 64

// init sizes the index for up to n names, read from names.
func (x *nameIndex) init(names []string, n int) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	x.slots = make([]uint64, size)
	x.mask = uint64(size - 1)
	x.names = names
}

// nameHash multiplies in the length and each 8-byte word of s (the last
// one zero-padded), then mixes so that both halves of the result depend on
// every byte: the low bits pick the slot, the high 32 bits are the tag.
// A name of up to 16 bytes takes three multiplications.
func nameHash(s string) uint64 {
	h := (uint64(len(s)) ^ fnvOffset) * fnvPrime
	i := 0
	for ; i+8 <= len(s); i += 8 {
		h = (h ^ binary.LittleEndian.Uint64([]byte(s[i:i+8]))) * fnvPrime
	}
	if i < len(s) {
		var w uint64
		for k := len(s) - 1; k >= i; k-- {
			w = w<<8 | uint64(s[k])
		}
		h = (h ^ w) * fnvPrime
	}
	// A final avalanche (from SplitMix64): the low bits of a product alone
	// are weak.
	h ^= h >> 31
	h *= 0x7fb5d329728ea185
	h ^= h >> 27
	return h
}

// insert adds name as node i unless the name is present; it returns the
// node that holds the name and whether it was already there.
func (x *nameIndex) insert(name string, i int32) (int32, bool) {
	if x.fallback != nil {
		if first, ok := x.fallback[name]; ok {
			return first, true
		}
		x.fallback[name] = i
		return i, false
	}
	h := nameHash(name)
	tag := h &^ 0xffffffff
	for k, probes := h&x.mask, uint64(0); ; k, probes = (k+1)&x.mask, probes+1 {
		s := x.slots[k]
		if s == 0 {
			if probes > maxProbe {
				x.spill()
				return x.insert(name, i)
			}
			x.slots[k] = tag | uint64(i+1)
			x.dist = max(x.dist, probes)
			return i, false
		}
		if s&^0xffffffff == tag {
			if node := int32(s&0xffffffff) - 1; x.names[node] == name {
				return node, true
			}
		}
	}
}

// lookup returns the node of a name.
func (x *nameIndex) lookup(name string) (int32, bool) {
	if x.fallback != nil {
		i, ok := x.fallback[name]
		return i, ok
	}
	if x.slots == nil {
		return 0, false
	}
	h := nameHash(name)
	tag := h &^ 0xffffffff
	for k, probes := h&x.mask, uint64(0); probes <= x.dist; k, probes = (k+1)&x.mask, probes+1 {
		s := x.slots[k]
		if s == 0 {
			break
		}
		if s&^0xffffffff == tag {
			if node := int32(s&0xffffffff) - 1; x.names[node] == name {
				return node, true
			}
		}
	}
	return 0, false
}

// spill moves the table into a Go map.
func (x *nameIndex) spill() {
	m := make(map[string]int32, len(x.slots)/2)
	for _, s := range x.slots {
		if s != 0 {
			node := int32(s&0xffffffff) - 1
			m[x.names[node]] = node
		}
	}
	x.fallback, x.slots = m, nil
}
