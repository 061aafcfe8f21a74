package expectations

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Tracker is a State behind a mutex, for a live controller whose informer
// handlers, workers and reconciles share one set of expectations. Like the
// State, it never reads a clock: every method that needs the time takes now.
// The zero Tracker is ready to use with the default Options.
// It also counts expiries, for a metric: an expiry means the cache lagged
// beyond the timeout, or a pod got stuck, and deserves an alert.
type Tracker struct {
	mu      sync.Mutex
	s       *State
	expired uint64
	overdue uint64
}

// state returns the State, making an empty one with the default Options on
// first use of a zero Tracker. The caller holds t.mu.
func (t *Tracker) state() *State {
	if t.s == nil {
		t.s = &State{}
	}
	return t.s
}

// Stats are the Tracker's counters since it was built.
type Stats struct {
	// Expired counts items reported Expired (Lingering ones included).
	Expired uint64
	// Overdue counts items that passed their deadline under OnExpiry Block.
	Overdue uint64
}

// NewTracker returns an empty Tracker using o.
func NewTracker(o Options) (*Tracker, error) {
	s, err := New(o)
	if err != nil {
		return nil, err
	}
	return &Tracker{s: s}, nil
}

// Record is State.Record under the lock.
func (t *Tracker) Record(now time.Time, r Record) (Ref, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Record(now, r)
}

// Conclude is State.Conclude under the lock.
func (t *Tracker) Conclude(now time.Time, ref Ref, res CallResult, name string, uid types.UID) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Conclude(now, ref, res, name, uid)
}

// Resolve is State.Resolve under the lock.
func (t *Tracker) Resolve(now time.Time, ref Ref, name string, uid types.UID) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Resolve(now, ref, name, uid)
}

// Rollback is State.Rollback under the lock.
func (t *Tracker) Rollback(ref Ref) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Rollback(ref)
}

// Begin is State.Begin under the lock.
func (t *Tracker) Begin(now time.Time, r Record, mode Recording) (Ticket, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Begin(now, r, mode)
}

// Finish is State.Finish under the lock.
func (t *Tracker) Finish(now time.Time, tk Ticket, res CallResult, name string, uid types.UID) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Finish(now, tk, res, name, uid)
}

// Check is State.Check under the lock.
func (t *Tracker) Check(now time.Time, owner Owner, group string, view *View) (Verdict, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Check(now, owner, group, view)
}

// Satisfied is State.Satisfied under the lock; it counts the expiries it
// reports.
func (t *Tracker) Satisfied(now time.Time, owner Owner, group string, view *View) (Verdict, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, err := t.state().Satisfied(now, owner, group, view)
	t.expired += uint64(len(r.Expired))
	t.overdue += uint64(len(r.Overdue))
	return r, err
}

// CheckInto is State.CheckInto under the lock.
func (t *Tracker) CheckInto(r *Verdict, now time.Time, owner Owner, group string, view *View) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().CheckInto(r, now, owner, group, view)
}

// SatisfiedInto is State.SatisfiedInto under the lock; it counts the expiries
// it reports.
func (t *Tracker) SatisfiedInto(r *Verdict, now time.Time, owner Owner, group string, view *View) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.state().SatisfiedInto(r, now, owner, group, view)
	t.expired += uint64(len(r.Expired))
	t.overdue += uint64(len(r.Overdue))
	return err
}

// Observe is State.Observe under the lock.
func (t *Tracker) Observe(owner Owner, pod ObservedPod) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Observe(owner, pod)
}

// Forget is State.Forget under the lock.
func (t *Tracker) Forget(owner Owner) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Forget(owner)
}

// Prune is State.Prune under the lock.
func (t *Tracker) Prune(now time.Time, live []Owner) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Prune(now, live)
}

// Len is State.Len under the lock.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Len()
}

// Count is State.Count under the lock.
func (t *Tracker) Count(owner Owner) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Count(owner)
}

// Groups is State.Groups under the lock.
func (t *Tracker) Groups(owner Owner) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Groups(owner)
}

// Snapshot returns a deep copy of the State, for a pure planner's snapshot.
func (t *Tracker) Snapshot() *State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().Clone()
}

// Stats returns the counters.
func (t *Tracker) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Stats{Expired: t.expired, Overdue: t.overdue}
}

// ViewFor is State.ViewFor under the lock.
func (t *Tracker) ViewFor(owner Owner, pods []corev1.Pod) (*View, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().ViewFor(owner, pods)
}
