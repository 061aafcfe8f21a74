package fake_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// annotationStore keeps locks as a Node-annotation store shared with HAMi
// does: the main annotation in HAMi's 3-part format, the UID and epoch in the
// sidecar annotation (lock.EncodeNode), a release keeping the sidecar, and one
// resourceVersion per node covering every annotation.
type annotationStore struct {
	mu      sync.Mutex
	nodes   map[string]map[string]string
	rv      map[string]string
	counter int
}

func newAnnotationStore() *annotationStore {
	return &annotationStore{nodes: map[string]map[string]string{}, rv: map[string]string{}}
}

func (s *annotationStore) Get(_ context.Context, key lock.Key) (lock.Observation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return lock.NodeObservation(key, s.nodes[key.Node], s.rv[key.Node]), nil
}

// write applies f to the node's annotations at version pre.Version.
func (s *annotationStore) write(key lock.Key, pre lock.Precondition, f func(obs lock.Observation, ann map[string]string) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv[key.Node] != pre.Version {
		return fmt.Errorf("%w: node %s is at %q, not %q", lock.ErrConflict, key.Node, s.rv[key.Node], pre.Version)
	}
	if s.nodes[key.Node] == nil {
		s.nodes[key.Node] = map[string]string{}
	}
	ann := s.nodes[key.Node]
	obs := lock.NodeObservation(key, ann, s.rv[key.Node])
	if obs.Present != pre.Present || obs.Raw != pre.Raw {
		return fmt.Errorf("%w: %s changed", lock.ErrConflict, key)
	}
	if err := f(obs, ann); err != nil {
		return err
	}
	s.counter++
	s.rv[key.Node] = strconv.Itoa(s.counter)
	return nil
}

func (s *annotationStore) CompareAndSwap(_ context.Context, key lock.Key, pre lock.Precondition, rec lock.Record) error {
	return s.write(key, pre, func(obs lock.Observation, ann map[string]string) error {
		if rec.Epoch != obs.EpochHigh+1 {
			return fmt.Errorf("%w: epoch %d after %d", lock.ErrConflict, rec.Epoch, obs.EpochHigh)
		}
		ann[key.Name], ann[lock.SidecarAnnotation(key.Name)] = lock.EncodeNode(rec)
		return nil
	})
}

func (s *annotationStore) CompareAndDelete(_ context.Context, key lock.Key, pre lock.Precondition) error {
	if !pre.Present {
		return fmt.Errorf("%w: nothing to delete", lock.ErrConflict)
	}
	return s.write(key, pre, func(_ lock.Observation, ann map[string]string) error {
		delete(ann, key.Name) // the sidecar stays: it keeps the high-water mark
		return nil
	})
}

// put overwrites the main annotation as HAMi's scheduler does, leaving the
// sidecar alone.
func (s *annotationStore) put(key lock.Key, raw string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[key.Node][key.Name] = raw
	s.counter++
	s.rv[key.Node] = strconv.Itoa(s.counter)
}

// TestCheckLockStoreReadsTheSidecar runs the lock-store suite against a store
// in HAMi's wire format: every record must read back whole from the value and
// its sidecar.
func TestCheckLockStoreReadsTheSidecar(t *testing.T) {
	for _, v := range fake.CheckLockStore(context.Background(), func() lock.Store { return newAnnotationStore() }) {
		t.Error(v)
	}
}

// TestAllocateReadsTheSidecar binds a pod with its locks in HAMi's wire
// format, where the epoch lives only in the sidecar: the device plugin's
// fence must verify and release both locks; after a HAMi scheduler rewrote
// the main value (the sidecar no longer matches) it must refuse.
func TestAllocateReadsTheSidecar(t *testing.T) {
	ctx := context.Background()
	for _, stolen := range []bool{false, true} {
		t.Run(fmt.Sprintf("stolen=%v", stolen), func(t *testing.T) {
			b := newBindWorld(t, 3, "p1")
			store := newAnnotationStore()
			b.g.Locks.Inner = store
			out, err := b.bind(ctx, "p1", gpu.Options{})
			if err != nil || !out.Bound {
				t.Fatalf("bind: %+v %v", out, err)
			}
			held := b.held(t)
			for _, name := range []string{gpu.LockCambricon, gpu.LockNvidia} {
				if r, f, err := lock.Decode(held[name]); err != nil || f != lock.FormatHAMi || r.Epoch != 0 {
					t.Fatalf("lock %s holds %q, want a HAMi-format value without the epoch", name, held[name])
				}
			}
			if stolen {
				key := lock.Key{Name: gpu.LockNvidia, Node: "n1"}
				obs, _ := store.Get(ctx, key)
				r, _, _ := lock.Decode(obs.Raw)
				r.Time = r.Time.Add(time.Second) // HAMi re-stamps for the same pod
				store.put(key, lock.Encode(r, lock.FormatHAMi))
			}
			err = b.g.Allocate(ctx, b.ref("p1"), "n1", []string{gpu.LockCambricon, gpu.LockNvidia})
			wantPhase, wantHeld := gpu.PhaseSuccess, map[string]string{gpu.LockCambricon: "", gpu.LockNvidia: ""}
			if stolen {
				if !errors.Is(err, fake.ErrFenceRejected) {
					t.Fatalf("allocate under a stolen lock: %v, want ErrFenceRejected", err)
				}
				wantPhase, wantHeld = gpu.PhaseFailed, held
				obs, _ := store.Get(ctx, lock.Key{Name: gpu.LockNvidia, Node: "n1"})
				wantHeld[gpu.LockNvidia] = obs.Raw
			} else if err != nil {
				t.Fatalf("allocate: %v", err)
			}
			if got := b.pod("p1").Annotations[gpu.AnnoBindPhase]; got != wantPhase {
				t.Errorf("bind-phase %q, want %q", got, wantPhase)
			}
			if diff := cmp.Diff(wantHeld, b.held(t)); diff != "" {
				t.Errorf("locks after allocate (-want +got):\n%s", diff)
			}
		})
	}
}
