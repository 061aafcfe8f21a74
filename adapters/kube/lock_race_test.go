package kube_test

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/utils/clock"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/lock"
)

// beliefs tracks, in real time, which requesters believe they hold the lock,
// and counts every moment a second believer appears.
type beliefs struct {
	mu        sync.Mutex
	active    map[string]belief
	lastEpoch uint64
	checks    int // grants checked against every other live belief
	late      int // grants whose belief window had closed before Acquire returned
	overlaps  []string
	epochErrs []string
}

type belief struct {
	epoch    uint64
	deadline time.Time
}

// begin records that id starts believing it holds the lock with epoch until
// deadline (or its end), and reports any other live belief as an overlap.
func (b *beliefs) begin(id string, epoch uint64, deadline time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if !now.Before(deadline) {
		b.late++
		return false
	}
	b.checks++
	for other, o := range b.active {
		if other != id && now.Before(o.deadline) {
			b.overlaps = append(b.overlaps, fmt.Sprintf("%s (epoch %d) granted while %s (epoch %d) believes until %s",
				id, epoch, other, o.epoch, o.deadline.Sub(now)))
		}
	}
	if epoch <= b.lastEpoch {
		b.epochErrs = append(b.epochErrs, fmt.Sprintf("%s granted epoch %d after epoch %d", id, epoch, b.lastEpoch))
	}
	b.lastEpoch = epoch
	b.active[id] = belief{epoch: epoch, deadline: deadline}
	return true
}

// end records that id stopped believing (it released, or died).
func (b *beliefs) end(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.active, id)
}

// TestNodeLockRace runs 32 goroutines in 2 simulated scheduler processes (each
// with its own client, Node informer, NodeLockStore and Locker, and clocks
// skewed by ±S) against one Node lock on the real API server. Holders release,
// stall past their lease, or die with their pod deleted (a dangling lock) or
// kept (an expiring lock). A requester believes it holds the lock from a
// successful grant until it releases or dies, or until its own-clock deadline
// T + TTL − 2S, where T is the timestamp of the record it wrote (its own
// clock, truncated to the second: a deadline counted from the grant,
// grantTime + TTL − (2S + 1 s), is never later). At no moment may two requesters believe they hold it, and grant
// epochs must strictly increase.
func TestNodeLockRace(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, 4*time.Minute)
	ns := env.Namespace(t)
	node := newNode(t, env).Name
	key := lock.NodeKey(node)

	const (
		processes = 2
		workers   = 32
		target    = 120 // grants to make before stopping
		ttl       = 2 * time.Second
		skew      = 50 * time.Millisecond
		margin    = 2 * skew
	)
	opts := lock.Options{TTL: ttl}
	track := &beliefs{active: map[string]belief{}}
	var (
		grants                                     atomic.Int64
		byKind                                     sync.Map // lock.Kind -> *atomic.Int64
		stalls, stolenWhileStalled, diedDeleted    atomic.Int64
		diedKept, contentionTimeouts, overrun, rel atomic.Int64
		stolenLate                                 atomic.Int64
	)
	count := func(k lock.Kind) {
		v, _ := byKind.LoadOrStore(k, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	lockers := make([]*lock.Locker, processes)
	clients := make([]client.Client, processes)
	offsets := make([]time.Duration, processes)
	for p := range processes {
		c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		clients[p] = c
		store := &kube.NodeLockStore{Client: c}
		// Each process watches Nodes, so its waiters wake on the other
		// process's releases too.
		informers, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		inf, err := informers.GetInformer(ctx, &corev1.Node{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := inf.AddEventHandler(store.EventHandler()); err != nil {
			t.Fatal(err)
		}
		go func() { _ = informers.Start(runCtx) }()
		if !informers.WaitForCacheSync(ctx) {
			t.Fatal("node informer did not sync")
		}
		offset := skew
		if p%2 == 0 {
			offset = -skew
		}
		offsets[p] = offset
		lockers[p] = &lock.Locker{
			Store:   store,
			Options: opts,
			Backoff: lock.Backoff{Initial: 20 * time.Millisecond, Max: 250 * time.Millisecond, Wait: 30 * time.Second},
			Clock:   skewedClock{offset: offset},
			Rand:    rand.New(rand.NewPCG(uint64(p), 7)),
			Holder: func(ctx context.Context, _ lock.Key, rec lock.Record) lock.Holder {
				var pod corev1.Pod
				err := c.Get(ctx, client.ObjectKey{Namespace: rec.Namespace, Name: rec.Name}, &pod)
				return lock.ClassifyHolder(&pod, err, rec, opts.Identity)
			},
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := w % processes
			l, c := lockers[p], clients[p]
			incarnation := 0
			name := fmt.Sprintf("w%d-%d", w, incarnation)
			pod, err := createPod(ctx, c, ns, name)
			if err != nil {
				errs <- err
				return
			}
			for runCtx.Err() == nil {
				req := lock.Requester{Namespace: ns, Name: pod.Name, UID: string(pod.UID)}
				g, err := l.Acquire(runCtx, key, req)
				switch {
				case runCtx.Err() != nil:
					return
				case errors.Is(err, lock.ErrContention):
					contentionTimeouts.Add(1)
					continue
				case err != nil:
					errs <- fmt.Errorf("%s: Acquire: %w", name, err)
					return
				}
				if g.Plan.Kind == lock.AlreadyHeld {
					errs <- fmt.Errorf("%s: AlreadyHeld on a fresh acquire: %v", name, g.Plan)
					return
				}
				count(g.Plan.Kind)
				// The record's time is on this process's clock; the
				// deadline is turned back into real time.
				deadline := g.Record().Time.Add(-offsets[p]).Add(ttl - margin)
				believing := track.begin(name, g.Record().Epoch, deadline)
				n := grants.Add(1)
				if n >= target {
					stop()
				}
				switch {
				case n%40 == 10: // stall past the lease (a GC pause, a slow API call)
					// It keeps believing until its own deadline passes in
					// the sleep; others may steal only after that.
					stalls.Add(1)
					time.Sleep(ttl + 500*time.Millisecond)
					track.end(name)
					d, err := l.Release(ctx, key, req)
					if err != nil {
						errs <- fmt.Errorf("%s: release after stall: %w", name, err)
						return
					}
					if d.Kind == lock.NoOp {
						stolenWhileStalled.Add(1)
					}
				case n%40 == 20 || n%40 == 30: // die holding the lock
					track.end(name)
					if n%40 == 20 {
						// The pod is deleted: the lock is dangling at once.
						diedDeleted.Add(1)
						if err := c.Delete(ctx, pod); err != nil {
							errs <- err
							return
						}
					} else {
						// The process dies, the pod lives on: only expiry frees it.
						diedKept.Add(1)
					}
					incarnation++
					name = fmt.Sprintf("w%d-%d", w, incarnation)
					if pod, err = createPod(ctx, c, ns, name); err != nil {
						errs <- err
						return
					}
				default: // hold briefly, release
					time.Sleep(time.Duration(1+w%5) * time.Millisecond)
					if believing && time.Now().After(deadline) {
						overrun.Add(1) // held past its lease: it stops believing there
					}
					track.end(name)
					d, err := l.Release(ctx, key, req)
					if err != nil {
						errs <- fmt.Errorf("%s: release: %w", name, err)
						return
					}
					switch {
					case d.Kind == lock.Release:
						rel.Add(1)
					case time.Now().Before(deadline):
						// Nobody may steal before the deadline, so a release
						// that ends before it must find its own lock.
						errs <- fmt.Errorf("%s: released within its lease but got %v", name, d)
						return
					default:
						stolenLate.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	kinds := map[string]int64{}
	byKind.Range(func(k, v any) bool { kinds[k.(lock.Kind).String()] = v.(*atomic.Int64).Load(); return true })
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, fmt.Sprintf("%s=%d", k, kinds[k]))
	}
	sort.Strings(names)
	t.Logf("grants %d (%s); beliefs checked %d, late %d, overlaps %d, epoch errors %d; releases %d (lease ran out first %d); stalls %d (stolen meanwhile %d); deaths: pod deleted %d, pod kept %d; overruns %d; contention timeouts %d",
		grants.Load(), strings.Join(names, " "), track.checks, track.late, len(track.overlaps), len(track.epochErrs),
		rel.Load(), stolenLate.Load(), stalls.Load(), stolenWhileStalled.Load(), diedDeleted.Load(), diedKept.Load(), overrun.Load(), contentionTimeouts.Load())
	for _, o := range track.overlaps {
		t.Errorf("two believed holders: %s", o)
	}
	for _, e := range track.epochErrs {
		t.Errorf("epoch order: %s", e)
	}
	if grants.Load() < target {
		t.Errorf("only %d grants, want %d", grants.Load(), target)
	}
	// Every path must have been taken, or the test proves less than it says.
	if kinds["Acquire"] == 0 || kinds["StealExpired"] == 0 || kinds["StealDangling"] == 0 {
		t.Errorf("grant kinds %v: want Acquire, StealExpired and StealDangling all exercised", kinds)
	}
	if track.checks < target/2 {
		t.Errorf("only %d of %d grants were checked against live beliefs", track.checks, grants.Load())
	}
}

// skewedClock is the real clock read offset ahead (or behind): one process of
// a cluster whose clocks disagree. Its timers are the real ones.
type skewedClock struct {
	clock.RealClock
	offset time.Duration
}

func (c skewedClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
