package fake

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// EventType is the kind of a change the informer delivers.
type EventType string

const (
	watchAdded    EventType = "ADDED"
	watchModified EventType = "MODIFIED"
	watchDeleted  EventType = "DELETED"
)

// The informer's event types, as in a watch.
const (
	EventAdded    = watchAdded
	EventModified = watchModified
	EventDeleted  = watchDeleted
)

// PodEvent is one change the informer delivered to its handlers.
type PodEvent struct {
	Type EventType
	// Pod is the pod after the change (for a delete, its last state).
	Pod corev1.Pod
	// At is when the change happened in the store; the informer delivered it
	// at or after At, at most Lag later.
	At time.Time
}

// Informer is a PodStore's cached view. Changes reach it after a seeded delay
// (PodStoreOptions.Lag), in order per pod, so a controller reading it sees the
// stale caches expectations exist for. Reads deliver every change due at the
// World's current time first.
type Informer struct {
	store    *PodStore
	cache    map[objKey]*corev1.Pod
	queue    []delivery
	last     map[objKey]time.Time // latest delivery time scheduled per pod
	seq      uint64
	handlers []func(PodEvent)
}

type delivery struct {
	due time.Time
	seq uint64
	key objKey
	ev  PodEvent
}

// emit schedules the delivery of a change that happened at at. It must hold
// the store's lock.
func (s *PodStore) emit(at time.Time, t EventType, p *corev1.Pod) {
	inf := s.inf
	k := objKey{p.Namespace, p.Name}
	ev := PodEvent{Type: t, Pod: *p.DeepCopy(), At: at}
	// A change still waiting may be superseded: the informer then never shows
	// the state in between, as when a watch misses an event and a relist
	// catches up. Its delivery time is kept, so the bound on staleness holds.
	if s.opts.DropRate > 0 && s.rng.Float64() < s.opts.DropRate {
		for i := len(inf.queue) - 1; i >= 0; i-- {
			d := &inf.queue[i]
			if d.key != k {
				continue
			}
			_, cached := inf.cache[k]
			// Created and deleted unseen: the informer never hears of it. That
			// holds only if no earlier change of the pod is still queued: this
			// Added may have replaced a Deleted that follows a queued Added, and
			// removing it would leave that older state showing forever; the
			// slot then carries the delete instead.
			if ev.Type == watchDeleted && d.ev.Type == watchAdded && !cached && !inf.queuedBefore(i, k) {
				inf.queue = slices.Delete(inf.queue, i, i+1)
				return
			}
			if d.ev.Type == watchAdded && ev.Type == watchModified {
				ev.Type = watchAdded
			}
			d.ev = ev
			return
		}
	}
	due := at
	if s.opts.Lag > 0 {
		due = at.Add(time.Duration(s.rng.Int64N(int64(s.opts.Lag) + 1)))
	}
	if last, ok := inf.last[k]; ok && due.Before(last) {
		due = last
	}
	inf.last[k] = due
	inf.seq++
	d := delivery{due: due, seq: inf.seq, key: k, ev: ev}
	i, _ := slices.BinarySearchFunc(inf.queue, d, compareDelivery)
	inf.queue = slices.Insert(inf.queue, i, d)
}

// queuedBefore reports whether a change of k waits in the queue before index i.
func (inf *Informer) queuedBefore(i int, k objKey) bool {
	for _, d := range inf.queue[:i] {
		if d.key == k {
			return true
		}
	}
	return false
}

func compareDelivery(a, b delivery) int {
	if c := a.due.Compare(b.due); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// AddHandler registers f to be called, in delivery order, with every change
// the informer delivers from now on (as an informer's event handler would be).
// Handlers run synchronously during reads, after the store's lock is released.
func (inf *Informer) AddHandler(f func(PodEvent)) {
	inf.store.mu.Lock()
	defer inf.store.mu.Unlock()
	inf.handlers = append(inf.handlers, f)
}

// deliverLocked applies every change due by the World's current time (or all
// of them if all is set) and returns the delivered events and the handlers to
// call. It must hold the store's lock.
func (inf *Informer) deliverLocked(all bool) ([]PodEvent, []func(PodEvent)) {
	inf.store.tick()
	now := inf.store.w.Clock.Now()
	n := 0
	for n < len(inf.queue) && (all || !inf.queue[n].due.After(now)) {
		n++
	}
	if n == 0 {
		return nil, nil
	}
	evs := make([]PodEvent, 0, n)
	for _, d := range inf.queue[:n] {
		if d.ev.Type == watchDeleted {
			delete(inf.cache, d.key)
		} else {
			p := d.ev.Pod.DeepCopy()
			inf.cache[d.key] = p
		}
		evs = append(evs, d.ev)
	}
	inf.queue = slices.Delete(inf.queue, 0, n)
	return evs, slices.Clone(inf.handlers)
}

func (inf *Informer) read(all bool, f func()) int {
	inf.store.mu.Lock()
	evs, hs := inf.deliverLocked(all)
	f()
	inf.store.mu.Unlock()
	for _, ev := range evs {
		for _, h := range hs {
			h(ev)
		}
	}
	return len(evs)
}

// List returns the cached pods of namespace ("" for all) matching selector
// (nil: all), sorted by namespace and name.
func (inf *Informer) List(namespace string, selector labels.Selector) []corev1.Pod {
	var out []corev1.Pod
	inf.read(false, func() { out = copyPods(sortedMatching(inf.cache, namespace, selector)) })
	return out
}

// Get returns the cached pod, if the informer has it.
func (inf *Informer) Get(namespace, name string) (corev1.Pod, bool) {
	var out corev1.Pod
	var ok bool
	inf.read(false, func() {
		if p, found := inf.cache[objKey{namespace, name}]; found {
			out, ok = *p.DeepCopy(), true
		}
	})
	return out, ok
}

// Sync delivers every change now, however recent, as a relist would, and
// returns how many it delivered.
func (inf *Informer) Sync() int {
	return inf.read(true, func() {})
}

// Pending returns how many changes have not reached the informer yet.
func (inf *Informer) Pending() int {
	inf.store.mu.Lock()
	defer inf.store.mu.Unlock()
	inf.store.tick()
	return len(inf.queue)
}

// NextDelivery returns when the next waiting change reaches the informer, and
// false if none is waiting. A simulation can advance the clock to it.
func (inf *Informer) NextDelivery() (time.Time, bool) {
	inf.store.mu.Lock()
	defer inf.store.mu.Unlock()
	inf.store.tick()
	if len(inf.queue) == 0 {
		return time.Time{}, false
	}
	return inf.queue[0].due, true
}
