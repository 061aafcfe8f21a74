package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/internal/invalidtest"
)

// rig is a scheduler's world for the Dispatcher tests: a MemoryStore and fake
// nodes on one fake clock, and a send function that delivers to the nodes
// with injected faults. Run the tests inside a synctest bubble: synctest.Wait
// tells when the Dispatcher is idle, with no sleep.
type rig struct {
	t      tb
	clk    *fake.Clock
	store  *capacity.MemoryStore
	agents map[string]*fake.NodeAgent
	ids    []string

	mu      sync.Mutex
	started map[string]int  // job id → starts on a node
	fail    map[string]int  // job id → sends still to fail before delivery
	hang    map[string]bool // rid → the send blocks until its context ends
	active  int             // sends in progress
	events  []capacity.DispatcherEvent
}

// tb is what the rig needs of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func newRig(t tb, max ...int) *rig {
	t.Helper()
	clk := fake.NewClock(t0)
	store, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clk: clk, store: store, agents: map[string]*fake.NodeAgent{},
		started: map[string]int{}, fail: map[string]int{}, hang: map[string]bool{}}
	for i, m := range max {
		id := fmt.Sprintf("n%d", i)
		// Without the node's own hard limit, so that an oversold node shows
		// in its Oversold counter instead of being hidden by a refusal.
		a, err := fake.NewNodeAgent(id, m, false, store)
		if err != nil {
			t.Fatal(err)
		}
		r.agents[id] = a
		r.ids = append(r.ids, id)
	}
	r.heartbeat()
	return r
}

func (r *rig) heartbeat() {
	for _, id := range r.ids {
		if _, err := r.agents[id].Heartbeat(context.Background(), capacity.Usage{}); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *rig) send(ctx context.Context, job capacity.Job, l capacity.Lease) error {
	r.mu.Lock()
	r.active++
	hang, fail := r.hang[l.RID], r.fail[job.ID] > 0
	if fail {
		r.fail[job.ID]--
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.active--
		r.mu.Unlock()
	}()
	switch {
	case hang:
		<-ctx.Done()
		return ctx.Err()
	case fail:
		return errors.New("node unreachable")
	case ctx.Err() != nil:
		return ctx.Err()
	}
	out, err := r.agents[l.Node].Dispatch(ctx, l)
	if err != nil {
		return err
	}
	if !out.Started {
		return fmt.Errorf("node did not start %s: accept %s, ack %s", l.RID, out.Accept, out.Ack)
	}
	r.mu.Lock()
	r.started[job.ID]++
	r.mu.Unlock()
	return nil
}

func (r *rig) dispatcher(concurrency int) *capacity.Dispatcher {
	return &capacity.Dispatcher{Store: r.store, Nodes: capacity.StaticNodes(r.ids...), Send: r.send,
		Concurrency: concurrency, Clock: r.clk,
		Observer: capacity.ObserverFunc(func(e capacity.DispatcherEvent) {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		})}
}

// start runs d until the returned stop is called; stop returns Run's error.
// A test that fails first stops it at cleanup, so that the bubble ends.
func start(t *testing.T, d *capacity.Dispatcher) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// outcomes lists the events so far as "rid:outcome", and forgets them.
func (r *rig) outcomes() []string {
	synctest.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.RID+":"+e.Outcome.String())
	}
	slices.Sort(out) // workers run concurrently
	r.events = nil
	return out
}

func (r *rig) submit(d *capacity.Dispatcher, ids ...string) {
	for _, id := range ids {
		if err := d.Submit(capacity.Job{ID: id}); err != nil {
			r.t.Fatal(err)
		}
	}
}

func TestDispatcherSendsAndRequeues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1, 1)
		d := r.dispatcher(1) // one at a time: the order below is the queue's
		stop := start(t, d)
		r.submit(d, "a", "b", "c")
		// Two nodes of one slot: two jobs go, the third finds no room and
		// waits Decide's 1 s hint.
		if diff := cmp.Diff([]string{"a/1:Sent", "b/1:Sent", "c/1:NoCapacity"}, r.outcomes()); diff != "" {
			t.Fatalf("first round (-want +got):\n%s", diff)
		}
		if got := d.Pending(); !slices.Equal(got, []string{"c"}) {
			t.Fatalf("pending = %v, want [c]", got)
		}
		// Nothing happens before the requeue time, even when a slot frees.
		if _, ok := r.agents["n0"].FinishOldest(); !ok {
			t.Fatal("n0 runs nothing")
		}
		r.heartbeat()
		r.clk.Advance(999 * time.Millisecond)
		if got := r.outcomes(); len(got) != 0 {
			t.Fatalf("before the requeue time: %v", got)
		}
		r.clk.Advance(time.Millisecond)
		if diff := cmp.Diff([]string{"c/1:Sent"}, r.outcomes()); diff != "" {
			t.Fatalf("after the requeue time (-want +got):\n%s", diff)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if len(d.Pending()) != 0 || r.started["a"] != 1 || r.started["b"] != 1 || r.started["c"] != 1 {
			t.Fatalf("pending %v, started %v", d.Pending(), r.started)
		}
	})
}

func TestDispatcherReleasesOnFailedSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		r.fail["a"] = 1
		d := r.dispatcher(1)
		d.Dispatch.RetryAfter = 3 * time.Second
		stop := start(t, d)
		r.submit(d, "a")
		if diff := cmp.Diff([]string{"a/1:SendFailed"}, r.outcomes()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		// The lease was released: the one slot of n0 is free again at once.
		loads, err := r.store.Loads(context.Background(), []string{"n0"})
		if err != nil || loads[0].Pending != 0 {
			t.Fatalf("loads = %+v, %v: the failed send's lease must be released", loads, err)
		}
		r.clk.Advance(3*time.Second - 1)
		if got := r.outcomes(); len(got) != 0 {
			t.Fatalf("before RetryAfter: %v", got)
		}
		r.clk.Advance(1)
		// The retry reserves under a new attempt rid.
		if diff := cmp.Diff([]string{"a/2:Sent"}, r.outcomes()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDispatcherEventOfFailedSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		r.fail["a"] = 1
		d := r.dispatcher(1)
		stop := start(t, d)
		r.submit(d, "a")
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.events) != 1 {
			t.Fatalf("events = %+v", r.events)
		}
		e := r.events[0]
		if e.Outcome != capacity.JobSendFailed || !e.Released || e.ReleaseErr != nil || e.Err == nil ||
			e.Result.Lease.Node != "n0" || e.RequeueAfter != capacity.DefaultRetryAfter || e.Pending != 1 || e.Attempt != 1 {
			t.Fatalf("event = %+v", e)
		}
	})
}

// downStore fails Loads while down is set.
type downStore struct {
	capacity.SlotStore
	mu   sync.Mutex
	down bool
}

func (s *downStore) Loads(ctx context.Context, nodes []string) ([]capacity.NodeLoad, error) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		return nil, fmt.Errorf("%w: connection refused", capacity.ErrStoreUnavailable)
	}
	return s.SlotStore.Loads(ctx, nodes)
}

func TestDispatcherRetriesStoreErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 2)
		ds := &downStore{SlotStore: r.store, down: true}
		d := r.dispatcher(1)
		d.Store = ds
		stop := start(t, d)
		r.submit(d, "a")
		if diff := cmp.Diff([]string{"a/1:StoreError"}, r.outcomes()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		ds.mu.Lock()
		ds.down = false
		ds.mu.Unlock()
		r.clk.Advance(capacity.DefaultRetryAfter)
		// Same rid: nothing was reserved, and a retry after an unknown
		// outcome is safe.
		if diff := cmp.Diff([]string{"a/1:Sent"}, r.outcomes()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDispatcherBoundsConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 10)
		for _, id := range []string{"a", "b", "c", "d"} {
			r.hang[id+"/1"] = true
		}
		d := r.dispatcher(2)
		stop := start(t, d)
		r.submit(d, "a", "b", "c", "d", "e")
		synctest.Wait()
		r.mu.Lock()
		active := r.active
		r.mu.Unlock()
		if active != 2 {
			t.Fatalf("%d sends in flight, want Concurrency 2", active)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		// Cancelled: the two hung sends were interrupted, their leases
		// released, and every job is still held.
		if r.active != 0 {
			t.Fatalf("%d sends still running after Run returned", r.active)
		}
		if got := d.Pending(); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
			t.Fatalf("pending = %v", got)
		}
		if diff := cmp.Diff([]string{"a/1:Interrupted", "b/1:Interrupted"}, r.outcomes()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		loads, err := r.store.Loads(context.Background(), []string{"n0"})
		if err != nil || loads[0].Pending != 0 {
			t.Fatalf("loads = %+v, %v: interrupted sends must release their leases", loads, err)
		}
		// A new Run sends every job, the interrupted ones under new attempt
		// rids.
		clear(r.hang)
		stop = start(t, d)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a/2:Sent", "b/2:Sent", "c/1:Sent", "d/1:Sent", "e/1:Sent"}, r.outcomes()); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	})
}

func TestDispatcherRefusesMisuse(t *testing.T) {
	var d capacity.Dispatcher
	d.Concurrency = -1
	d.Options.MaxJobs = -1
	d.Dispatch.TTL = -1
	err := d.Run(context.Background())
	invalidtest.Check(t, err, capacity.ErrInvalidOptions, []string{"store", "nodes", "send", "concurrency", "options.maxJobs", "dispatch.ttl"})
	invalidtest.Check(t, d.Submit(capacity.Job{}), capacity.ErrInvalidInput, []string{"id"})
	invalidtest.Check(t, d.Submit(capacity.Job{ID: "a"}), nil, nil)
	invalidtest.Check(t, d.Submit(capacity.Job{ID: "a"}), capacity.ErrInvalidInput, []string{"id"})

	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		d := r.dispatcher(1)
		stop := start(t, d)
		synctest.Wait()
		if err := d.Run(context.Background()); !errors.Is(err, capacity.ErrDispatcherRunning) {
			t.Errorf("second Run = %v, want ErrDispatcherRunning", err)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// dispatcherCase is one drawn scenario of the Dispatcher property. Every
// draw happens before the synctest bubble starts: rapid may not run inside
// one.
type dispatcherCase struct {
	maxes       []int
	fail        []int  // per job: sends that fail before delivery
	hang        []bool // per job: the first send hangs until cancellation
	concurrency int
	finish      []bool // per round before the cancellation: nodes finish a job
}

// TestDispatcherPropertyNoJobLostOrSentTwice runs a Dispatcher on the
// MemoryStore with fake nodes, sends that fail before delivery, sends that
// hang until the context ends, a cancellation at a random round, and nodes
// that finish their jobs: no job is lost (every job is sent or still held),
// none is started twice, no node runs more than its M, and after a second
// Run without faults every job has been sent. Run returning leaves no
// goroutine behind (synctest.Test fails on one left blocked).
//
// Breaking work to requeue a sent job (dropping the JobSent case) fails it
// on a job started twice; treating JobSendFailed as done fails it on a lost
// job; letting the ledger's reserve grant one slot beyond M fails it on an
// oversold node.
func TestDispatcherPropertyNoJobLostOrSentTwice(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := dispatcherCase{maxes: rapid.SliceOfN(rapid.IntRange(1, 3), 1, 4).Draw(rt, "maxes")}
		n := rapid.IntRange(1, 12).Draw(rt, "jobs")
		c.fail = rapid.SliceOfN(rapid.IntRange(0, 2), n, n).Draw(rt, "fail")
		c.hang = rapid.SliceOfN(rapid.Bool(), n, n).Draw(rt, "hang")
		c.concurrency = rapid.IntRange(1, 4).Draw(rt, "concurrency")
		c.finish = rapid.SliceOfN(rapid.Bool(), 0, 6).Draw(rt, "finish")
		var err error
		synctest.Test(t, func(t *testing.T) { err = runDispatcherCase(t, c) })
		if err != nil {
			rt.Fatal(err)
		}
	})
}

func runDispatcherCase(t *testing.T, c dispatcherCase) error {
	r := newRig(t, c.maxes...)
	var ids []string
	for i := range c.fail {
		id := fmt.Sprintf("j%02d", i)
		ids = append(ids, id)
		r.fail[id] = c.fail[i]
		r.hang[id+"/1"] = c.hang[i]
	}
	d := r.dispatcher(c.concurrency)
	check := func(phase string) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		pending := d.Pending()
		for _, id := range ids {
			held := slices.Contains(pending, id)
			switch s := r.started[id]; {
			case s > 1:
				return fmt.Errorf("%s: job %s started %d times", phase, id, s)
			case s == 1 && held:
				return fmt.Errorf("%s: job %s started and still held", phase, id)
			case s == 0 && !held:
				return fmt.Errorf("%s: job %s lost: neither started nor held", phase, id)
			}
		}
		for _, id := range r.ids {
			if st := r.agents[id].Stats(); st.Oversold > 0 {
				return fmt.Errorf("%s: node %s oversold: %+v", phase, id, st)
			}
		}
		return nil
	}
	stop := start(t, d)
	r.submit(d, ids...)
	for round, finish := range c.finish {
		synctest.Wait()
		if err := check(fmt.Sprintf("round %d", round)); err != nil {
			_ = stop()
			return err
		}
		if finish {
			for _, a := range r.agents {
				a.FinishOldest()
			}
			r.heartbeat()
		}
		r.clk.Advance(time.Second)
	}
	if err := stop(); err != nil {
		return err
	}
	r.mu.Lock()
	active := r.active
	r.mu.Unlock()
	if active != 0 {
		return fmt.Errorf("%d sends running after Run returned", active)
	}
	if err := check("after cancel"); err != nil {
		return err
	}
	// Without faults and with nodes that finish their jobs, a second Run
	// sends everything still held.
	r.mu.Lock()
	clear(r.fail)
	clear(r.hang)
	r.mu.Unlock()
	stop = start(t, d)
	for round := 0; round < 4*len(ids)+10 && len(d.Pending()) > 0; round++ {
		synctest.Wait()
		for _, a := range r.agents {
			for {
				if _, ok := a.FinishOldest(); !ok {
					break
				}
			}
		}
		r.heartbeat()
		r.clk.Advance(time.Second)
	}
	if err := stop(); err != nil {
		return err
	}
	if err := check("drained"); err != nil {
		return err
	}
	if p := d.Pending(); len(p) > 0 {
		return fmt.Errorf("jobs never sent: %v", p)
	}
	return nil
}

// BenchmarkDispatcher measures the Dispatcher's cost per job on the
// MemoryStore, wall clock, 16 nodes of 1024 slots, sends that succeed at
// once (an ACK to the store): the loop's own overhead around Loads, Decide
// and Reserve.
func BenchmarkDispatcher(b *testing.B) {
	for _, conc := range []int{1, 4} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			ctx := context.Background()
			store, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{})
			if err != nil {
				b.Fatal(err)
			}
			var ids []string
			for i := range 16 {
				id := fmt.Sprintf("n%02d", i)
				ids = append(ids, id)
				if _, err := store.Heartbeat(ctx, id, capacity.Heartbeat{Epoch: 1, Seq: 1, Max: capacity.MaxLimit}); err != nil {
					b.Fatal(err)
				}
			}
			var mu sync.Mutex
			sent := 0
			done := make(chan struct{})
			d := &capacity.Dispatcher{Store: store, Nodes: capacity.StaticNodes(ids...), Concurrency: conc,
				Send: func(ctx context.Context, job capacity.Job, l capacity.Lease) error {
					// Release instead of Ack, so that the nodes never fill up.
					_, err := store.Release(ctx, l.Node, l.RID)
					mu.Lock()
					sent++
					if sent == b.N {
						close(done)
					}
					mu.Unlock()
					return err
				}}
			for i := range b.N {
				if err := d.Submit(capacity.Job{ID: strconv.Itoa(i)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			runCtx, stop := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() { errc <- d.Run(runCtx) }()
			<-done
			b.StopTimer()
			stop()
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
		})
	}
}
