package redis_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/adapters/redis/internal/redistest"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
)

// TestCapacityStressTwoSchedulersRedisRestart is the stress test: two
// scheduler instances (their own clients and stores) of eight goroutines each
// reserve against one real Redis, dispatch to fake node agents whose hard
// limit is OFF, and finish jobs, while heartbeats flow; Redis is restarted
// (every key and script lost) halfway. The agents count every job start
// beyond M: there must be none, over at least 200,000 granted reservations.
const (
	stressNodes, stressM = 128, 4
	stressBatch          = 16
	stressFinishBehind   = 8 // each worker keeps this many jobs running
)

func TestCapacityStressTwoSchedulersRedisRestart(t *testing.T) {
	const (
		instances   = 2
		perInstance = 8
		target      = 200_000
	)
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	r := &stressRig{t: t, ctx: ctx, opts: redis.CapacityStoreOptions{Options: capacity.Options{MaxBatch: stressBatch}},
		stop: make(chan struct{}), byID: map[string]*fake.NodeAgent{}}
	r.startAgents(newStore(t, srv.Client(), r.opts))
	for h := range 4 {
		r.wg.Add(1)
		go r.heartbeats(h)
	}
	for inst := range instances {
		store := newStore(t, srv.Client(), r.opts)
		for g := range perInstance {
			r.wg.Add(1)
			go r.worker(store, inst, g)
		}
	}

	start := time.Now()
	restarted := false
	var restartAt int64
	for r.granted.Load() < target {
		if ctx.Err() != nil {
			close(r.stop)
			r.wg.Wait()
			t.Fatalf("only %d reservations granted before the deadline", r.granted.Load())
		}
		if !restarted && r.granted.Load() >= target/2 {
			restartAt = r.granted.Load()
			srv.Restart()
			restarted = true
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(r.stop)
	r.wg.Wait()
	r.check(time.Since(start), restartAt)
}

// stressRig is the stress test's shared state: the node agents (hard limit
// OFF), the counters, and the stop signal.
type stressRig struct {
	t      *testing.T
	ctx    context.Context
	opts   redis.CapacityStoreOptions
	agents []*fake.NodeAgent
	ids    []string
	byID   map[string]*fake.NodeAgent
	stop   chan struct{}
	wg     sync.WaitGroup

	granted, storeErrors, refused, nacked, dispatched atomic.Int64
}

type stressJob struct{ node, rid string }

// startAgents makes the node agents, each stating M in its first heartbeat.
func (r *stressRig) startAgents(nodeStore *redis.CapacityStore) {
	r.agents = make([]*fake.NodeAgent, stressNodes)
	r.ids = make([]string, stressNodes)
	for i := range r.agents {
		r.ids[i] = fmt.Sprintf("node-%02d", i)
		a, err := fake.NewNodeAgent(r.ids[i], stressM, false, nodeStore)
		if err != nil {
			r.t.Fatal(err)
		}
		r.agents[i] = a
		r.byID[a.ID()] = a
		if _, err := a.Heartbeat(r.ctx, capacity.Usage{}); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *stressRig) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// heartbeats sends the heartbeats of every fourth node, from h, sampled
// under each agent's own lock.
func (r *stressRig) heartbeats(h int) {
	defer r.wg.Done()
	for {
		for i := h; i < stressNodes; i += 4 {
			if r.stopped() {
				return
			}
			if _, err := r.agents[i].Heartbeat(r.ctx, capacity.Usage{CPU: 10, Memory: 10}); err != nil {
				r.storeErrors.Add(1)
				time.Sleep(time.Millisecond) // Redis is down: retry shortly
			}
		}
	}
}

// send dispatches a lease to its node and keeps the job if the node started
// it; on a NACK it releases the lease.
func (r *stressRig) send(w []stressJob, l capacity.Lease, s *redis.CapacityStore) []stressJob {
	r.dispatched.Add(1)
	out, err := r.byID[l.Node].Dispatch(r.ctx, l)
	switch {
	case err != nil:
		r.storeErrors.Add(1) // the ACK failed: the node did not start the job
	case out.Started:
		return append(w, stressJob{l.Node, l.RID})
	default:
		r.nacked.Add(1)
		if _, err := s.Release(r.ctx, l.Node, l.RID); err != nil {
			r.storeErrors.Add(1)
		}
	}
	return w
}

// finish finishes the oldest jobs until keep remain.
func (r *stressRig) finish(w []stressJob, keep int) []stressJob {
	for len(w) > keep {
		if err := r.byID[w[0].node].Finish(w[0].rid); err != nil {
			r.t.Error(err) // nodes do not restart here, so a started job is still there
		}
		w = w[1:]
	}
	return w
}

// worker is one scheduler goroutine: worker 0 of each instance takes the
// full path (Loads, Decide, Dispatch), the others reserve in batches.
func (r *stressRig) worker(store *redis.CapacityStore, inst, g int) {
	defer r.wg.Done()
	var running []stressJob
	for seq := 0; ; seq++ {
		if r.stopped() {
			r.finish(running, 0)
			return
		}
		rid := func(k int) string { return fmt.Sprintf("i%d-g%d-%d-%d", inst, g, seq, k) }
		var ok bool
		if g == 0 {
			running, ok = r.fullPath(store, rid(0), running)
		} else {
			running, ok = r.batchPath(store, g, seq, rid, running)
		}
		if !ok {
			return
		}
		running = r.finish(running, stressFinishBehind)
	}
}

// fullPath is one Loads, Decide, Dispatch round; false stops the worker.
func (r *stressRig) fullPath(store *redis.CapacityStore, rid string, running []stressJob) ([]stressJob, bool) {
	loads, err := store.Loads(r.ctx, r.ids)
	if err != nil {
		r.storeErrors.Add(1)
		time.Sleep(time.Millisecond)
		return running, true
	}
	p, err := capacity.Decide(capacity.Input{Nodes: loads, Now: time.Now(), SpreadKey: rid}, capacity.Options{})
	if err != nil {
		r.t.Error(err)
		return running, false
	}
	res, err := capacity.Dispatch(r.ctx, store, p, rid, capacity.DispatchOptions{})
	switch {
	case err != nil:
		r.storeErrors.Add(1)
	case res.Verdict == capacity.Selected:
		r.granted.Add(1)
		running = r.send(running, res.Lease, store)
	default:
		r.refused.Add(1)
		time.Sleep(time.Millisecond)
	}
	return running, true
}

// batchPath is one partial batch over spread nodes.
func (r *stressRig) batchPath(store *redis.CapacityStore, g, seq int, rid func(int) string, running []stressJob) ([]stressJob, bool) {
	items := make([]capacity.Reservation, stressBatch)
	off := (g*13 + seq*5) % stressNodes
	for k := range items {
		items[k] = capacity.Reservation{Node: r.ids[(off+k*8)%stressNodes], RID: rid(k), Max: stressM}
	}
	res, err := store.ReserveBatch(r.ctx, items, capacity.Partial)
	if err != nil {
		r.storeErrors.Add(1)
		time.Sleep(time.Millisecond)
		return running, true
	}
	got := 0
	for k, it := range res.Items {
		if it.Status != capacity.ReserveOK {
			r.refused.Add(1)
			continue
		}
		got++
		r.granted.Add(1)
		running = r.send(running, capacity.Lease{Node: items[k].Node, RID: items[k].RID, Epoch: it.Epoch, Expiry: it.Expiry}, store)
	}
	if got == 0 {
		// Every node asked was full: let heartbeats and finishing jobs free
		// slots instead of spinning.
		time.Sleep(time.Millisecond)
	}
	return running, true
}

// check sums the agents' counts: no start beyond M, and some node full.
func (r *stressRig) check(elapsed time.Duration, restartAt int64) {
	oversold, peak, refusals := 0, 0, 0
	acks := map[capacity.AckStatus]int{}
	for _, a := range r.agents {
		st := a.Stats()
		oversold += st.Oversold
		peak = max(peak, st.PeakStarted)
		refusals += st.HardLimitRefusals
		for k, v := range st.Acks {
			acks[k] += v
		}
	}
	r.t.Logf("%d reservations granted (%d refused, %d dispatched, %d NACKed, %d store errors) in %v; Redis restarted after %d; acks %v; peak started per node %d of M=%d; oversold %d",
		r.granted.Load(), r.refused.Load(), r.dispatched.Load(), r.nacked.Load(), r.storeErrors.Load(), elapsed.Round(time.Millisecond), restartAt, acks, peak, stressM, oversold)
	if oversold != 0 || peak > stressM || refusals != 0 {
		r.t.Fatalf("oversell: %d starts beyond M, peak %d of %d, hard-limit refusals %d", oversold, peak, stressM, refusals)
	}
	if peak < stressM {
		r.t.Errorf("no node ever ran M jobs: the stress never filled a node and proves little")
	}
}
