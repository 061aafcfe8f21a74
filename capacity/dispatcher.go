package capacity

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/plancore/plancore"
)

// Job is one unit of work waiting for a node.
type Job struct {
	// ID names the job. Required, and unique among the jobs a Dispatcher
	// holds; each attempt reserves under the rid "<ID>/<attempt>".
	ID string
	// SpreadKey is Decide's Input.SpreadKey for the job; empty means ID, so
	// that two scheduler instances sharing one store spread their jobs.
	SpreadKey string
}

// SendFunc hands a job to the node its lease names: the one step of the
// loop that is the user's. It returns nil once the node has taken the job
// (the node acknowledges the lease with the store's Ack and starts it only
// if the answer's Start() is true), and an error when the node did not take
// it; the Dispatcher then releases the lease and sends the job again later
// under a new attempt rid. A node that receives the job after the release
// gets AckExpired from a fenced store and must not start it, so a send that
// fails before the node acknowledges never runs a job twice. A send whose
// node acknowledged but whose answer was lost is indistinguishable from a
// failure: return nil when the node says it runs the job, or make the node
// refuse a job id it already runs.
type SendFunc func(ctx context.Context, job Job, lease Lease) error

// JobOutcome is what one attempt of a job came to.
type JobOutcome string

const (
	// JobSent: a lease was reserved and the send succeeded. The job leaves
	// the queue.
	JobSent JobOutcome = "Sent"
	// JobSendFailed: a lease was reserved, the send failed and the lease was
	// released (Released says whether the store still held it). The job is
	// sent again after DispatchOptions.RetryAfter under a new attempt rid.
	JobSendFailed JobOutcome = "SendFailed"
	// JobNoCapacity: no node could take the job; it is tried again after the
	// dispatch's RequeueAfter.
	JobNoCapacity JobOutcome = "NoCapacity"
	// JobStoreError: reading the loads or reserving failed (Err says why);
	// the job is tried again after DispatchOptions.RetryAfter under the same
	// rid, which is safe after an unknown outcome.
	JobStoreError JobOutcome = "StoreError"
	// JobInterrupted: the context ended during the attempt; the job stays in
	// the queue for the next Run. A lease it held is released.
	JobInterrupted JobOutcome = "Interrupted"
)

// String returns the outcome's name.
func (o JobOutcome) String() string { return string(o) }

// JobOutcomes lists every JobOutcome, for counters that declare their labels.
func JobOutcomes() []JobOutcome {
	return []JobOutcome{JobSent, JobSendFailed, JobNoCapacity, JobStoreError, JobInterrupted}
}

// DispatcherEvent reports one attempt of one job.
type DispatcherEvent struct {
	Job     Job
	Attempt int
	RID     string
	Outcome JobOutcome
	// Plan is Decide's plan (zero when the loads could not be read).
	Plan Plan
	// Result is the dispatch's (zero when it did not run).
	Result DispatchResult
	// Err is the store's or the send's error, nil for JobSent and
	// JobNoCapacity.
	Err error
	// Released reports, after a failed send or an interruption, whether the
	// release dropped a pending lease (false: the lease had lapsed, was
	// acknowledged, or the release failed, see ReleaseErr).
	Released   bool
	ReleaseErr error
	// RequeueAfter is when the job will be tried again (zero for JobSent and
	// JobInterrupted).
	RequeueAfter time.Duration
	// Pending is the number of jobs the Dispatcher holds after the attempt.
	Pending int
}

// DispatcherObserver receives every attempt's event, for metrics or logs.
// It is called from the Dispatcher's workers, concurrently, and must not
// block; the adapters/metrics package implements it with Prometheus.
type DispatcherObserver interface {
	ObserveJob(DispatcherEvent)
}

// ObserverFunc adapts a function to DispatcherObserver.
type ObserverFunc func(DispatcherEvent)

// ObserveJob calls f.
func (f ObserverFunc) ObserveJob(e DispatcherEvent) { f(e) }

// NodeLister returns the ids of the nodes to consider for a job.
type NodeLister func(ctx context.Context) ([]string, error)

// StaticNodes is a NodeLister for a fixed set of nodes.
func StaticNodes(ids ...string) NodeLister {
	ids = slices.Clone(ids)
	return func(context.Context) ([]string, error) { return ids, nil }
}

// DefaultDispatcherConcurrency is how many jobs a Dispatcher works on at
// once by default.
const DefaultDispatcherConcurrency = 4

// ErrDispatcherRunning is wrapped by Run when the Dispatcher is already
// running.
var ErrDispatcherRunning = errors.New("capacity: dispatcher already running")

// Dispatcher is the loop every scheduler writes around Decide and Dispatch,
// on the wall clock unless Clock is set: it holds a queue of pending jobs and, for each job whose time has come,
// reads the nodes' loads from the store, decides, reserves through the store,
// calls Send, releases the lease when the send fails, and requeues the job at
// the dispatch's RequeueAfter when no node has room. At most Concurrency
// jobs are worked on at once. Several Dispatchers (in one process or in
// several scheduler instances) may share one store: the store's reserve is
// the decision point, so no node is oversold whatever they do.
//
// Store, Nodes and Send are required. Submit adds jobs at any time; Run works
// until its context ends. A Dispatcher must not be copied after first use. It is the capacity package's second shell, after
// Dispatch: the only code here that reads the clock (Clock, the wall clock
// when nil) and starts goroutines.
type Dispatcher struct {
	Store SlotStore
	// Nodes lists the nodes to consider, read once per attempt.
	Nodes NodeLister
	// Send hands a job to the node of its lease.
	Send SendFunc
	// Options are Decide's.
	Options Options
	// Dispatch are Dispatch's options; Dispatch.RetryAfter (default 1 s) is
	// also the wait after a failed send or a store error. Dispatch.Clock is
	// ignored: the Dispatcher passes its own Clock.
	Dispatch DispatchOptions
	// Concurrency bounds the jobs in flight. Zero means
	// DefaultDispatcherConcurrency.
	Concurrency int
	// Clock reads the time and runs the requeue timers; nil means the wall
	// clock. Tests pass a fake.Clock.
	Clock clock.Clock
	// Observer, when set, receives every attempt's event, before the
	// attempt's slot of Concurrency is given to another job.
	Observer DispatcherObserver

	mu       sync.Mutex
	jobs     map[string]*queued // every job held: waiting or in flight
	queue    jobQueue           // the waiting ones, earliest first
	seq      uint64
	running  bool
	inflight int
	wake     chan struct{}
}

// queued is one job held by the Dispatcher.
type queued struct {
	job     Job
	attempt int
	ready   time.Time
	seq     uint64
	index   int // in queue; -1 while in flight
}

// jobQueue is a min-heap of waiting jobs by (ready, seq).
type jobQueue []*queued

func (q jobQueue) Len() int { return len(q) }
func (q jobQueue) Less(i, j int) bool {
	if !q[i].ready.Equal(q[j].ready) {
		return q[i].ready.Before(q[j].ready)
	}
	return q[i].seq < q[j].seq
}
func (q jobQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *jobQueue) Push(x any) {
	e := x.(*queued)
	e.index = len(*q)
	*q = append(*q, e)
}
func (q *jobQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	e.index = -1
	return e
}

// Validate reports every missing or out-of-range field at once, as a
// *plancore.InvalidError wrapping ErrInvalidOptions; a missing Store is
// reported there as well (the field "store").
func (d *Dispatcher) Validate() error {
	var errs field.ErrorList
	if d.Store == nil {
		errs = append(errs, field.Required(field.NewPath("store"), "a slot store is required"))
	}
	if d.Nodes == nil {
		errs = append(errs, field.Required(field.NewPath("nodes"), "a node lister is required"))
	}
	if d.Send == nil {
		errs = append(errs, field.Required(field.NewPath("send"), "a send function is required"))
	}
	if d.Concurrency < 0 {
		errs = append(errs, field.Invalid(field.NewPath("concurrency"), d.Concurrency, "must not be negative"))
	}
	var inv *plancore.InvalidError
	if err := d.Options.Validate(); errors.As(err, &inv) {
		for _, e := range inv.Errors {
			e.Field = "options." + e.Field
			errs = append(errs, e)
		}
	}
	if err := d.Dispatch.Validate(); errors.As(err, &inv) {
		for _, e := range inv.Errors {
			e.Field = "dispatch." + e.Field
			errs = append(errs, e)
		}
	}
	return plancore.Invalid(ErrInvalidOptions, errs)
}

func (d *Dispatcher) initLocked() {
	if d.jobs == nil {
		d.jobs = map[string]*queued{}
		d.wake = make(chan struct{}, 1)
	}
}

func (d *Dispatcher) clock() clock.Clock {
	if d.Clock == nil {
		return clock.RealClock{}
	}
	return d.Clock
}

// Submit adds a job, ready at once. An empty ID, or the ID of a job the
// Dispatcher already holds, is an error wrapping ErrInvalidInput.
func (d *Dispatcher) Submit(job Job) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.initLocked()
	var errs field.ErrorList
	switch {
	case job.ID == "":
		errs = append(errs, field.Required(field.NewPath("id"), "a job id is required"))
	case d.jobs[job.ID] != nil:
		errs = append(errs, field.Duplicate(field.NewPath("id"), job.ID))
	}
	if err := plancore.Invalid(ErrInvalidInput, errs); err != nil {
		return err
	}
	e := &queued{job: job, attempt: 1, ready: d.clock().Now(), seq: d.seq}
	d.seq++
	d.jobs[job.ID] = e
	heap.Push(&d.queue, e)
	d.notify()
	return nil
}

// Pending returns the ids of the jobs the Dispatcher holds (waiting or in
// flight), sorted: every job submitted and not yet sent.
func (d *Dispatcher) Pending() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]string, 0, len(d.jobs))
	for id := range d.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// notify wakes Run without blocking; d.mu must be held.
func (d *Dispatcher) notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run works on the queue until ctx ends, then waits for the attempts in
// flight to finish (each sees the ended context: its send is interrupted
// and its lease released) and returns nil, leaving no goroutine behind. Jobs
// not yet sent stay in the Dispatcher for the next Run. A Dispatcher that
// fails Validate returns that error at once, and a second concurrent Run
// returns ErrDispatcherRunning. Run fits controller-runtime's manager as
// manager.RunnableFunc(d.Run).
func (d *Dispatcher) Run(ctx context.Context) error {
	if err := d.Validate(); err != nil {
		return err
	}
	d.mu.Lock()
	d.initLocked()
	if d.running {
		d.mu.Unlock()
		return ErrDispatcherRunning
	}
	d.running = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.running = false
		d.mu.Unlock()
	}()
	limit := d.Concurrency
	if limit == 0 {
		limit = DefaultDispatcherConcurrency
	}
	clk := d.clock()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		if ctx.Err() != nil {
			return nil
		}
		now := clk.Now()
		wait := time.Duration(-1)
		d.mu.Lock()
		for d.queue.Len() > 0 && d.inflight < limit && !d.queue[0].ready.After(now) {
			e := heap.Pop(&d.queue).(*queued)
			d.inflight++
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.work(ctx, clk, e)
			}()
		}
		if d.queue.Len() > 0 && d.inflight < limit {
			wait = d.queue[0].ready.Sub(now)
		}
		d.mu.Unlock()
		var timer clock.Timer
		var fired <-chan time.Time
		if wait > 0 {
			timer = clk.NewTimer(wait)
			fired = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-fired:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// work makes one attempt of e and puts it back unless it was sent.
func (d *Dispatcher) work(ctx context.Context, clk clock.Clock, e *queued) {
	ev := d.attempt(ctx, clk, e)
	d.mu.Lock()
	switch ev.Outcome {
	case JobSent:
		delete(d.jobs, e.job.ID)
	default:
		if ev.Result.Verdict == Selected {
			// A lease was granted and released: a late ACK of this rid
			// must never match the next attempt's lease.
			e.attempt++
		}
		e.ready = clk.Now().Add(ev.RequeueAfter)
		e.seq = d.seq
		d.seq++
		heap.Push(&d.queue, e)
	}
	ev.Pending = len(d.jobs)
	d.mu.Unlock()
	// The event is observed before the job's slot goes to another job, so
	// with Concurrency 1 the events come in the order the jobs were worked
	// on (an observer that ran after the slot was freed could print a later
	// job's event first).
	if d.Observer != nil {
		d.Observer.ObserveJob(ev)
	}
	d.mu.Lock()
	d.inflight--
	d.notify()
	d.mu.Unlock()
}

// attempt runs the loop's steps once for e: loads, Decide, Dispatch, Send.
func (d *Dispatcher) attempt(ctx context.Context, clk clock.Clock, e *queued) DispatcherEvent {
	ev := DispatcherEvent{Job: e.job, Attempt: e.attempt, RID: e.job.ID + "/" + strconv.Itoa(e.attempt)}
	retry := d.Dispatch.RetryAfter
	if retry == 0 {
		retry = DefaultRetryAfter
	}
	fail := func(err error) DispatcherEvent {
		ev.Err = err
		if ctx.Err() != nil {
			ev.Outcome = JobInterrupted
			return ev
		}
		ev.Outcome, ev.RequeueAfter = JobStoreError, retry
		return ev
	}
	ids, err := d.Nodes(ctx)
	if err != nil {
		return fail(fmt.Errorf("capacity: dispatcher: listing nodes: %w", err))
	}
	loads, err := d.Store.Loads(ctx, ids)
	if err != nil {
		return fail(fmt.Errorf("capacity: dispatcher: reading loads: %w", err))
	}
	key := e.job.SpreadKey
	if key == "" {
		key = e.job.ID
	}
	ev.Plan, err = Decide(Input{Now: clk.Now(), Nodes: loads, SpreadKey: key}, d.Options)
	if err != nil {
		return fail(err) // unreachable after Validate: Now is set
	}
	o := d.Dispatch
	o.Clock = clk
	ev.Result, err = Dispatch(ctx, d.Store, ev.Plan, ev.RID, o)
	if err != nil {
		return fail(err)
	}
	if ev.Result.Verdict != Selected {
		ev.Outcome, ev.RequeueAfter = JobNoCapacity, ev.Result.RequeueAfter
		return ev
	}
	if err := ctx.Err(); err != nil {
		ev.Outcome, ev.Err = JobInterrupted, err
	} else if err := d.Send(ctx, e.job, ev.Result.Lease); err == nil {
		ev.Outcome = JobSent
		return ev
	} else {
		ev.Err = err
		ev.Outcome, ev.RequeueAfter = JobSendFailed, retry
		if ctx.Err() != nil {
			ev.Outcome, ev.RequeueAfter = JobInterrupted, 0
		}
	}
	// The lease must not outlive a send that did not happen, even when the
	// context has ended: release without its cancellation (the store's own
	// timeouts bound the call).
	ev.Released, ev.ReleaseErr = d.Store.Release(context.WithoutCancel(ctx), ev.Result.Lease.Node, ev.RID)
	return ev
}
