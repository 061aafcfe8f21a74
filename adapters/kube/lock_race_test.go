package kube_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
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
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	r := &nodeLockRace{
		env: env, ctx: ctx, runCtx: runCtx, stop: stop,
		ns: env.Namespace(t), key: lock.NodeKey(newNode(t, env).Name),
		track: &beliefs{active: map[string]belief{}},
		errs:  make(chan error, raceWorkers),
	}
	for p := range raceProcesses {
		r.startProcess(t, p)
	}
	var wg sync.WaitGroup
	for w := range raceWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.worker(w); err != nil {
				r.errs <- err
			}
		}()
	}
	wg.Wait()
	close(r.errs)
	for err := range r.errs {
		t.Error(err)
	}
	r.report(t)
}

// The shape of TestNodeLockRace.
const (
	raceProcesses = 2
	raceWorkers   = 32
	raceTarget    = 120 // grants to make before stopping
	raceTTL       = 2 * time.Second
	raceSkew      = 50 * time.Millisecond
	raceMargin    = 2 * raceSkew
)

// nodeLockRace is one run of TestNodeLockRace: its processes, its workers'
// shared counters, and the beliefs they report.
type nodeLockRace struct {
	env         *kubetest.Env
	ctx, runCtx context.Context
	stop        context.CancelFunc
	ns          string
	key         lock.Key
	track       *beliefs
	errs        chan error

	lockers [raceProcesses]*lock.Locker
	clients [raceProcesses]client.Client
	offsets [raceProcesses]time.Duration

	grants                                     atomic.Int64
	byKind                                     sync.Map // lock.Kind -> *atomic.Int64
	stalls, stolenWhileStalled, diedDeleted    atomic.Int64
	diedKept, contentionTimeouts, overrun, rel atomic.Int64
	stolenLate                                 atomic.Int64
}

func (r *nodeLockRace) count(k lock.Kind) {
	v, _ := r.byKind.LoadOrStore(k, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// startProcess gives process p its client, Node informer, store and Locker,
// with its clock skewed by ±raceSkew.
func (r *nodeLockRace) startProcess(t *testing.T, p int) {
	c, err := client.New(r.env.Config, client.Options{Scheme: r.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	r.clients[p] = c
	store := &kube.NodeLockStore{Client: c}
	// Each process watches Nodes, so its waiters wake on the other
	// process's releases too.
	informers, err := cache.New(r.env.Config, cache.Options{Scheme: r.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := informers.GetInformer(r.ctx, &corev1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(store.EventHandler()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(r.runCtx) }()
	if !informers.WaitForCacheSync(r.ctx) {
		t.Fatal("node informer did not sync")
	}
	offset := raceSkew
	if p%2 == 0 {
		offset = -raceSkew
	}
	r.offsets[p] = offset
	opts := lock.Options{TTL: raceTTL}
	r.lockers[p] = &lock.Locker{
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

// raceWorker is one worker's pod and process.
type raceWorker struct {
	w, p        int
	incarnation int
	name        string
	pod         *corev1.Pod
}

// worker acquires, holds and releases (or stalls, or dies) until the run stops.
func (r *nodeLockRace) worker(w int) error {
	wk := &raceWorker{w: w, p: w % raceProcesses, name: fmt.Sprintf("w%d-%d", w, 0)}
	var err error
	if wk.pod, err = createPod(r.ctx, r.clients[wk.p], r.ns, wk.name); err != nil {
		return err
	}
	for r.runCtx.Err() == nil {
		req := lock.Requester{Namespace: r.ns, Name: wk.pod.Name, UID: string(wk.pod.UID)}
		g, err := r.lockers[wk.p].Acquire(r.runCtx, r.key, req)
		switch {
		case r.runCtx.Err() != nil:
			return nil
		case errors.Is(err, lock.ErrContention):
			r.contentionTimeouts.Add(1)
			continue
		case err != nil:
			return fmt.Errorf("%s: Acquire: %w", wk.name, err)
		}
		if g.Plan.Kind == lock.AlreadyHeld {
			return fmt.Errorf("%s: AlreadyHeld on a fresh acquire: %v", wk.name, g.Plan)
		}
		r.count(g.Plan.Kind)
		// The record's time is on this process's clock; the deadline is
		// turned back into real time.
		deadline := g.Record().Time.Add(-r.offsets[wk.p]).Add(raceTTL - raceMargin)
		believing := r.track.begin(wk.name, g.Record().Epoch, deadline)
		n := r.grants.Add(1)
		if n >= raceTarget {
			r.stop()
		}
		switch {
		case n%40 == 10:
			err = r.stallThenRelease(wk, req)
		case n%40 == 20 || n%40 == 30:
			err = r.dieHolding(wk, n%40 == 20)
		default:
			err = r.holdAndRelease(wk, req, believing, deadline)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stallThenRelease stalls past the lease (a GC pause, a slow API call). The
// worker keeps believing until its own deadline passes in the sleep; others
// may steal only after that.
func (r *nodeLockRace) stallThenRelease(wk *raceWorker, req lock.Requester) error {
	r.stalls.Add(1)
	time.Sleep(raceTTL + 500*time.Millisecond)
	r.track.end(wk.name)
	d, err := r.lockers[wk.p].Release(r.ctx, r.key, req)
	if err != nil {
		return fmt.Errorf("%s: release after stall: %w", wk.name, err)
	}
	if d.Kind == lock.NoOp {
		r.stolenWhileStalled.Add(1)
	}
	return nil
}

// dieHolding dies holding the lock: with its pod deleted (the lock is
// dangling at once) or kept (only expiry frees it); a new pod takes its place.
func (r *nodeLockRace) dieHolding(wk *raceWorker, deletePod bool) error {
	r.track.end(wk.name)
	c := r.clients[wk.p]
	if deletePod {
		r.diedDeleted.Add(1)
		if err := c.Delete(r.ctx, wk.pod); err != nil {
			return err
		}
	} else {
		r.diedKept.Add(1)
	}
	wk.incarnation++
	wk.name = fmt.Sprintf("w%d-%d", wk.w, wk.incarnation)
	var err error
	wk.pod, err = createPod(r.ctx, c, r.ns, wk.name)
	return err
}

// holdAndRelease holds briefly and releases; a release that ends within the
// lease must find its own lock.
func (r *nodeLockRace) holdAndRelease(wk *raceWorker, req lock.Requester, believing bool, deadline time.Time) error {
	time.Sleep(time.Duration(1+wk.w%5) * time.Millisecond)
	if believing && time.Now().After(deadline) {
		r.overrun.Add(1) // held past its lease: it stops believing there
	}
	r.track.end(wk.name)
	d, err := r.lockers[wk.p].Release(r.ctx, r.key, req)
	if err != nil {
		return fmt.Errorf("%s: release: %w", wk.name, err)
	}
	switch {
	case d.Kind == lock.Release:
		r.rel.Add(1)
	case time.Now().Before(deadline):
		// Nobody may steal before the deadline, so a release that ends
		// before it must find its own lock.
		return fmt.Errorf("%s: released within its lease but got %v", wk.name, d)
	default:
		r.stolenLate.Add(1)
	}
	return nil
}

// report logs the counts and fails on any overlap, epoch error, or path the
// run did not take.
func (r *nodeLockRace) report(t *testing.T) {
	track := r.track
	kinds := map[string]int64{}
	r.byKind.Range(func(k, v any) bool { kinds[k.(lock.Kind).String()] = v.(*atomic.Int64).Load(); return true })
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, fmt.Sprintf("%s=%d", k, kinds[k]))
	}
	sort.Strings(names)
	t.Logf("grants %d (%s); beliefs checked %d, late %d, overlaps %d, epoch errors %d; releases %d (lease ran out first %d); stalls %d (stolen meanwhile %d); deaths: pod deleted %d, pod kept %d; overruns %d; contention timeouts %d",
		r.grants.Load(), strings.Join(names, " "), track.checks, track.late, len(track.overlaps), len(track.epochErrs),
		r.rel.Load(), r.stolenLate.Load(), r.stalls.Load(), r.stolenWhileStalled.Load(), r.diedDeleted.Load(), r.diedKept.Load(), r.overrun.Load(), r.contentionTimeouts.Load())
	for _, o := range track.overlaps {
		t.Errorf("two believed holders: %s", o)
	}
	for _, e := range track.epochErrs {
		t.Errorf("epoch order: %s", e)
	}
	if r.grants.Load() < raceTarget {
		t.Errorf("only %d grants, want %d", r.grants.Load(), raceTarget)
	}
	// Every path must have been taken, or the test proves less than it says.
	if kinds["Acquire"] == 0 || kinds["StealExpired"] == 0 || kinds["StealDangling"] == 0 {
		t.Errorf("grant kinds %v: want Acquire, StealExpired and StealDangling all exercised", kinds)
	}
	if track.checks < raceTarget/2 {
		t.Errorf("only %d of %d grants were checked against live beliefs", track.checks, r.grants.Load())
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
