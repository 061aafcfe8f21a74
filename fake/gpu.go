package fake

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// Kinds of GPUBind's calls, for Faults and the call log. Lock and release go
// through LockStore, whose kinds are LockGet, LockCAS and LockCAD.
const (
	KindGPUNodeGet  = "gpu.node.get"
	KindGPUPodPatch = "gpu.pod.patch"
	KindGPUPodBind  = "gpu.pod.bind"
	KindGPUEvent    = "gpu.event"
	KindGPUForget   = "gpu.forget"
)

var nodesResource = schema.GroupResource{Resource: "nodes"}

// GPUEvent is one event GPUBind recorded.
type GPUEvent struct {
	At                    time.Time
	Pod                   gpu.PodRef
	Type, Reason, Message string
}

// GPUBind is the in-memory gpu.BindExecutor: pods live in a PodStore, nodes
// are a set, and Lock and Release go through the lock core's Locker
// (Acquire/Release) on a LockStore over a lock.MemoryStore, so every decision
// is the real one and every store call can be failed, delayed or lose its
// response. It also plays the device plugin: Allocate verifies the fence,
// writes bind-phase=success and releases the pod's locks.
type GPUBind struct {
	World  *World
	Pods   *PodStore
	Locks  *LockStore
	Locker *lock.Locker

	mu        sync.Mutex
	nodes     map[string]bool
	events    []GPUEvent
	forgotten []gpu.PodRef
}

// NewGPUBind returns an executor over pods and a fresh LockStore, deciding
// with opts. The Locker never waits by itself (gpu's retry does that); its
// clock is the World's and its jitter comes from the World's seed.
func NewGPUBind(w *World, pods *PodStore, opts lock.Options) *GPUBind {
	g := &GPUBind{World: w, Pods: pods, Locks: NewLockStore(w), nodes: map[string]bool{}}
	seed := uint64(w.Faults.IntN(1 << 62))
	g.Locker = &lock.Locker{
		Store:   g.Locks,
		Options: opts,
		Holder: func(ctx context.Context, _ lock.Key, rec lock.Record) lock.Holder {
			p, err := pods.GetPod(ctx, rec.Namespace, rec.Name)
			if err != nil {
				return lock.ClassifyHolder(nil, err, rec, opts.Identity)
			}
			return lock.ClassifyHolder(&p, nil, rec, opts.Identity)
		},
		Clock: advancingClock{w.Clock},
		Rand:  rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d)),
	}
	return g
}

// advancingClock is the World's clock for a shell that must not block: a
// timer moves the shared clock by its duration and fires at once, so "wait
// for d" means "let d pass" for this caller only (the World's clock keeps
// AutoAdvance off for everyone else).
type advancingClock struct{ *Clock }

func (c advancingClock) NewTimer(d time.Duration) clock.Timer {
	c.Advance(d)
	return c.Clock.NewTimer(0)
}

func (c advancingClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

func (c advancingClock) Sleep(d time.Duration) { c.Advance(d) }

// AddNode registers a node.
func (g *GPUBind) AddNode(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nodes[name] = true
}

// Events returns every recorded event, in order.
func (g *GPUBind) Events() []GPUEvent {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.events)
}

// Forgotten returns every pod whose assumed usage was dropped, in order.
func (g *GPUBind) Forgotten() []gpu.PodRef {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.forgotten)
}

func requester(p gpu.PodRef) lock.Requester {
	return lock.Requester{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// GetPod implements gpu.BindExecutor.
func (g *GPUBind) GetPod(ctx context.Context, ref gpu.PodRef) (*corev1.Pod, error) {
	p, err := g.Pods.GetPod(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// GetNode implements gpu.BindExecutor.
func (g *GPUBind) GetNode(ctx context.Context, node string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return g.World.Do(KindGPUNodeGet, node, func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.nodes[node] {
			return apierrors.NewNotFound(nodesResource, node)
		}
		return nil
	})
}

// Lock implements gpu.BindExecutor with lock.Locker.Acquire.
func (g *GPUBind) Lock(ctx context.Context, node, lockName string, pod gpu.PodRef) (uint64, error) {
	grant, err := g.Locker.Acquire(ctx, lock.Key{Name: lockName, Node: node}, requester(pod))
	if err != nil {
		return 0, err
	}
	return grant.Record().Epoch, nil
}

// Release implements gpu.BindExecutor with lock.Locker.Release.
func (g *GPUBind) Release(ctx context.Context, node, lockName string, pod gpu.PodRef) error {
	_, err := g.Locker.Release(ctx, lock.Key{Name: lockName, Node: node}, requester(pod))
	return err
}

// PatchPodAnnotations implements gpu.BindExecutor: a merge patch, no
// resourceVersion.
func (g *GPUBind) PatchPodAnnotations(ctx context.Context, ref gpu.PodRef, annotations map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return g.World.Do(KindGPUPodPatch, ref.String(), func() error {
		return g.Pods.Mutate(ref.Namespace, ref.Name, func(p *corev1.Pod) {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			for k, v := range annotations {
				p.Annotations[k] = v
			}
		})
	})
}

// Bind implements gpu.BindExecutor: it sets the pod's node, succeeds again for
// the same node (idempotent), and refuses a pod bound elsewhere or replaced
// (another UID) with Conflict, as the API server does.
func (g *GPUBind) Bind(ctx context.Context, ref gpu.PodRef, node string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return g.World.Do(KindGPUPodBind, ref.String()+"->"+node, func() error {
		var conflict error
		err := g.Pods.Mutate(ref.Namespace, ref.Name, func(p *corev1.Pod) {
			switch {
			case ref.UID != "" && string(p.UID) != ref.UID:
				conflict = fmt.Errorf("pod %s has UID %s, the binding names %s", ref, p.UID, ref.UID)
			case p.Spec.NodeName != "" && p.Spec.NodeName != node:
				conflict = fmt.Errorf("pod %s is already bound to %s", ref, p.Spec.NodeName)
			default:
				p.Spec.NodeName = node
			}
		})
		if conflict != nil {
			return apierrors.NewConflict(podsResource, ref.Name, conflict)
		}
		return err
	})
}

// Event implements gpu.BindExecutor.
func (g *GPUBind) Event(_ context.Context, ref gpu.PodRef, eventType, reason, message string) error {
	return g.World.Do(KindGPUEvent, ref.String(), func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.events = append(g.events, GPUEvent{At: g.World.Clock.Now(), Pod: ref, Type: eventType, Reason: reason, Message: message})
		return nil
	})
}

// ForgetAssumed implements gpu.BindExecutor.
func (g *GPUBind) ForgetAssumed(_ context.Context, ref gpu.PodRef) error {
	return g.World.Do(KindGPUForget, ref.String(), func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.forgotten = append(g.forgotten, ref)
		return nil
	})
}

// ErrFenceRejected is returned by Allocate when the lock no longer carries the
// epoch the pod was bound under: the lock was stolen, so serving the pod would
// cross-wire devices.
var ErrFenceRejected = errors.New("fake: allocation fenced off: the lock record does not match the pod's epoch")

// Allocate plays HAMi's device plugin after a successful Bind: for each lock,
// it reads the record (with its sidecar, as lock.PlanAcquire does: a store that
// shares its key with HAMi keeps the UID and epoch there, see lock.Observation.Record)
// and checks gpu.VerifyFence, then writes bind-phase=success and releases the
// locks (owner-checked) in reverse order. A failed fence writes
// bind-phase=failed and releases nothing it does not own.
func (g *GPUBind) Allocate(ctx context.Context, ref gpu.PodRef, node string, lockNames []string) error {
	pod, err := g.GetPod(ctx, ref)
	if err != nil {
		return err
	}
	for _, name := range lockNames {
		obs, err := g.Locks.Get(ctx, lock.Key{Name: name, Node: node})
		if err != nil {
			return err
		}
		rec, _, derr := obs.Record()
		if !obs.Present || derr != nil || !gpu.VerifyFence(rec, name, pod) {
			if err := g.PatchPodAnnotations(ctx, ref, map[string]string{gpu.AnnoBindPhase: gpu.PhaseFailed}); err != nil {
				return errors.Join(ErrFenceRejected, err)
			}
			return fmt.Errorf("%w: lock %s on %s holds %q", ErrFenceRejected, name, node, obs.Raw)
		}
	}
	if err := g.PatchPodAnnotations(ctx, ref, map[string]string{gpu.AnnoBindPhase: gpu.PhaseSuccess}); err != nil {
		return err
	}
	var errs []error
	for i := len(lockNames) - 1; i >= 0; i-- {
		errs = append(errs, g.Release(ctx, node, lockNames[i], ref))
	}
	return errors.Join(errs...)
}

// ClockWaiter is a gpu.Waiter on the World's clock for Binds run one after
// another in a single goroutine: Sleep runs the scheduled callbacks (At) that
// fall within the sleep, in time order, and ends early, woken, as soon as the
// wake channel is closed.
type ClockWaiter struct {
	World *World
	Locks *LockStore

	mu    sync.Mutex
	queue []scheduled
	seq   int
}

type scheduled struct {
	at  time.Time
	seq int
	f   func()
}

// At schedules f to run when a Sleep reaches t.
func (c *ClockWaiter) At(t time.Time, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.queue = append(c.queue, scheduled{at: t, seq: c.seq, f: f})
	slices.SortFunc(c.queue, func(a, b scheduled) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
}

// Now implements gpu.Waiter.
func (c *ClockWaiter) Now() time.Time { return c.World.Clock.Now() }

// Changes implements gpu.Waiter through the LockStore.
func (c *ClockWaiter) Changes(node, lockName string) <-chan struct{} {
	return c.Locks.Changes(lock.Key{Name: lockName, Node: node})
}

// Sleep implements gpu.Waiter on simulated time.
func (c *ClockWaiter) Sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) (bool, error) {
	end := c.World.Clock.Now().Add(d)
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if closed(wake) {
			return true, nil
		}
		c.mu.Lock()
		if len(c.queue) == 0 || c.queue[0].at.After(end) {
			c.mu.Unlock()
			c.World.Clock.Set(end)
			return false, nil
		}
		next := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		c.World.Clock.Set(next.at)
		next.f()
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
