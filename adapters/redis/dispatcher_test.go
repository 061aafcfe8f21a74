package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/adapters/redis/internal/redistest"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
)

// TestDispatcherOnRedis runs two capacity.Dispatchers, as two scheduler
// instances with their own Redis clients, against one redis-server: 12 jobs
// on three nodes of two slots, every third job's first send failing. The
// store is the decision point, so no node runs more than two jobs and no job
// starts twice; the jobs that found no room wait, and go once the nodes
// finish their work and the clock passes the requeue time.
func TestDispatcherOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard, not a timing
	defer cancel()
	clk := fake.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	newStore := func() *redis.CapacityStore {
		s, err := redis.NewCapacityStore(ctx, srv.Client(), redis.CapacityStoreOptions{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	nodeStore := newStore()
	nodes := []string{"n0", "n1", "n2"}
	agents := map[string]*fake.NodeAgent{}
	for _, id := range nodes {
		a, err := fake.NewNodeAgent(id, 2, false, nodeStore) // no hard limit: an oversold node shows
		if err != nil {
			t.Fatal(err)
		}
		agents[id] = a
	}
	heartbeat := func() {
		for _, id := range nodes {
			if _, err := agents[id].Heartbeat(ctx, capacity.Usage{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	heartbeat()

	var mu sync.Mutex
	started := map[string]int{}
	failed := map[string]bool{}
	events := make(chan capacity.DispatcherEvent, 256)
	send := func(ctx context.Context, job capacity.Job, l capacity.Lease) error {
		mu.Lock()
		fail := !failed[job.ID] && job.ID[len(job.ID)-1]%3 == 0
		failed[job.ID] = true
		mu.Unlock()
		if fail {
			return errors.New("node unreachable")
		}
		out, err := agents[l.Node].Dispatch(ctx, l)
		if err != nil {
			return err
		}
		if !out.Started {
			return fmt.Errorf("not started: %+v", out)
		}
		mu.Lock()
		started[job.ID]++
		mu.Unlock()
		return nil
	}
	var ds []*capacity.Dispatcher
	var wg sync.WaitGroup
	runCtx, stop := context.WithCancel(ctx)
	for i := range 2 {
		d := &capacity.Dispatcher{Store: newStore(), Nodes: capacity.StaticNodes(nodes...), Send: send,
			Concurrency: 3, Clock: clk, Observer: capacity.ObserverFunc(func(e capacity.DispatcherEvent) { events <- e })}
		for j := range 6 {
			if err := d.Submit(capacity.Job{ID: fmt.Sprintf("s%d-j%d", i, j)}); err != nil {
				t.Fatal(err)
			}
		}
		ds = append(ds, d)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.Run(runCtx); err != nil {
				t.Error(err)
			}
		}()
	}
	defer func() {
		stop()
		wg.Wait()
	}()

	// waitQuiet reads events until every job is sent or waits for the
	// clock (no room, or a failed send to retry).
	sent, idle := map[string]bool{}, map[string]bool{}
	waitQuiet := func() {
		t.Helper()
		for len(sent)+len(idle) < 12 {
			select {
			case e := <-events:
				switch e.Outcome {
				case capacity.JobNoCapacity, capacity.JobSendFailed:
					idle[e.Job.ID] = true
				case capacity.JobSent:
					sent[e.Job.ID] = true
				default:
					t.Fatalf("event %+v", e)
				}
			case <-ctx.Done():
				t.Fatalf("waiting: sent %v, idle %v", sent, idle)
			}
		}
	}
	check := func() {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		for id, n := range started {
			if n > 1 {
				t.Errorf("job %s started %d times", id, n)
			}
		}
		for _, id := range nodes {
			if st := agents[id].Stats(); st.Oversold > 0 || st.PeakStarted > 2 {
				t.Errorf("node %s oversold: %+v", id, st)
			}
		}
		var pending []string
		for _, d := range ds {
			pending = append(pending, d.Pending()...)
		}
		for _, id := range pending {
			if started[id] > 0 {
				t.Errorf("job %s started and still pending", id)
			}
		}
		if len(pending)+len(started) != 12 {
			t.Errorf("pending %v and started %v do not add up to the 12 jobs", pending, started)
		}
	}
	waitQuiet()
	check()
	if len(sent) > 6 {
		t.Fatalf("%d jobs sent to 6 slots", len(sent))
	}
	// The nodes finish their jobs, the clock passes the requeue times, and
	// the waiting jobs go, until all are sent.
	for round := 0; len(sent) < 12; round++ {
		if round == 10 {
			t.Fatalf("after %d rounds, sent only %v", round, sent)
		}
		for _, a := range agents {
			for {
				if _, ok := a.FinishOldest(); !ok {
					break
				}
			}
		}
		heartbeat()
		clear(idle)
		clk.Advance(capacity.DefaultTTL)
		waitQuiet()
		check()
	}
	for _, d := range ds {
		if p := d.Pending(); len(p) > 0 {
			t.Errorf("still pending: %v", p)
		}
	}
}
