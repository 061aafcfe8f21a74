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
func TestCapacityStressTwoSchedulersRedisRestart(t *testing.T) {
	const (
		nodes, m     = 128, 4
		instances    = 2
		perInstance  = 8
		target       = 200_000
		batch        = 16
		finishBehind = 8 // each worker keeps this many jobs running
	)
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	opts := redis.CapacityStoreOptions{Options: capacity.Options{MaxBatch: batch}}
	nodeStore := newStore(t, srv.Client(), opts)
	agents := make([]*fake.NodeAgent, nodes)
	ids := make([]string, nodes)
	for i := range agents {
		ids[i] = fmt.Sprintf("node-%02d", i)
		a, err := fake.NewNodeAgent(ids[i], m, false, nodeStore)
		if err != nil {
			t.Fatal(err)
		}
		agents[i] = a
		if _, err := a.Heartbeat(ctx, capacity.Usage{}); err != nil {
			t.Fatal(err)
		}
	}
	byID := map[string]*fake.NodeAgent{}
	for _, a := range agents {
		byID[a.ID()] = a
	}

	var granted, storeErrors, refused, nacked, dispatched atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup

	// Node side: heartbeats, sampled under each agent's own lock.
	for h := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				for i := h; i < nodes; i += 4 {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := agents[i].Heartbeat(ctx, capacity.Usage{CPU: 10, Memory: 10}); err != nil {
						storeErrors.Add(1)
						time.Sleep(time.Millisecond) // Redis is down: retry shortly
					}
				}
			}
		}()
	}

	type job struct{ node, rid string }
	send := func(w []job, l capacity.Lease, s *redis.CapacityStore) []job {
		dispatched.Add(1)
		out, err := byID[l.Node].Dispatch(ctx, l)
		switch {
		case err != nil:
			storeErrors.Add(1) // the ACK failed: the node did not start the job
		case out.Started:
			return append(w, job{l.Node, l.RID})
		default:
			nacked.Add(1)
			if _, err := s.Release(ctx, l.Node, l.RID); err != nil {
				storeErrors.Add(1)
			}
		}
		return w
	}
	finish := func(w []job, keep int) []job {
		for len(w) > keep {
			if err := byID[w[0].node].Finish(w[0].rid); err != nil {
				t.Error(err) // nodes do not restart here, so a started job is still there
			}
			w = w[1:]
		}
		return w
	}

	for inst := range instances {
		store := newStore(t, srv.Client(), opts)
		for g := range perInstance {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var running []job
				for seq := 0; ; seq++ {
					select {
					case <-stop:
						finish(running, 0)
						return
					default:
					}
					rid := func(k int) string { return fmt.Sprintf("i%d-g%d-%d-%d", inst, g, seq, k) }
					if g == 0 {
						// One worker per instance takes the full path: loads,
						// Select, Dispatch.
						loads, err := store.Loads(ctx, ids)
						if err != nil {
							storeErrors.Add(1)
							time.Sleep(time.Millisecond)
							continue
						}
						sel, err := capacity.Decide(capacity.Input{Nodes: loads, Now: time.Now(), SpreadKey: rid(0)}, capacity.Options{})
						if err != nil {
							t.Error(err)
							return
						}
						res, err := capacity.Dispatch(ctx, store, sel, rid(0), capacity.DispatchOptions{})
						switch {
						case err != nil:
							storeErrors.Add(1)
						case res.Outcome == capacity.Selected:
							granted.Add(1)
							running = send(running, res.Lease, store)
						default:
							refused.Add(1)
							time.Sleep(time.Millisecond)
						}
					} else {
						items := make([]capacity.Reservation, batch)
						off := (g*13 + seq*5) % nodes
						for k := range items {
							items[k] = capacity.Reservation{Node: ids[(off+k*8)%nodes], RID: rid(k), Max: m}
						}
						res, err := store.ReserveBatch(ctx, items, capacity.Partial)
						if err != nil {
							storeErrors.Add(1)
							time.Sleep(time.Millisecond)
							continue
						}
						got := 0
						for k, it := range res.Items {
							if it.Status != capacity.ReserveOK {
								refused.Add(1)
								continue
							}
							got++
							granted.Add(1)
							running = send(running, capacity.Lease{Node: items[k].Node, RID: items[k].RID, Epoch: it.Epoch, Expiry: it.Expiry}, store)
						}
						if got == 0 {
							// Every node asked was full: let heartbeats and
							// finishing jobs free slots instead of spinning.
							time.Sleep(time.Millisecond)
						}
					}
					running = finish(running, finishBehind)
				}
			}()
		}
	}

	start := time.Now()
	restarted := false
	var restartAt int64
	for granted.Load() < target {
		if ctx.Err() != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("only %d reservations granted before the deadline", granted.Load())
		}
		if !restarted && granted.Load() >= target/2 {
			restartAt = granted.Load()
			srv.Restart()
			restarted = true
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)

	oversold, peak, refusals := 0, 0, 0
	acks := map[capacity.AckStatus]int{}
	for _, a := range agents {
		st := a.Stats()
		oversold += st.Oversold
		peak = max(peak, st.PeakStarted)
		refusals += st.HardLimitRefusals
		for k, v := range st.Acks {
			acks[k] += v
		}
	}
	t.Logf("%d reservations granted (%d refused, %d dispatched, %d NACKed, %d store errors) in %v; Redis restarted after %d; acks %v; peak started per node %d of M=%d; oversold %d",
		granted.Load(), refused.Load(), dispatched.Load(), nacked.Load(), storeErrors.Load(), elapsed.Round(time.Millisecond), restartAt, acks, peak, m, oversold)
	if oversold != 0 || peak > m || refusals != 0 {
		t.Fatalf("oversell: %d starts beyond M, peak %d of %d, hard-limit refusals %d", oversold, peak, m, refusals)
	}
	if peak < m {
		t.Errorf("no node ever ran M jobs: the stress never filled a node and proves little")
	}
}
