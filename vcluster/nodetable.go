package vcluster

import (
	"fmt"
	"iter"
	"math/bits"
	"slices"
	"strings"
)

// NodeTable is a State's node table, id → Node: an immutable map whose
// updates return a new table and share everything they did not change with
// the old one, so an older State never changes when a newer one is derived.
//
// A single update costs O(log₃₂ n) (about four levels at a million nodes)
// instead of a copy of the whole table: SetNode, Join and a purge no longer
// grow with the cluster's size. The zero NodeTable is empty and ready to use.
//
// It is a hash array mapped trie: each level consumes 5 bits of the id's
// 64-bit hash (idHash) to pick one of 32 slots. The hash only chooses where an
// id lives; equality is always decided on the id itself. Ids whose hashes
// collide entirely share one slot as a list sorted by id, so crafted ids can
// slow their own lookups but never confuse two nodes. The shape of the trie
// depends only on the set of ids, never on the order of updates, so two
// tables holding the same nodes are reflect.DeepEqual.
type NodeTable struct {
	root *tableNode
	n    int
}

// tableNode is one level of the trie: bitmap marks the occupied slots, and
// slots holds them in slot order. edit marks a node created by a batch that
// may still change it in place; nodes reachable from a finished table are
// never changed.
type tableNode struct {
	bitmap uint32
	slots  []tableSlot
	edit   *batchEdit
}

// tableSlot is a subtree (child) or the ids of one hash (leaf). upto counts
// the ids of this slot and of every slot before it in its level, so an id's
// position in the table's walk order (its rank, which validation uses to mark
// ids in a bit set instead of a map) is the sum, over its path, of the upto
// of the slot before it. Copying a level to change one slot copies at most
// 768 bytes.
type tableSlot struct {
	child *tableNode
	leaf  *tableEntry
	upto  int
}

// tableEntry is one id and its node; next is another id with the same whole
// hash (ids ascending), almost always nil. Entries never change once made.
type tableEntry struct {
	hash uint64
	id   string
	node Node
	next *tableEntry
}

// batchEdit identifies one batch of in-place updates. It has a size so that
// two tokens never share an address.
type batchEdit struct{ _ int }

// frozen is the edit of every node no batch may change. Every node carries a
// non-nil edit, all of equal value, so reflect.DeepEqual sees only the ids
// and nodes.
var frozen = &batchEdit{}

// hashID places ids in the trie and decides nothing: idHash (a variable so
// that a test can force collisions).
var hashID = idHash

// idHash is a deterministic 64-bit hash of id that reads it 8 bytes at a
// time. Node ids are long (the anchor's are 56 hex characters) and every
// planner looks up every listed node when it validates a state, so a hash
// that costs a multiply per byte, as FNV-1a does, was a quarter of a
// replenish plan's instructions (BenchmarkReplenish10k). Each word is mixed
// in with a multiply and a rotate, and the result goes through splitmix64's
// finalizer, so that the 5-bit fragments each trie level takes are spread.
func idHash(id string) uint64 {
	const m1, m2 = 0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9
	h := uint64(len(id)) * m1
	for len(id) >= 8 {
		w := uint64(id[0]) | uint64(id[1])<<8 | uint64(id[2])<<16 | uint64(id[3])<<24 |
			uint64(id[4])<<32 | uint64(id[5])<<40 | uint64(id[6])<<48 | uint64(id[7])<<56
		h = bits.RotateLeft64(h^(w*m2), 29) * m1
		id = id[8:]
	}
	var w uint64
	for i := 0; i < len(id); i++ {
		w |= uint64(id[i]) << (8 * i)
	}
	h = bits.RotateLeft64(h^(w*m2), 29) * m1
	h ^= h >> 31
	h *= 0x94d049bb133111eb
	return h ^ h>>29
}

func fragment(h uint64, shift uint) uint32 { return 1 << ((h >> shift) & 31) }

func (n *tableNode) index(bit uint32) int { return bits.OnesCount32(n.bitmap & (bit - 1)) }

// editable returns n itself when the batch edit owns it, else a copy that
// edit owns (frozen: a copy nobody may change).
func (n *tableNode) editable(edit *batchEdit) *tableNode {
	if edit != frozen && n.edit == edit {
		return n
	}
	m := newTableNode(n.bitmap, len(n.slots), edit)
	copy(m.slots, n.slots)
	return m
}

// newTableNode returns a level with n zero slots and room for one more,
// allocated together with its slots: one allocation per copied level where
// a level and its slots were two (a purge of 1,000 nodes copies about 900
// levels).
func newTableNode(bitmap uint32, n int, edit *batchEdit) *tableNode {
	var m *tableNode
	var slots []tableSlot
	switch {
	case n < 2:
		m, slots = newLevel(func(s *[2]tableSlot) []tableSlot { return s[:] })
	case n < 4:
		m, slots = newLevel(func(s *[4]tableSlot) []tableSlot { return s[:] })
	case n < 8:
		m, slots = newLevel(func(s *[8]tableSlot) []tableSlot { return s[:] })
	case n < 12:
		m, slots = newLevel(func(s *[12]tableSlot) []tableSlot { return s[:] })
	case n < 16:
		m, slots = newLevel(func(s *[16]tableSlot) []tableSlot { return s[:] })
	case n < 24:
		m, slots = newLevel(func(s *[24]tableSlot) []tableSlot { return s[:] })
	default:
		m, slots = newLevel(func(s *[32]tableSlot) []tableSlot { return s[:] })
	}
	m.bitmap, m.slots, m.edit = bitmap, slots[:n], edit
	return m
}

// levelBlock is a level and its slots in one allocation; S is an array of
// slots (Go has no type parameter for an array's length).
type levelBlock[S any] struct {
	tableNode
	slots S
}

// newLevel allocates a level with the slots of array type S.
func newLevel[S any](all func(*S) []tableSlot) (*tableNode, []tableSlot) {
	b := new(levelBlock[S])
	return &b.tableNode, all(&b.slots)
}

// Len returns the number of nodes.
func (t NodeTable) Len() int { return t.n }

// before returns the number of ids in the slots of n before slot i.
func (n *tableNode) before(i int) int {
	if i == 0 {
		return 0
	}
	return n.slots[i-1].upto
}

// shiftUpto adds d to the upto of every slot of n from slot i on: an id
// was added (1) or removed (-1) at slot i.
func (n *tableNode) shiftUpto(i, d int) {
	for j := i; j < len(n.slots); j++ {
		n.slots[j].upto += d
	}
}

// entry returns the entry of id and its rank: its position in the order All
// walks, in [0, Len()).
func (t NodeTable) entry(id string) (*tableEntry, int) {
	h := hashID(id)
	n := t.root
	rank := 0
	for shift := uint(0); n != nil; shift += 5 {
		bit := fragment(h, shift)
		if n.bitmap&bit == 0 {
			return nil, 0
		}
		i := n.index(bit)
		rank += n.before(i)
		s := &n.slots[i]
		if s.child != nil {
			n = s.child
			continue
		}
		for e := s.leaf; e != nil; e = e.next {
			if e.id == id {
				return e, rank
			}
			rank++
		}
		return nil, 0
	}
	return nil, 0
}

// Get returns the node stored under id.
func (t NodeTable) Get(id string) (Node, bool) {
	h := hashID(id)
	n := t.root
	for shift := uint(0); n != nil; shift += 5 {
		bit := fragment(h, shift)
		if n.bitmap&bit == 0 {
			return Node{}, false
		}
		s := &n.slots[n.index(bit)]
		if s.child != nil {
			n = s.child
			continue
		}
		for e := s.leaf; e != nil; e = e.next {
			if e.id == id {
				return e.node, true
			}
		}
		return Node{}, false
	}
	return Node{}, false
}

// Node returns the node stored under id, or the zero Node.
func (t NodeTable) Node(id string) Node {
	n, _ := t.Get(id)
	return n
}

// Has reports whether id is in the table.
func (t NodeTable) Has(id string) bool {
	_, ok := t.Get(id)
	return ok
}

// Set returns t with n stored under id (usually n.ID; State.Validate
// reports a key that differs from its node's id). t is not changed.
func (t NodeTable) Set(id string, n Node) NodeTable {
	return t.set(id, n, frozen)
}

// Delete returns t without id. t is not changed.
func (t NodeTable) Delete(id string) NodeTable {
	return t.del(id, frozen)
}

func (t NodeTable) set(id string, n Node, edit *batchEdit) NodeTable {
	root, added := setEntry(t.root, 0, &tableEntry{hash: hashID(id), id: id, node: n}, edit)
	if added {
		t.n++
	}
	t.root = root
	return t
}

func (t NodeTable) del(id string, edit *batchEdit) NodeTable {
	root, removed := delEntry(t.root, 0, hashID(id), id, edit)
	if removed {
		t.n--
		t.root = root
	}
	return t
}

// setEntry stores e (a fresh entry, next nil) in the subtree n at shift and
// reports whether it added a new id.
func setEntry(n *tableNode, shift uint, e *tableEntry, edit *batchEdit) (*tableNode, bool) {
	bit := fragment(e.hash, shift)
	if n == nil {
		m := newTableNode(bit, 1, edit)
		m.slots[0] = tableSlot{leaf: e, upto: 1}
		return m, true
	}
	i := n.index(bit)
	if n.bitmap&bit == 0 {
		m := n.editable(edit)
		m.slots = slices.Insert(m.slots, i, tableSlot{leaf: e, upto: m.before(i)})
		m.bitmap |= bit
		m.shiftUpto(i, 1)
		return m, true
	}
	s := n.slots[i]
	added := true
	switch {
	case s.child != nil:
		s.child, added = setEntry(s.child, shift+5, e, edit)
	case s.leaf.hash != e.hash:
		s = tableSlot{child: pair(s.leaf, e, shift+5, edit), upto: s.upto}
	default:
		s.leaf, added = withEntry(s.leaf, e)
	}
	m := n.editable(edit)
	m.slots[i] = s
	if added {
		m.shiftUpto(i, 1)
	}
	return m, added
}

// chainLen returns the number of ids in the list l.
func chainLen(l *tableEntry) int {
	k := 0
	for ; l != nil; l = l.next {
		k++
	}
	return k
}

// withEntry returns the list l (one hash, ids ascending) with e set,
// copying the entries before e's place.
func withEntry(l, e *tableEntry) (*tableEntry, bool) {
	switch {
	case l == nil:
		return e, true
	case l.id == e.id:
		out := *e
		out.next = l.next
		return &out, false
	case e.id < l.id:
		out := *e
		out.next = l
		return &out, true
	}
	out := *l
	next, added := withEntry(l.next, e)
	out.next = next
	return &out, added
}

// withoutEntry returns the list l without id, copying the entries before
// its place.
func withoutEntry(l *tableEntry, id string) (*tableEntry, bool) {
	switch {
	case l == nil:
		return nil, false
	case l.id == id:
		return l.next, true
	}
	next, removed := withoutEntry(l.next, id)
	if !removed {
		return l, false
	}
	out := *l
	out.next = next
	return &out, true
}

// pair returns a subtree at shift holding the list l and the entry e, whose
// hashes differ.
func pair(l, e *tableEntry, shift uint, edit *batchEdit) *tableNode {
	bl, be := fragment(l.hash, shift), fragment(e.hash, shift)
	nl := chainLen(l)
	if bl == be {
		m := newTableNode(bl, 1, edit)
		m.slots[0] = tableSlot{child: pair(l, e, shift+5, edit), upto: nl + 1}
		return m
	}
	m := newTableNode(bl|be, 2, edit)
	m.slots[0], m.slots[1] = tableSlot{leaf: l, upto: nl}, tableSlot{leaf: e, upto: nl + 1}
	if be < bl {
		m.slots[0], m.slots[1] = tableSlot{leaf: e, upto: 1}, tableSlot{leaf: l, upto: nl + 1}
	}
	return m
}

// delEntry removes id from the subtree n at shift. A subtree left with the
// ids of a single hash collapses into its parent's slot, so the trie's shape
// depends only on its ids.
func delEntry(n *tableNode, shift uint, h uint64, id string, edit *batchEdit) (*tableNode, bool) {
	if n == nil {
		return nil, false
	}
	bit := fragment(h, shift)
	if n.bitmap&bit == 0 {
		return n, false
	}
	i := n.index(bit)
	s := n.slots[i]
	if s.child != nil {
		c, removed := delEntry(s.child, shift+5, h, id, edit)
		if !removed {
			return n, false
		}
		if len(c.slots) == 1 && c.slots[0].child == nil {
			s = tableSlot{leaf: c.slots[0].leaf, upto: s.upto}
		} else {
			s.child = c
		}
	} else {
		rest, removed := withoutEntry(s.leaf, id)
		if !removed {
			return n, false
		}
		if rest == nil {
			if len(n.slots) == 1 {
				return nil, true
			}
			m := n.editable(edit)
			m.slots = slices.Delete(m.slots, i, i+1)
			m.bitmap &^= bit
			m.shiftUpto(i, -1)
			return m, true
		}
		s.leaf = rest
	}
	m := n.editable(edit)
	m.slots[i] = s
	m.shiftUpto(i, -1)
	return m, true
}

// All yields every id and node, in an order fixed by the ids alone (not
// sorted; use IDs for ascending order).
func (t NodeTable) All() iter.Seq2[string, Node] {
	return func(yield func(string, Node) bool) { walk(t.root, yield) }
}

func walk(n *tableNode, yield func(string, Node) bool) bool {
	if n == nil {
		return true
	}
	for i := range n.slots {
		s := &n.slots[i]
		if s.child != nil {
			if !walk(s.child, yield) {
				return false
			}
			continue
		}
		for e := s.leaf; e != nil; e = e.next {
			if !yield(e.id, e.node) {
				return false
			}
		}
	}
	return true
}

// IDs returns every id in ascending order.
func (t NodeTable) IDs() []string {
	out := make([]string, 0, t.n)
	for id := range t.All() {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Equal reports whether t and u hold the same ids with equal nodes.
func (t NodeTable) Equal(u NodeTable) bool {
	if t.n != u.n {
		return false
	}
	if t.root == u.root {
		return true
	}
	for id, n := range t.All() {
		if m, ok := u.Get(id); !ok || m != n {
			return false
		}
	}
	return true
}

// String renders the table like a map, by ascending id.
func (t NodeTable) String() string {
	var b strings.Builder
	b.WriteString("NodeTable[")
	for i, id := range t.IDs() {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%+v", id, t.Node(id))
	}
	b.WriteByte(']')
	return b.String()
}

// NewNodeTable returns a table holding nodes under their ids; a later node
// replaces an earlier one with the same id.
func NewNodeTable(nodes ...Node) NodeTable {
	edit := &batchEdit{}
	var t NodeTable
	for _, n := range nodes {
		t = t.set(n.ID, n, edit)
	}
	return t
}

// nodeTableOf returns a table holding m.
func nodeTableOf(m map[string]Node) NodeTable {
	edit := &batchEdit{}
	var t NodeTable
	for id, n := range m {
		t = t.set(id, n, edit)
	}
	return t
}
