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

// dispatchRig is the world of TestDispatcherOnRedis: fake nodes reporting to
// a redis-server, a send function that fails every job's first send when its
// id ends in 0 or 3, and the events of every Dispatcher.
type dispatchRig struct {
	t      *testing.T
	ctx    context.Context
	nodes  []string
	agents map[string]*fake.NodeAgent
	events chan capacity.DispatcherEvent

	mu      sync.Mutex
	started map[string]int  // job id → starts on a node
	failed  map[string]bool // job id → its first send failed already

	sent, idle map[string]bool // read from events by waitQuiet
}

func (r *dispatchRig) heartbeat() {
	for _, id := range r.nodes {
		if _, err := r.agents[id].Heartbeat(r.ctx, capacity.Usage{}); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *dispatchRig) send(ctx context.Context, job capacity.Job, l capacity.Lease) error {
	r.mu.Lock()
	fail := !r.failed[job.ID] && job.ID[len(job.ID)-1]%3 == 0
	r.failed[job.ID] = true
	r.mu.Unlock()
	if fail {
		return errors.New("node unreachable")
	}
	out, err := r.agents[l.Node].Dispatch(ctx, l)
	if err != nil {
		return err
	}
	if !out.Started {
		return fmt.Errorf("not started: %+v", out)
	}
	r.mu.Lock()
	r.started[job.ID]++
	r.mu.Unlock()
	return nil
}

// waitQuiet reads events until every one of the n jobs is sent or waits for
// the clock (no room, or a failed send to retry).
func (r *dispatchRig) waitQuiet(n int) {
	r.t.Helper()
	for len(r.sent)+len(r.idle) < n {
		select {
		case e := <-r.events:
			switch e.Outcome {
			case capacity.JobNoCapacity, capacity.JobSendFailed:
				r.idle[e.Job.ID] = true
			case capacity.JobSent:
				r.sent[e.Job.ID] = true
			default:
				r.t.Fatalf("event %+v", e)
			}
		case <-r.ctx.Done():
			r.t.Fatalf("waiting: sent %v, idle %v", r.sent, r.idle)
		}
	}
}

// check asserts that no job started twice, no node ran more than its two
// slots, and every job is either started or pending in exactly one way.
func (r *dispatchRig) check(ds []*capacity.Dispatcher, n int) {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, k := range r.started {
		if k > 1 {
			r.t.Errorf("job %s started %d times", id, k)
		}
	}
	for _, id := range r.nodes {
		if st := r.agents[id].Stats(); st.Oversold > 0 || st.PeakStarted > 2 {
			r.t.Errorf("node %s oversold: %+v", id, st)
		}
	}
	var pending []string
	for _, d := range ds {
		pending = append(pending, d.Pending()...)
	}
	for _, id := range pending {
		if r.started[id] > 0 {
			r.t.Errorf("job %s started and still pending", id)
		}
	}
	if len(pending)+len(r.started) != n {
		r.t.Errorf("pending %v and started %v do not add up to the %d jobs", pending, r.started, n)
	}
}

func (r *dispatchRig) finishAll() {
	for _, a := range r.agents {
		for {
			if _, ok := a.FinishOldest(); !ok {
				break
			}
		}
	}
}

// TestDispatcherOnRedis runs two capacity.Dispatchers, as two scheduler
// instances with their own Redis clients, against one redis-server: 12 jobs
// on three nodes of two slots, the first send of four jobs failing. The
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
	r := &dispatchRig{t: t, ctx: ctx, nodes: []string{"n0", "n1", "n2"}, agents: map[string]*fake.NodeAgent{},
		events: make(chan capacity.DispatcherEvent, 256), started: map[string]int{}, failed: map[string]bool{},
		sent: map[string]bool{}, idle: map[string]bool{}}
	nodeStore := newStore()
	for _, id := range r.nodes {
		a, err := fake.NewNodeAgent(id, 2, false, nodeStore) // no hard limit: an oversold node shows
		if err != nil {
			t.Fatal(err)
		}
		r.agents[id] = a
	}
	r.heartbeat()

	const jobs = 12
	var ds []*capacity.Dispatcher
	var wg sync.WaitGroup
	runCtx, stop := context.WithCancel(ctx)
	defer func() {
		stop()
		wg.Wait()
	}()
	for i := range 2 {
		d := &capacity.Dispatcher{Store: newStore(), Nodes: capacity.StaticNodes(r.nodes...), Send: r.send,
			Concurrency: 3, Clock: clk, Observer: capacity.ObserverFunc(func(e capacity.DispatcherEvent) { r.events <- e })}
		for j := range jobs / 2 {
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

	r.waitQuiet(jobs)
	r.check(ds, jobs)
	if len(r.sent) > 6 {
		t.Fatalf("%d jobs sent to 6 slots", len(r.sent))
	}
	// The nodes finish their jobs, the clock passes the requeue times, and
	// the waiting jobs go, until all are sent.
	for round := 0; len(r.sent) < jobs; round++ {
		if round == 10 {
			t.Fatalf("after %d rounds, sent only %v", round, r.sent)
		}
		r.finishAll()
		r.heartbeat()
		clear(r.idle)
		clk.Advance(capacity.DefaultTTL)
		r.waitQuiet(jobs)
		r.check(ds, jobs)
	}
	for _, d := range ds {
		if p := d.Pending(); len(p) > 0 {
			t.Errorf("still pending: %v", p)
		}
	}
}
