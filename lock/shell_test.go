package lock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/lock"
)

var (
	t0    = time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)
	node1 = lock.NodeKey("n1")
	podA  = lock.Requester{Namespace: "default", Name: "a", UID: "ua"}
	podB  = lock.Requester{Namespace: "default", Name: "b", UID: "ub"}
)

// alive is a holder oracle under which every holder exists.
func alive(context.Context, lock.Key, lock.Record) lock.Holder {
	return lock.Holder{State: lock.HolderExists}
}

func TestLockerAcquireRelease(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(1, t0)
	store := fake.NewLockStore(w)
	l := &lock.Locker{Store: store, Clock: w.Clock, Holder: alive}

	g, err := l.Acquire(ctx, node1, podA)
	if err != nil || g.Plan.Kind != lock.Acquire || g.Record().Epoch != 1 {
		t.Fatalf("first acquire = %v, %v", g.Plan, err)
	}
	g2, err := l.Acquire(ctx, node1, podA)
	if err != nil || g2.Plan.Kind != lock.AlreadyHeld || g2.Record() != g.Record() {
		t.Fatalf("re-entry = %v, %v: want AlreadyHeld with the same record", g2.Plan, err)
	}
	_, err = l.Acquire(ctx, node1, podB)
	if !errors.Is(err, lock.ErrContention) || err.Error() != "node n1 has been locked within 5m0s: node lock contention" {
		t.Fatalf("other pod: %v, want contention at once (Wait is zero)", err)
	}
	if d, err := l.Release(ctx, node1, podB); err != nil || d.Kind != lock.NoOp || d.Reason.Code != lock.ReasonNotOwner {
		t.Fatalf("release by a non-owner = %v, %v", d, err)
	}
	if d, err := l.Release(ctx, node1, podA); err != nil || d.Kind != lock.Release {
		t.Fatalf("release = %v, %v", d, err)
	}
	if d, err := l.Release(ctx, node1, podA); err != nil || d.Reason.Code != lock.ReasonNotLocked {
		t.Fatalf("second release = %v, %v", d, err)
	}
	g3, err := l.Acquire(ctx, node1, podB)
	if err != nil || g3.Record().Epoch != 2 {
		t.Fatalf("acquire after release = %v, %v: the epoch must keep rising", g3.Plan, err)
	}
	// The expired lock of B is stolen by A in one CAS, with a new epoch.
	w.Clock.Advance(lock.DefaultTTL + time.Second)
	g4, err := l.Acquire(ctx, node1, podA)
	if err != nil || g4.Plan.Kind != lock.StealExpired || g4.Record().Epoch != 3 {
		t.Fatalf("steal = %v, %v", g4.Plan, err)
	}
	if n := w.Calls.Count(fake.LockCAD); n != 1 {
		t.Errorf("%d compare-and-deletes: a steal must never delete", n-1)
	}
}

func TestLockerLostResponse(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(1, t0)
	store := fake.NewLockStore(w)
	l := &lock.Locker{Store: store, Clock: stepClock{Clock: w.Clock}}
	w.Faults.LoseResponseNext(fake.LockCAS, 1, errors.New("timeout"))
	g, err := l.Acquire(ctx, node1, podA)
	if err != nil || g.Plan.Kind != lock.Acquire || g.Record().Epoch != 1 {
		t.Fatalf("acquire after a lost response = %v, %v: the re-read shows our record", g.Plan, err)
	}
	if n := w.Calls.Count(fake.LockCAS); n != 1 {
		t.Errorf("%d CAS calls, want exactly 1: the write took effect", n)
	}
	// A lost release response: the re-read finds the key absent.
	w.Faults.LoseResponseNext(fake.LockCAD, 1, errors.New("timeout"))
	d, err := l.Release(ctx, node1, podA)
	if err != nil || d.Reason.Code != lock.ReasonNotLocked {
		t.Fatalf("release after a lost response = %v, %v", d, err)
	}
}

func TestLockerSpuriousConflictIsNotContention(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(1, t0)
	store := fake.NewLockStore(w)
	var sleeps []time.Duration
	l := &lock.Locker{Store: store, Clock: stepClock{Clock: w.Clock, sleeps: &sleeps}}
	// HAMi turns 409s from unrelated Node writes into failed attempts and,
	// after five, into an error; plancore re-reads at once.
	w.Faults.FailNext(fake.LockCAS, 9, lock.ErrConflict)
	g, err := l.Acquire(ctx, node1, podA)
	if err != nil || g.Record().Epoch != 1 || g.Attempts != 10 || len(sleeps) != 0 {
		t.Fatalf("acquire through 9 conflicts = %v, attempts %d, slept %d, %v", g.Plan, g.Attempts, len(sleeps), err)
	}
	w.Faults.FailNext(fake.LockCAD, 11, lock.ErrConflict)
	if _, err := l.Release(ctx, node1, podA); !errors.Is(err, lock.ErrConflict) {
		t.Fatalf("release through 11 conflicts: %v, want ErrConflict after 10 retries", err)
	}
}

func TestLockerWaitsWithJitteredBackoff(t *testing.T) {
	run := func(seed uint64) []time.Duration {
		ctx := context.Background()
		w := fake.NewWorld(1, t0)
		store := fake.NewLockStore(w)
		var sleeps []time.Duration
		l := &lock.Locker{
			Store: store, Clock: stepClock{Clock: w.Clock, advance: true, sleeps: &sleeps}, Holder: alive,
			Backoff: lock.Backoff{Wait: 3 * time.Second},
			Rand:    rand.New(rand.NewPCG(seed, 0)),
		}
		if _, err := l.Acquire(ctx, node1, podA); err != nil {
			t.Fatal(err)
		}
		_, err := l.Acquire(ctx, node1, podB)
		if !errors.Is(err, lock.ErrContention) {
			t.Fatalf("err = %v, want contention after the wait", err)
		}
		return sleeps
	}
	a := run(7)
	if diff := cmp.Diff(a, run(7)); diff != "" {
		t.Errorf("same seed, different sleeps:\n%s", diff)
	}
	if cmp.Equal(a, run(8)) {
		t.Error("different seeds gave the same jitter")
	}
	var total time.Duration
	bases := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for i, d := range a {
		total += d
		if i < len(a)-1 {
			base := bases[i] * time.Millisecond
			if d < base || d >= base*3/2 {
				t.Errorf("sleep %d = %v, want in [%v, %v)", i, d, base, base*3/2)
			}
		}
	}
	if total != 3*time.Second {
		t.Errorf("slept %v in total (%v), want exactly the 3s wait: the last sleep is cut at the deadline", total, a)
	}
}

func TestLockerWakesOnRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := lock.NewMemoryStore()
		holder := &lock.Locker{Store: store, Holder: alive}
		waiter := &lock.Locker{Store: store, Holder: alive, Backoff: lock.Backoff{Wait: 10 * time.Second, Initial: time.Second, Jitter: -1}, Rand: rand.New(rand.NewPCG(1, 1))}
		if _, err := holder.Acquire(ctx, node1, podA); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(22 * time.Millisecond) // HAMi's measured hold time
			if _, err := holder.Release(ctx, node1, podA); err != nil {
				t.Error(err)
			}
		}()
		start := time.Now()
		g, err := waiter.Acquire(ctx, node1, podB)
		if err != nil || g.Record().Epoch != 2 {
			t.Fatalf("waiter = %v, %v", g.Plan, err)
		}
		if waited := time.Since(start); waited != 22*time.Millisecond {
			t.Errorf("waited %v, want 22ms: a release must wake the waiter, not its 1s backoff", waited)
		}
	})
}

func TestLockerSleepsUntilExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := lock.NewMemoryStore()
		opts := lock.Options{TTL: 3 * time.Second}
		holder := &lock.Locker{Store: store, Options: opts}
		if _, err := holder.Acquire(ctx, node1, podA); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		waiter := &lock.Locker{Store: store, Options: opts, Holder: alive, Backoff: lock.Backoff{Wait: time.Minute, Initial: time.Hour, Max: time.Hour}}
		g, err := waiter.Acquire(ctx, node1, podB)
		if err != nil || g.Plan.Kind != lock.StealExpired {
			t.Fatalf("waiter = %v, %v", g.Plan, err)
		}
		// The lock was written at whole second start (synctest starts at
		// midnight) and is expired strictly after start+3s.
		if waited := time.Since(start); waited != 3*time.Second+1 {
			t.Errorf("waited %v, want 3s+1ns: the sleep is cut at the plan's RequeueAfter", waited)
		}
	})
}

func TestMemoryStoreConformance(t *testing.T) {
	for _, v := range fake.CheckLockStore(context.Background(), func() lock.Store { return lock.NewMemoryStore() }) {
		t.Error(v)
	}
	// The fault-injecting wrapper passes too when no fault is scripted.
	w := fake.NewWorld(1, t0)
	for _, v := range fake.CheckLockStore(context.Background(), func() lock.Store { return fake.NewLockStore(w) }) {
		t.Error(v)
	}
}

// conflictingWriter is a Store whose next compare-and-delete of a key loses
// to another writer: just before it, the writer puts raw.
type conflictingWriter struct {
	*lock.MemoryStore
	key lock.Key
	raw string
	put bool
}

func (s *conflictingWriter) CompareAndDelete(ctx context.Context, key lock.Key, pre lock.Precondition) error {
	if !s.put && key == s.key {
		s.put = true
		if err := s.Put(key, s.raw); err != nil {
			return err
		}
	}
	return s.MemoryStore.CompareAndDelete(ctx, key, pre)
}

// A release whose delete conflicts re-reads and removes only what it may:
// under the HAMi preset a legacy value written by another writer in between
// stays (HAMi #2197), the owner's re-stamped lock is still released, and an
// administrator's forced release never removes a newer value.
func TestLockerReleaseAfterConflict(t *testing.T) {
	ctx := context.Background()
	const legacyOld, legacyNew = "2026-06-14T10:00:00Z", "2026-06-14T10:00:05Z"
	ownerA := "2026-06-14T10:00:01Z,default,a"
	cases := []struct {
		name     string
		before   string // the value the release reads first
		between  string // what another writer puts before the first delete
		force    bool
		want     lock.ReasonCode
		wantLeft string // "" when the key must be gone
	}{
		{"legacy replaced by a new legacy lock", legacyOld, legacyNew, false, lock.ReasonChangedSinceFirstRead, legacyNew},
		{"legacy rewritten with the same value", legacyOld, legacyOld, false, lock.ReasonLegacyReleasable, ""},
		{"owner's lock replaced by a legacy lock", ownerA, legacyNew, false, lock.ReasonChangedSinceFirstRead, legacyNew},
		{"owner re-stamps its own lock", ownerA, "2026-06-14T10:00:03Z,default,a", false, lock.ReasonOwner, ""},
		{"forced release, a newer value", legacyOld, ownerA, true, lock.ReasonChangedSinceFirstRead, ownerA},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := fake.NewWorld(1, t0)
			mem := lock.NewMemoryStore()
			if err := mem.Put(node1, tc.before); err != nil {
				t.Fatal(err)
			}
			store := &conflictingWriter{MemoryStore: mem, key: node1, raw: tc.between}
			l := &lock.Locker{Store: store, Clock: w.Clock, Holder: alive, Options: lock.HAMi()}
			var p lock.Plan
			var err error
			if tc.force {
				p, err = l.ForceRelease(ctx, node1)
			} else {
				p, err = l.Release(ctx, node1, podA)
			}
			if err != nil || p.Reason.Code != tc.want {
				t.Fatalf("release = %v, %v; want reason %s", p, err, tc.want)
			}
			obs, err := mem.Get(ctx, node1)
			if err != nil {
				t.Fatal(err)
			}
			if left := map[bool]string{true: obs.Raw}[obs.Present]; left != tc.wantLeft {
				t.Errorf("the key holds %q after the release, want %q", left, tc.wantLeft)
			}
		})
	}
}
