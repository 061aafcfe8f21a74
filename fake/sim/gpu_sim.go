package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"github.com/plancore/plancore/fake"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// BurstConfig describes a burst of GPU pods binding to one node (many pods
// binding to one node at once): every pod calls Bind at the start, and the device plugin holds the
// node lock for Hold after each successful Bind before releasing it.
type BurstConfig struct {
	// Node is the target node; default "gpu-node".
	Node string
	// Pods is the number of pods; default 40.
	Pods int
	// Hold is how long the device plugin keeps the lock per pod; default 22 ms.
	Hold time.Duration
	// Queue serves the node's Binds one at a time in arrival order
	// (gpu.NodeQueue); without it every pod retries on its own.
	Queue bool
	// Options are the Bind options.
	Options gpu.Options
	// Registry is the device registry; the zero Registry means the default.
	Registry gpu.Registry
	// Limits are each pod's container limits; default one nvidia.com/gpu.
	Limits corev1.ResourceList
	// Seed feeds the Bind jitter.
	Seed uint64
}

// BurstPod is one pod's fate in a burst.
type BurstPod struct {
	Pod gpu.PodRef
	// Bound and Released are the simulated offsets at which Bind returned
	// success and the device plugin released the lock (zero if never).
	Bound, Released time.Duration
	// Outcome is the Bind outcome.
	Outcome gpu.Outcome
}

// BurstReport is what a burst simulation measured.
type BurstReport struct {
	// Completion is the offset of the last device-plugin release, or of the
	// last Bind to finish when a Bind failed.
	Completion time.Duration
	// Pods lists every pod's fate, in pod order.
	Pods []BurstPod
	// BindOrder lists pods in the order their Binds succeeded.
	BindOrder []string
	// Violations lists every breach of mutual exclusion or of the Bind
	// contract seen during the run.
	Violations []fake.Violation
	// DeadlineFailures counts Binds that gave up on contention.
	DeadlineFailures int
	// Actions counts the Bind actions performed.
	Actions int
}

// Failed counts the pods whose Bind failed.
func (r BurstReport) Failed() int {
	n := 0
	for _, p := range r.Pods {
		if !p.Outcome.Bound {
			n++
		}
	}
	return n
}

type simEventKind int

const (
	simStep simEventKind = iota
	simWaitTimeout
	simAllocate
)

type simEvent struct {
	at   time.Time
	seq  int
	kind simEventKind
	proc int
	gen  int // the wait generation a timeout belongs to
}

// simQueue is a min-heap of events by time, then by scheduling order.
type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if c := q[i].at.Compare(q[j].at); c != 0 {
		return c < 0
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	ev := old[len(old)-1]
	*q = old[:len(old)-1]
	return ev
}

type simProc struct {
	ref      gpu.PodRef
	st       gpu.BindState
	started  bool
	done     bool
	waiting  bool
	waitGen  int
	wake     <-chan struct{}
	locks    []string
	boundAt  time.Time
	finished time.Time
	released time.Time
}

// RunBurst simulates cfg on w's clock and returns what happened. Binds run as
// gpu's pure state machines interleaved on one goroutine in simulated time:
// every action is performed through GPUBind (so locking is the lock core's
// Acquire/Release on the in-memory store, with w's faults and latency), a Wait
// ends at its timeout or as soon as the contended lock's change channel
// fires, and each bound pod is allocated by the simulated device plugin Hold
// later. The run is deterministic for a given World seed and cfg.
func RunBurst(w *fake.World, cfg BurstConfig) (BurstReport, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Options.Validate(); err != nil {
		return BurstReport{}, err
	}
	s := &burstSim{w: w, cfg: cfg, ctx: context.Background(), holder: map[string]int{}}
	pods := fake.NewPodStore(w, fake.PodStoreOptions{})
	s.g = fake.NewGPUBind(w, pods, lock.Options{})
	s.g.AddNode(cfg.Node)
	s.start = w.Clock.Now()
	if err := s.createPods(pods); err != nil {
		return BurstReport{}, err
	}
	for i := range s.procs {
		if cfg.Queue {
			s.line = append(s.line, i)
			if i > 0 {
				continue
			}
		}
		if err := s.startProc(i, s.start); err != nil {
			return BurstReport{}, err
		}
	}
	for len(s.events) > 0 {
		if err := s.next(); err != nil {
			return s.rep, err
		}
	}
	s.report()
	return s.rep, nil
}

func (cfg BurstConfig) withDefaults() BurstConfig {
	if cfg.Node == "" {
		cfg.Node = "gpu-node"
	}
	if cfg.Pods == 0 {
		cfg.Pods = 40
	}
	if cfg.Hold == 0 {
		cfg.Hold = 22 * time.Millisecond
	}
	if len(cfg.Registry.Types()) == 0 {
		cfg.Registry = gpu.DefaultRegistry()
	}
	if cfg.Limits == nil {
		cfg.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	}
	return cfg
}

// burstSim is one RunBurst: its processes, its event queue and who believes
// it holds each lock.
type burstSim struct {
	w      *fake.World
	cfg    BurstConfig
	ctx    context.Context
	g      *fake.GPUBind
	start  time.Time
	procs  []*simProc
	rep    BurstReport
	events simQueue
	seq    int
	holder map[string]int // lock name -> proc that believes it holds it
	line   []int          // the node's queue, head first
}

func (s *burstSim) createPods(pods *fake.PodStore) error {
	s.procs = make([]*simProc, s.cfg.Pods)
	for i := range s.procs {
		created, err := pods.CreatePod(s.ctx, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("burst-%02d", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: s.cfg.Limits}}}},
			Status:     corev1.PodStatus{Phase: corev1.PodPending},
		})
		if err != nil {
			return err
		}
		s.procs[i] = &simProc{ref: gpu.PodRef{Namespace: created.Namespace, Name: created.Name, UID: string(created.UID)}}
	}
	return nil
}

func (s *burstSim) push(at time.Time, kind simEventKind, proc, gen int) {
	s.seq++
	heap.Push(&s.events, simEvent{at: at, seq: s.seq, kind: kind, proc: proc, gen: gen})
}

func (s *burstSim) violate(check, format string, args ...any) {
	s.rep.Violations = append(s.rep.Violations, fake.Violation{Check: check, Detail: fmt.Sprintf(format, args...)})
}

func (s *burstSim) startProc(i int, at time.Time) error {
	p := s.procs[i]
	in := gpu.BindInput{Pod: p.ref, Node: s.cfg.Node, Now: at, Registry: s.cfg.Registry, Options: s.cfg.Options, Seed: s.cfg.Seed}
	st, err := gpu.StartBind(in)
	if err != nil {
		return err
	}
	p.st, p.started = st, true
	s.push(at, simStep, i, 0)
	return nil
}

// feed gives a result to proc i and schedules what follows.
func (s *burstSim) feed(i int, a gpu.Action, r gpu.Result) error {
	p := s.procs[i]
	next, err := gpu.StepBind(p.st, r)
	if err != nil {
		return err
	}
	p.st = next
	now := s.w.Clock.Now()
	s.trackLocks(i, a, r, now)
	if !p.st.Done() {
		s.push(now, simStep, i, 0)
		return nil
	}
	s.finish(i, now)
	if s.cfg.Queue && len(s.line) > 0 && s.line[0] == i {
		s.line = s.line[1:]
		if len(s.line) > 0 {
			return s.startProc(s.line[0], now)
		}
	}
	return nil
}

// trackLocks checks mutual exclusion on what proc i's action did.
func (s *burstSim) trackLocks(i int, a gpu.Action, r gpu.Result, now time.Time) {
	switch {
	case a.Kind == gpu.ActionLock && r.Err == nil:
		if h, ok := s.holder[a.Lock]; ok && h != i {
			s.violate("mutual exclusion", "%s took %s at %v while %s holds it", s.procs[i].ref, a.Lock, now.Sub(s.start), s.procs[h].ref)
		}
		s.holder[a.Lock] = i
	case a.Kind == gpu.ActionRelease && r.Err == nil:
		if s.holder[a.Lock] == i {
			delete(s.holder, a.Lock)
		}
	}
}

// finish records proc i's finished Bind: a bound pod is allocated Hold
// later; a failed one must hold no lock.
func (s *burstSim) finish(i int, now time.Time) {
	p := s.procs[i]
	p.done, p.finished = true, now
	out := p.st.Outcome()
	if out.Bound {
		p.boundAt = now
		p.locks = nil
		for _, h := range out.Held {
			p.locks = append(p.locks, h.Name)
		}
		s.rep.BindOrder = append(s.rep.BindOrder, p.ref.Name)
		s.push(now.Add(s.cfg.Hold), simAllocate, i, 0)
		return
	}
	if errors.Is(out.Err, lock.ErrContention) {
		s.rep.DeadlineFailures++
	}
	for name, h := range s.holder {
		if h == i {
			s.violate("failed bind keeps no lock", "%s failed (%v) but still holds %s", p.ref, out.Err, name)
		}
	}
}

// next handles the earliest event, then wakes the waiters it released.
func (s *burstSim) next() error {
	ev := heap.Pop(&s.events).(simEvent)
	p := s.procs[ev.proc]
	if stale := (ev.kind == simStep && (p.waiting || p.done)) ||
		(ev.kind == simWaitTimeout && (!p.waiting || ev.gen != p.waitGen)); stale {
		// A timeout of a wait that a change already ended moves nothing,
		// not even the clock.
		return nil
	}
	s.w.Clock.Set(ev.at)
	var err error
	switch ev.kind {
	case simStep:
		err = s.step(ev.proc)
	case simWaitTimeout:
		p.waiting, p.wake = false, nil
		err = s.feed(ev.proc, gpu.Action{Kind: gpu.ActionWait}, gpu.Result{Now: s.w.Clock.Now()})
	case simAllocate:
		s.allocate(ev.proc)
	}
	if err != nil {
		return err
	}
	return s.wakeWaiters()
}

// step performs proc i's next action, or starts its wait.
func (s *burstSim) step(i int) error {
	p := s.procs[i]
	a := p.st.Next()
	s.rep.Actions++
	if a.Kind == gpu.ActionWait {
		if len(a.WaitLocks) == 0 {
			p.wake = nil // polling: sleep out the whole wait
		}
		p.waiting = true
		p.waitGen++
		s.push(s.w.Clock.Now().Add(a.Wait), simWaitTimeout, i, p.waitGen)
		return nil
	}
	r, wake := gpu.Perform(s.ctx, a, s.g, func(node, name string) <-chan struct{} {
		return s.g.Locks.Changes(lock.Key{Name: name, Node: node})
	})
	if wake != nil {
		p.wake = wake
	}
	r.Now = s.w.Clock.Now()
	return s.feed(i, a, r)
}

// allocate plays the device plugin for proc i: it releases the pod's locks.
func (s *burstSim) allocate(i int) {
	p := s.procs[i]
	if err := s.g.Allocate(s.ctx, p.ref, s.cfg.Node, p.locks); err != nil {
		s.violate("allocation", "%s: %v", p.ref, err)
	}
	for _, name := range p.locks {
		if s.holder[name] == i {
			delete(s.holder, name)
		}
	}
	p.released = s.w.Clock.Now()
}

// wakeWaiters wakes every waiter whose contended lock changed, in pod order.
func (s *burstSim) wakeWaiters() error {
	for i, q := range s.procs {
		if q.waiting && closed(q.wake) {
			q.waiting, q.wake = false, nil
			if err := s.feed(i, gpu.Action{Kind: gpu.ActionWait}, gpu.Result{Now: s.w.Clock.Now(), Woken: true}); err != nil {
				return err
			}
		}
	}
	return nil
}

// report fills the per-pod results and checks every Bind finished.
func (s *burstSim) report() {
	for _, p := range s.procs {
		bp := BurstPod{Pod: p.ref, Outcome: p.st.Outcome()}
		if !p.boundAt.IsZero() {
			bp.Bound = p.boundAt.Sub(s.start)
		}
		if !p.released.IsZero() {
			bp.Released = p.released.Sub(s.start)
		}
		s.rep.Completion = max(s.rep.Completion, bp.Released, p.finished.Sub(s.start))
		s.rep.Pods = append(s.rep.Pods, bp)
		if !p.started || !p.done {
			s.violate("every Bind finishes", "%s never finished", p.ref)
		}
	}
}

// closed reports whether ch is closed, without blocking; a nil channel never is.
func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
