package fake

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/plancore/plancore/vcluster"
)

// Kinds of the calls VClusterStore makes through World.Do, for fault
// injection and call counting.
const (
	VClusterFlushKind   = "vcluster.flush"
	VClusterDeleteKind  = "vcluster.delete"
	VClusterPublishKind = "vcluster.publish"
)

// VClusterStore is an in-memory vcluster.Executor: a record table (the
// anchor's Redis virtual-cluster table) and a publish channel fanned out to
// subscribed workers. Records are stored encoded, as a real store would, so
// a caller can never alias stored state.
type VClusterStore struct {
	w *World

	mu        sync.Mutex
	records   map[string][]byte
	published []vcluster.Record
	workers   []*VClusterWorker
}

// NewVClusterStore returns an empty store whose calls go through w.
func NewVClusterStore(w *World) *VClusterStore {
	return &VClusterStore{w: w, records: map[string][]byte{}}
}

var _ vcluster.Executor = (*VClusterStore)(nil)

// FlushRecord stores r under r.ID, replacing any previous record.
func (s *VClusterStore) FlushRecord(_ context.Context, r vcluster.Record) error {
	return s.w.Do(VClusterFlushKind, r.ID, func() error {
		data, err := vcluster.MarshalRecord(r)
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.records[r.ID] = data
		return nil
	})
}

// DeleteRecord deletes the record of id; an absent record is not an error.
func (s *VClusterStore) DeleteRecord(_ context.Context, id string) error {
	return s.w.Do(VClusterDeleteKind, id, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.records, id)
		return nil
	})
}

// PublishRecord appends r to the publish log and delivers it to every
// subscribed worker.
func (s *VClusterStore) PublishRecord(_ context.Context, r vcluster.Record) error {
	return s.w.Do(VClusterPublishKind, r.ID, func() error {
		data, err := vcluster.MarshalRecord(r)
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, w := range s.workers {
			w.receive(data)
		}
		cp, err := vcluster.UnmarshalRecord(data)
		if err != nil {
			return err
		}
		s.published = append(s.published, cp)
		return nil
	})
}

// LoadRecords returns every stored record in id order, as PlanRecover takes
// them after a restart.
func (s *VClusterStore) LoadRecords(context.Context) ([]vcluster.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]vcluster.Record, 0, len(s.records))
	for _, id := range slices.Sorted(maps.Keys(s.records)) {
		r, err := vcluster.UnmarshalRecord(s.records[id])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Records is LoadRecords for tests: it never fails on records this store
// wrote.
func (s *VClusterStore) Records() []vcluster.Record {
	out, _ := s.LoadRecords(context.Background())
	return out
}

// Published returns every published record, in publish order.
func (s *VClusterStore) Published() []vcluster.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.published)
}

// Subscribe returns a worker that receives every record published from now
// on, as a raylet does.
func (s *VClusterStore) Subscribe() *VClusterWorker {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &VClusterWorker{clusters: map[string]vcluster.Record{}}
	s.workers = append(s.workers, w)
	return w
}

// VClusterWorker is a subscribed worker's view: the latest record of every
// indivisible and job cluster it was sent, removals applied. Workers
// schedule from this view.
type VClusterWorker struct {
	mu       sync.Mutex
	clusters map[string]vcluster.Record
	received int
}

func (w *VClusterWorker) receive(data []byte) {
	r, err := vcluster.UnmarshalRecord(data)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.received++
	if r.Removed {
		delete(w.clusters, r.ID)
		return
	}
	w.clusters[r.ID] = r
}

// Clusters returns the worker's view in id order.
func (w *VClusterWorker) Clusters() []vcluster.Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]vcluster.Record, 0, len(w.clusters))
	for _, id := range slices.Sorted(maps.Keys(w.clusters)) {
		out = append(out, w.clusters[id])
	}
	return out
}

// Received counts the messages the worker got.
func (w *VClusterWorker) Received() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.received
}
