package extender

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// KubeConfig is what ForKubernetes needs: a client and a cache of the
// cluster the extender schedules for.
type KubeConfig struct {
	// Client writes pods, bindings, events and the node locks. Required.
	Client client.Client
	// Reader is the controller-runtime cache of Nodes and Pods (Client when
	// nil).
	Reader client.Reader
	// Registry, Options, Clock and Seed are as in Config; LockOptions tunes
	// the node lock (lock.HAMi() when zero: HAMi's wire format, TTL and
	// legacy rules, so HAMi's device plugins release what the extender
	// takes).
	Registry    gpu.Registry
	Options     gpu.Options
	LockOptions *lock.Options
	Clock       clock.Clock
	Seed        uint64
	// Recorder, when set, records the Bind events on the pods.
	Recorder record.EventRecorder
	// Limits bounds what one request may cost, and KubeScheduler is
	// kube-scheduler's entry for this extender, checked when it starts, as
	// in Config.
	Limits        Limits
	KubeScheduler *configv1.Extender
}

// ForKubernetes wires a Scheduler for a live cluster: the node lock on Node
// annotations (kube.NodeLockStore, the holder pod looked up by UID then
// name), the Bind flow through kube.BindExecutor with one Bind per node at a
// time (gpu.NodeQueue), and the executor's ForgetAssumed calling
// Scheduler.Forget.
func ForKubernetes(c KubeConfig) (*Scheduler, error) {
	reader := c.Reader
	if reader == nil {
		reader = c.Client
	}
	store := &kube.NodeLockStore{Client: c.Client, Reader: reader}
	lockOpts := lock.HAMi()
	if c.LockOptions != nil {
		lockOpts = *c.LockOptions
	}
	exec := &kube.BindExecutor{
		Client: c.Client, Reader: reader, Recorder: c.Recorder,
		Locker: &lock.Locker{Store: store, Options: lockOpts, Clock: c.Clock,
			Holder: func(ctx context.Context, _ lock.Key, r lock.Record) lock.Holder {
				var p corev1.Pod
				err := reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, &p)
				return lock.ClassifyHolder(&p, err, r, lock.UIDThenName)
			}},
	}
	var pc clock.PassiveClock
	if c.Clock != nil {
		pc = c.Clock
	}
	s, err := New(Config{
		Client: c.Client, Reader: reader, Registry: c.Registry, Options: c.Options, Clock: pc, Seed: c.Seed, Limits: c.Limits, KubeScheduler: c.KubeScheduler,
		Bind: &gpu.Binder{Exec: exec, Waiter: kube.BindWaiter{Store: store, Clock: c.Clock}, Queue: &gpu.NodeQueue{}},
	})
	if err != nil {
		return nil, err
	}
	exec.Forget = s.Forget
	return s, nil
}
