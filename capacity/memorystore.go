package capacity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/plancore/plancore"
)

// DefaultShards is MemoryStore's default number of shards.
const DefaultShards = 64

// MemoryStoreOptions configure a MemoryStore; its leases run on the wall
// clock unless Clock is set.
type MemoryStoreOptions struct {
	Options
	// Shards is the number of mutex-guarded shards node ids hash onto.
	// Default 64. Negative is invalid.
	Shards int
	// Clock is the store's clock, the only one its leases and heartbeats are
	// measured with. Nil means the wall clock; tests pass a fake.Clock.
	Clock clock.PassiveClock
}

// Validate reports every field out of range, as a *plancore.InvalidError
// wrapping ErrInvalidOptions.
func (o MemoryStoreOptions) Validate() error {
	var errs field.ErrorList
	var inv *plancore.InvalidError
	if err := o.Options.Validate(); errors.As(err, &inv) {
		errs = append(errs, inv.Errors...)
	}
	if o.Shards < 0 {
		errs = append(errs, field.Invalid(field.NewPath("shards"), o.Shards, "must not be negative"))
	}
	return plancore.Invalid(ErrInvalidOptions, errs)
}

type memShard struct {
	mu    sync.Mutex
	nodes map[string]*nodeState
	_     [40]byte // keep neighbouring shards' mutexes off one cache line
}

// MemoryStore is the in-memory SlotStore for a single scheduler process. Node ids
// hash onto shards, each a mutex over node → accounting state; an operation on
// one node locks one shard, so it is linearizable, and a batch locks its shards
// in ascending index order, so it is atomic and cannot deadlock. It answers
// exactly as NodeLedger does for the same operations at the same times. Make
// one with NewMemoryStore: every method of the zero MemoryStore returns an
// error wrapping ErrNilStore.
//
// The seed reads current_jobs under the node table's lock, drops it, then
// checks reservations under another lock, a small race; here the
// heartbeat and the reservations of a node sit under one mutex.
type MemoryStore struct {
	opts   Options
	clock  func() time.Time
	shards []memShard
}

var _ SlotStore = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore(o MemoryStoreOptions) (*MemoryStore, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	n := o.Shards
	if n == 0 {
		n = DefaultShards
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	s := &MemoryStore{opts: o.Options.WithDefaults(), clock: clk.Now, shards: make([]memShard, n)}
	for i := range s.shards {
		s.shards[i].nodes = map[string]*nodeState{}
	}
	return s, nil
}

// ready reports a zero store (not made by NewMemoryStore) as an error.
func (s *MemoryStore) ready() error {
	if s == nil || len(s.shards) == 0 {
		return errNilStore()
	}
	return nil
}

// Options returns the store's options with defaults applied.
func (s *MemoryStore) Options() Options { return s.opts }

// shardOf hashes id with FNV-1a, inline so the hot path does not allocate.
func (s *MemoryStore) shardOf(id string) int {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h % uint32(len(s.shards)))
}

// with runs f on node id's state under its shard lock, creating the state if
// needed and dropping it again when f leaves it empty.
func (s *MemoryStore) with(id string, f func(st *nodeState)) {
	sh := &s.shards[s.shardOf(id)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s.withLocked(sh, id, f)
}

func (s *MemoryStore) withLocked(sh *memShard, id string, f func(st *nodeState)) {
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
func (s *MemoryStore) Reserve(ctx context.Context, r Reservation) (ReserveResult, error) {
	if err := s.ready(); err != nil {
		return ReserveResult{}, err
	}
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
func (s *MemoryStore) ReserveBatch(ctx context.Context, items []Reservation, mode BatchMode) (BatchResult, error) {
	if err := s.ready(); err != nil {
		return BatchResult{}, err
	}
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
	errs := ValidateBatch(items, mode, o)
	if errs != nil {
		return nil, errs
	}
	out := make([]Reservation, len(items))
	for i, it := range items {
		out[i], _ = it.Resolve(o)
	}
	return out, nil
}

// ValidateBatch reports every problem of a ReserveBatch call at once, as a
// *plancore.InvalidError wrapping ErrInvalidInput: an unknown mode, more
// items than o.MaxBatch, and each item's bad fields (items[2].rid). Every
// SlotStore checks its batches this way.
func ValidateBatch(items []Reservation, mode BatchMode, o Options) error {
	o = o.WithDefaults()
	var errs field.ErrorList
	switch mode {
	case "", AllOrNothing, Partial:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("mode"), string(mode), []string{string(AllOrNothing), string(Partial)}))
	}
	if len(items) > o.MaxBatch {
		errs = append(errs, field.TooMany(field.NewPath("items"), len(items), o.MaxBatch))
	}
	for i, it := range items {
		// Only a bad item costs anything (errors.As's target and the item's
		// path live on the heap): a store checks every batch.
		_, err := it.Resolve(o)
		if err == nil {
			continue
		}
		var inv *plancore.InvalidError
		if errors.As(err, &inv) {
			path := field.NewPath("items").Index(i)
			for _, e := range inv.Errors {
				e2 := *e
				e2.Field = path.String() + "." + e.Field
				errs = append(errs, &e2)
			}
		}
	}
	return plancore.Invalid(ErrInvalidInput, errs)
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
	if refused && mode != Partial {
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
func (s *MemoryStore) Ack(ctx context.Context, a Ack) (AckStatus, error) {
	if err := s.ready(); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if err := a.Validate(); err != nil {
		return "", err
	}
	var st AckStatus
	s.with(a.Node, func(n *nodeState) { st = n.ack(s.clock(), a, s.opts) })
	return st, nil
}

// Release drops a pending lease; see SlotStore.
func (s *MemoryStore) Release(ctx context.Context, node, rid string) (bool, error) {
	if err := s.ready(); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if err := plancore.Invalid(ErrInvalidInput, append(validateNodeID("node", node), validateRID(rid)...)); err != nil {
		return false, err
	}
	var ok bool
	s.with(node, func(n *nodeState) { ok = n.release(s.clock(), rid) })
	return ok, nil
}

// Heartbeat applies a node's heartbeat; see SlotStore.
func (s *MemoryStore) Heartbeat(ctx context.Context, node string, h Heartbeat) (HeartbeatStatus, error) {
	if err := s.ready(); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if err := ValidateNodeID(node); err != nil {
		return "", err
	}
	if err := h.Validate(); err != nil {
		return "", err
	}
	var st HeartbeatStatus
	var err error
	s.with(node, func(n *nodeState) { st, err = n.heartbeat(s.clock(), node, h, s.opts) })
	return st, err
}

// Loads reports each node, in the order asked; see SlotStore.
func (s *MemoryStore) Loads(ctx context.Context, nodes []string) ([]NodeLoad, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
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
			out[i] = st.load(now, id, s.opts)
		} else {
			out[i] = NodeLoad{ID: id, Max: s.opts.MaxJobs}
		}
		sh.mu.Unlock()
	}
	return out, nil
}
