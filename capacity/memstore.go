package capacity

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// DefaultShards is MemStore's default number of shards.
const DefaultShards = 64

// MemStoreOptions configure a MemStore.
type MemStoreOptions struct {
	Options
	// Shards is the number of mutex-guarded shards node ids hash onto.
	// Default 64. Negative is invalid.
	Shards int
	// Clock is the store's clock. Required: core packages never read the wall
	// clock, so a live process passes time.Now and tests a fake clock.
	Clock func() time.Time
}

// Validate reports the first field out of range, wrapping ErrInvalidOptions.
func (o MemStoreOptions) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	switch {
	case o.Shards < 0:
		return fmt.Errorf("%w: Shards %d is negative", ErrInvalidOptions, o.Shards)
	case o.Clock == nil:
		return fmt.Errorf("%w: Clock is nil (pass time.Now or a fake clock)", ErrInvalidOptions)
	}
	return nil
}

type memShard struct {
	mu    sync.Mutex
	nodes map[string]*nodeState
	_     [40]byte // keep neighbouring shards' mutexes off one cache line
}

// MemStore is the in-memory SlotStore for a single scheduler process. Node ids
// hash onto shards, each a mutex over node → accounting state; an operation on
// one node locks one shard, so it is linearizable, and a batch locks its shards
// in ascending index order, so it is atomic and cannot deadlock. It answers
// exactly as NodeLedger does for the same operations at the same times.
//
// The seed reads current_jobs under the node table's lock, drops it, then
// checks reservations under another lock (§1.3), a small race; here the
// heartbeat and the reservations of a node sit under one mutex.
type MemStore struct {
	opts   Options
	clock  func() time.Time
	shards []memShard
}

var _ SlotStore = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore(o MemStoreOptions) (*MemStore, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	n := o.Shards
	if n == 0 {
		n = DefaultShards
	}
	s := &MemStore{opts: o.Options.WithDefaults(), clock: o.Clock, shards: make([]memShard, n)}
	for i := range s.shards {
		s.shards[i].nodes = map[string]*nodeState{}
	}
	return s, nil
}

// Options returns the store's options with defaults applied.
func (s *MemStore) Options() Options { return s.opts }

// shardOf hashes id with FNV-1a, inline so the hot path does not allocate.
func (s *MemStore) shardOf(id string) int {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h % uint32(len(s.shards)))
}

// with runs f on node id's state under its shard lock, creating the state if
// needed and dropping it again when f leaves it empty.
func (s *MemStore) with(id string, f func(st *nodeState)) {
	sh := &s.shards[s.shardOf(id)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s.withLocked(sh, id, f)
}

func (s *MemStore) withLocked(sh *memShard, id string, f func(st *nodeState)) {
	st, ok := sh.nodes[id]
	if !ok {
		st = &nodeState{}
	}
	f(st)
	switch {
	case st.empty() && ok:
		delete(sh.nodes, id)
	case !st.empty() && !ok:
		sh.nodes[id] = st
	}
}

// Reserve asks for a pending lease; see SlotStore.
func (s *MemStore) Reserve(ctx context.Context, r Reservation) (ReserveResult, error) {
	if err := ctx.Err(); err != nil {
		return ReserveResult{}, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	r, err := r.Resolve(s.opts)
	if err != nil {
		return ReserveResult{}, err
	}
	var res ReserveResult
	s.with(r.Node, func(st *nodeState) { res = st.reserve(s.clock(), r, s.opts) })
	return res, nil
}

// ReserveBatch reserves several items atomically under the shards' locks,
// taken in ascending order; see SlotStore.
func (s *MemStore) ReserveBatch(ctx context.Context, items []Reservation, mode BatchMode) (BatchResult, error) {
	if err := ctx.Err(); err != nil {
		return BatchResult{}, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	items, err := validateBatch(items, mode, s.opts)
	if err != nil {
		return BatchResult{}, err
	}
	idx := make([]int, 0, len(items))
	for _, it := range items {
		idx = append(idx, s.shardOf(it.Node))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range slices.Backward(idx) {
			s.shards[i].mu.Unlock()
		}
	}()
	now := s.clock()
	states := make(map[string]*nodeState, len(idx))
	res := reserveBatch(now, items, mode, s.opts, func(node string) *nodeState {
		st, ok := states[node]
		if !ok {
			if st, ok = s.shards[s.shardOf(node)].nodes[node]; !ok {
				st = &nodeState{}
			}
			states[node] = st
		}
		return st
	})
	for node, st := range states {
		sh := &s.shards[s.shardOf(node)]
		if st.empty() {
			delete(sh.nodes, node)
		} else {
			sh.nodes[node] = st
		}
	}
	return res, nil
}

// validateBatch validates and defaults every item and the batch's size.
func validateBatch(items []Reservation, mode BatchMode, o Options) ([]Reservation, error) {
	if mode > Partial {
		return nil, fmt.Errorf("%w: batch mode %v is unknown", ErrInvalidInput, mode)
	}
	if len(items) > o.MaxBatch {
		return nil, fmt.Errorf("%w: batch of %d items exceeds MaxBatch %d", ErrInvalidInput, len(items), o.MaxBatch)
	}
	out := make([]Reservation, len(items))
	for i, it := range items {
		v, err := it.Resolve(o)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

// reserveBatch decides items in order against the states get returns; in
// AllOrNothing mode a refusal undoes every grant of the batch.
func reserveBatch(now time.Time, items []Reservation, mode BatchMode, o Options, get func(node string) *nodeState) BatchResult {
	res := BatchResult{Items: make([]ReserveResult, len(items)), Committed: true}
	refused := false
	for i, it := range items {
		res.Items[i] = get(it.Node).reserve(now, it, o)
		if !res.Items[i].Status.Granted() {
			refused = true
		}
	}
	if refused && mode == AllOrNothing {
		for i, it := range items {
			if res.Items[i].Status == ReserveOK {
				get(it.Node).release(now, it.RID) // already purged at now
			}
		}
		res.Committed = false
	}
	return res
}

// Ack records the node's acknowledgement; see SlotStore.
func (s *MemStore) Ack(ctx context.Context, a Ack) (AckStatus, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if err := a.Validate(); err != nil {
		return 0, err
	}
	var st AckStatus
	s.with(a.Node, func(n *nodeState) { st = n.ack(s.clock(), a, s.opts) })
	return st, nil
}

// Release drops a pending lease; see SlotStore.
func (s *MemStore) Release(ctx context.Context, node, rid string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if err := ValidateNodeID(node); err != nil {
		return false, err
	}
	if err := validateRID(rid); err != nil {
		return false, err
	}
	var ok bool
	s.with(node, func(n *nodeState) { ok = n.release(s.clock(), rid) })
	return ok, nil
}

// Heartbeat applies a node's heartbeat; see SlotStore.
func (s *MemStore) Heartbeat(ctx context.Context, node string, h Heartbeat) (HeartbeatStatus, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if err := ValidateNodeID(node); err != nil {
		return 0, err
	}
	if err := h.Validate(node); err != nil {
		return 0, err
	}
	var st HeartbeatStatus
	var err error
	s.with(node, func(n *nodeState) { st, err = n.heartbeat(s.clock(), node, h, s.opts) })
	return st, err
}

// Loads reports each node, in the order asked; see SlotStore.
func (s *MemStore) Loads(ctx context.Context, nodes []string) ([]NodeLoad, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	for _, n := range nodes {
		if err := ValidateNodeID(n); err != nil {
			return nil, err
		}
	}
	now := s.clock()
	out := make([]NodeLoad, len(nodes))
	for i, id := range nodes {
		sh := &s.shards[s.shardOf(id)]
		sh.mu.Lock()
		if st, ok := sh.nodes[id]; ok {
			out[i] = st.load(now, id)
		} else {
			out[i] = NodeLoad{ID: id}
		}
		sh.mu.Unlock()
	}
	return out, nil
}
