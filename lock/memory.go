package lock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// MemoryStore is an in-memory Store: linearizable, clock-free, with a change
// channel per key. Values are written in the extended format, so records need a
// UID. Each key keeps its value, a version and an epoch high-water mark; the
// version comes from one store-wide counter and moves on every write, deletes
// included, so an absent key has a version too and ABA is impossible.
//
// Keys are grouped per node, each with its own mutex (HAMi's nodeLockManager
// keeps one sync.Mutex per node, #714, #1395), so nodes never contend with each
// other. DeleteNode drops a node's entries, as HAMi's CleanupNodeLock does on a
// Node delete, without letting a later grant reuse an epoch.
//
// For fault injection (spurious conflicts, lost responses, latency) wrap it in
// fake.LockStore.
type MemoryStore struct {
	mu    sync.Mutex
	nodes map[string]map[string]*memEntry
	// floor is the highest epoch of any deleted entry; new entries start
	// there, so epochs stay strictly increasing across a node's deletion.
	floor   uint64
	version atomic.Uint64
}

type memEntry struct {
	mu        sync.Mutex
	deleted   bool
	present   bool
	raw       string
	version   uint64
	epochHigh uint64
	changed   chan struct{}
}

// NewMemoryStore returns an empty store. The zero MemoryStore is usable too.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{nodes: map[string]map[string]*memEntry{}}
}

// entry returns key's entry, locked, creating it when create is set; without
// create it may return nil and the epoch floor for a key never written.
func (s *MemoryStore) entry(key Key, create bool) (*memEntry, uint64) {
	for {
		s.mu.Lock()
		e := s.nodes[key.Node][key.Name]
		if e == nil {
			if !create {
				floor := s.floor
				s.mu.Unlock()
				return nil, floor
			}
			e = &memEntry{epochHigh: s.floor}
			if s.nodes == nil {
				s.nodes = map[string]map[string]*memEntry{} // the zero MemoryStore is usable
			}
			if s.nodes[key.Node] == nil {
				s.nodes[key.Node] = map[string]*memEntry{}
			}
			s.nodes[key.Node][key.Name] = e
		}
		s.mu.Unlock()
		e.mu.Lock()
		if !e.deleted {
			return e, 0
		}
		// DeleteNode removed it between the map lookup and the lock.
		e.mu.Unlock()
	}
}

// Get implements Store.
func (s *MemoryStore) Get(_ context.Context, key Key) (Observation, error) {
	if err := key.Validate(); err != nil {
		return Observation{}, err
	}
	e, floor := s.entry(key, false)
	if e == nil {
		return Observation{Key: key, Version: "0", EpochHigh: floor}, nil
	}
	defer e.mu.Unlock()
	return Observation{Key: key, Present: e.present, Raw: e.raw, Version: strconv.FormatUint(e.version, 10), EpochHigh: e.epochHigh}, nil
}

// matches reports whether pre describes e.
func (e *memEntry) matches(pre Precondition) bool {
	return pre.Present == e.present && (!pre.Present || pre.Raw == e.raw) &&
		pre.Version == strconv.FormatUint(e.version, 10)
}

func (s *MemoryStore) wrote(e *memEntry) {
	e.version = s.version.Add(1)
	if e.changed != nil {
		close(e.changed)
		e.changed = nil
	}
}

// CompareAndSwap implements Store.
func (s *MemoryStore) CompareAndSwap(_ context.Context, key Key, pre Precondition, rec Record) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if err := checkExtended(rec); err != nil {
		return err
	}
	e, _ := s.entry(key, true)
	defer e.mu.Unlock()
	if !e.matches(pre) {
		return fmt.Errorf("%w: %s no longer %s", ErrConflict, key, pre)
	}
	if rec.Epoch != e.epochHigh+1 {
		return fmt.Errorf("%w: %s epoch %d is not the next after %d", ErrConflict, key, rec.Epoch, e.epochHigh)
	}
	e.present, e.raw, e.epochHigh = true, Encode(rec, FormatExtended), rec.Epoch
	s.wrote(e)
	return nil
}

// checkExtended rejects a record the extended format cannot carry.
func checkExtended(rec Record) error { return rec.ValidateExtended() }

// ValidateExtended reports, wrapping ErrInvalidInput, every field that keeps
// rec from being written in the extended format: an empty namespace, name or
// UID, a zero epoch. Stores call it before a write.
func (r Record) ValidateExtended() error {
	p := field.NewPath("record")
	var errs field.ErrorList
	if r.Namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), "the holder's namespace"))
	}
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "the holder's name"))
	}
	if r.UID == "" {
		errs = append(errs, field.Required(p.Child("uid"), "the extended format needs the holder's UID"))
	}
	if r.Epoch == 0 {
		errs = append(errs, field.Invalid(p.Child("epoch"), r.Epoch, "must be at least 1"))
	}
	return plancore.Invalid(ErrInvalidInput, errs)
}

// CompareAndDelete implements Store. The epoch high-water mark stays.
func (s *MemoryStore) CompareAndDelete(_ context.Context, key Key, pre Precondition) error {
	if err := key.Validate(); err != nil {
		return err
	}
	e, _ := s.entry(key, true)
	defer e.mu.Unlock()
	if !pre.Present || !e.matches(pre) {
		return fmt.Errorf("%w: %s no longer %s", ErrConflict, key, pre)
	}
	e.present, e.raw = false, ""
	s.wrote(e)
	return nil
}

// Put writes raw unconditionally, as another writer (HAMi, a human) would: for
// seeding tests and tools with legacy, HAMi-format or malformed values. An
// extended value's epoch raises the high-water mark.
func (s *MemoryStore) Put(key Key, raw string) error {
	if err := key.Validate(); err != nil {
		return err
	}
	e, _ := s.entry(key, true)
	defer e.mu.Unlock()
	if r, f, err := Decode(raw); err == nil && f == FormatExtended {
		e.epochHigh = max(e.epochHigh, r.Epoch)
	}
	e.present, e.raw = true, raw
	s.wrote(e)
	return nil
}

// Changes implements Notifier.
func (s *MemoryStore) Changes(key Key) <-chan struct{} {
	if key.Validate() != nil {
		return nil
	}
	e, _ := s.entry(key, true)
	defer e.mu.Unlock()
	if e.changed == nil {
		e.changed = make(chan struct{})
	}
	return e.changed
}

// DeleteNode forgets every lock of node, as when the Node object is deleted,
// and wakes anyone waiting on them. A key of the node written later starts
// from an epoch above every epoch the store has deleted.
func (s *MemoryStore) DeleteNode(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.nodes[node] {
		e.mu.Lock()
		e.deleted = true
		s.floor = max(s.floor, e.epochHigh)
		if e.changed != nil {
			close(e.changed)
			e.changed = nil
		}
		e.mu.Unlock()
	}
	delete(s.nodes, node)
}

// Len returns how many nodes the store keeps entries for, to check that
// DeleteNode really frees memory.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.nodes)
}
