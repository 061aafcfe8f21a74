package fake

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// BurstConfig describes a burst of GPU pods binding to one node (spec gpu.md
// §3.1): every pod calls Bind at the start, and the device plugin holds the
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
	Violations []Violation
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
func RunBurst(w *World, cfg BurstConfig) (BurstReport, error) {
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
	if err := cfg.Options.Validate(); err != nil {
		return BurstReport{}, err
	}
	ctx := context.Background()
	pods := NewPodStore(w, PodStoreOptions{})
	g := NewGPUBind(w, pods, lock.Options{})
	g.AddNode(cfg.Node)
	start := w.Clock.Now()

	procs := make([]*simProc, cfg.Pods)
	for i := range procs {
		created, err := pods.CreatePod(ctx, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("burst-%02d", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: cfg.Limits}}}},
			Status:     corev1.PodStatus{Phase: corev1.PodPending},
		})
		if err != nil {
			return BurstReport{}, err
		}
		procs[i] = &simProc{ref: gpu.PodRef{Namespace: created.Namespace, Name: created.Name, UID: string(created.UID)}}
	}

	var (
		rep    BurstReport
		events simQueue
		seq    int
		holder = map[string]int{} // lock name -> proc that believes it holds it
		line   []int              // the node's queue, head first
	)
	push := func(at time.Time, kind simEventKind, proc, gen int) {
		seq++
		heap.Push(&events, simEvent{at: at, seq: seq, kind: kind, proc: proc, gen: gen})
	}
	violate := func(check, format string, args ...any) {
		rep.Violations = append(rep.Violations, Violation{Check: check, Detail: fmt.Sprintf(format, args...)})
	}
	startProc := func(i int, at time.Time) error {
		p := procs[i]
		in := gpu.BindInput{Pod: p.ref, Node: cfg.Node, Now: at, Registry: cfg.Registry, Options: cfg.Options, Seed: cfg.Seed}
		st, err := gpu.StartBind(in)
		if err != nil {
			return err
		}
		p.st, p.started = st, true
		push(at, simStep, i, 0)
		return nil
	}
	for i := range procs {
		if cfg.Queue {
			line = append(line, i)
			if i > 0 {
				continue
			}
		}
		if err := startProc(i, start); err != nil {
			return BurstReport{}, err
		}
	}

	// feed gives a result to proc i and schedules what follows.
	feed := func(i int, a gpu.Action, r gpu.Result) error {
		p := procs[i]
		next, err := gpu.StepBind(p.st, r)
		if err != nil {
			return err
		}
		p.st = next
		now := w.Clock.Now()
		switch {
		case a.Kind == gpu.ActLock && r.Err == nil:
			if h, ok := holder[a.Lock]; ok && h != i {
				violate("mutual exclusion", "%s took %s at %v while %s holds it", p.ref, a.Lock, now.Sub(start), procs[h].ref)
			}
			holder[a.Lock] = i
		case a.Kind == gpu.ActRelease && r.Err == nil:
			if holder[a.Lock] == i {
				delete(holder, a.Lock)
			}
		}
		if !p.st.Done() {
			push(now, simStep, i, 0)
			return nil
		}
		p.done, p.finished = true, now
		out := p.st.Outcome()
		if out.Bound {
			p.boundAt = now
			p.locks = nil
			for _, h := range out.Held {
				p.locks = append(p.locks, h.Name)
			}
			rep.BindOrder = append(rep.BindOrder, p.ref.Name)
			push(now.Add(cfg.Hold), simAllocate, i, 0)
		} else {
			if errors.Is(out.Err, lock.ErrContention) {
				rep.DeadlineFailures++
			}
			for name, h := range holder {
				if h == i {
					violate("failed bind keeps no lock", "%s failed (%v) but still holds %s", p.ref, out.Err, name)
				}
			}
		}
		if cfg.Queue && len(line) > 0 && line[0] == i {
			line = line[1:]
			if len(line) > 0 {
				return startProc(line[0], now)
			}
		}
		return nil
	}

	for len(events) > 0 {
		ev := heap.Pop(&events).(simEvent)
		p := procs[ev.proc]
		if stale := (ev.kind == simStep && (p.waiting || p.done)) ||
			(ev.kind == simWaitTimeout && (!p.waiting || ev.gen != p.waitGen)); stale {
			// A timeout of a wait that a change already ended moves nothing,
			// not even the clock.
			continue
		}
		w.Clock.Set(ev.at)
		switch ev.kind {
		case simStep:
			a := p.st.Next()
			rep.Actions++
			if a.Kind == gpu.ActWait {
				if len(a.WaitLocks) == 0 {
					p.wake = nil // polling: sleep out the whole wait
				}
				p.waiting = true
				p.waitGen++
				push(w.Clock.Now().Add(a.Wait), simWaitTimeout, ev.proc, p.waitGen)
				break
			}
			r, wake := gpu.Perform(ctx, a, g, func(node, name string) <-chan struct{} {
				return g.Locks.Changes(lock.Key{Name: name, Node: node})
			})
			if wake != nil {
				p.wake = wake
			}
			r.Now = w.Clock.Now()
			if err := feed(ev.proc, a, r); err != nil {
				return rep, err
			}
		case simWaitTimeout:
			p.waiting, p.wake = false, nil
			if err := feed(ev.proc, gpu.Action{Kind: gpu.ActWait}, gpu.Result{Now: w.Clock.Now()}); err != nil {
				return rep, err
			}
		case simAllocate:
			if err := g.Allocate(ctx, p.ref, cfg.Node, p.locks); err != nil {
				violate("allocation", "%s: %v", p.ref, err)
			}
			for _, name := range p.locks {
				if holder[name] == ev.proc {
					delete(holder, name)
				}
			}
			p.released = w.Clock.Now()
		}
		// Wake every waiter whose contended lock changed, in pod order.
		for i, q := range procs {
			if q.waiting && closed(q.wake) {
				q.waiting, q.wake = false, nil
				if err := feed(i, gpu.Action{Kind: gpu.ActWait}, gpu.Result{Now: w.Clock.Now(), Woken: true}); err != nil {
					return rep, err
				}
			}
		}
	}

	for _, p := range procs {
		bp := BurstPod{Pod: p.ref, Outcome: p.st.Outcome()}
		if !p.boundAt.IsZero() {
			bp.Bound = p.boundAt.Sub(start)
		}
		if !p.released.IsZero() {
			bp.Released = p.released.Sub(start)
		}
		rep.Completion = max(rep.Completion, bp.Released, p.finished.Sub(start))
		rep.Pods = append(rep.Pods, bp)
		if !p.started || !p.done {
			violate("every Bind finishes", "%s never finished", p.ref)
		}
	}
	return rep, nil
}
