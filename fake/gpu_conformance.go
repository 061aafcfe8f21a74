package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// BindHarness is one gpu.BindExecutor under test, with what the checks need
// to set up the cluster behind it.
type BindHarness struct {
	// Exec is the executor under test. Its Lock must decide once without
	// waiting (gpu.ApplyBind does the waiting) and treat a lock held by an
	// existing pod as held.
	Exec gpu.BindExecutor
	// AddPod creates an unbound pod named name, unique within the harness,
	// and returns its reference, UID included.
	AddPod func(ctx context.Context, name string) (gpu.PodRef, error)
	// AddNode creates a fresh node and returns its name.
	AddNode func(ctx context.Context) (string, error)
}

// NewBindHarness builds a fresh BindHarness for one conformance check.
type NewBindHarness func(ctx context.Context) (BindHarness, error)

// CheckBindExecutor runs the gpu.BindExecutor contract against harnesses
// built by newHarness, in the style of testing/fstest.TestFS, and returns
// every violation it finds (nil when the executor conforms). Each check gets
// a fresh harness. It checks reads of pods and nodes; that Lock grants a free
// lock with a positive epoch, keeps the holder's epoch when it locks again,
// refuses a lock held by another pod with an error wrapping
// lock.ErrContention and keeps locks of different nodes apart; that Release
// is owner-checked (another pod's release is a no-op that keeps the lock), a
// no-op on a lock not held, and that the next grant's epoch is higher; that
// PatchPodAnnotations merges; that Bind binds, succeeds again for the node
// the pod is bound to, and refuses (binding nothing) a pod bound elsewhere or
// a stale UID; and that a Bind whose context has expired reports an error
// wrapping gpu.ErrOutcomeUnknown or context.DeadlineExceeded.
func CheckBindExecutor(ctx context.Context, newHarness NewBindHarness) []Violation {
	return runChecks(ctx, bindChecks, newHarness)
}

// bindSetup creates one node and the named pods.
func bindSetup(ctx context.Context, h BindHarness, pods ...string) (string, []gpu.PodRef, error) {
	node, err := h.AddNode(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("adding a node: %w", err)
	}
	var refs []gpu.PodRef
	for _, name := range pods {
		p, err := h.AddPod(ctx, name)
		if err != nil {
			return "", nil, fmt.Errorf("adding pod %s: %w", name, err)
		}
		if p.UID == "" {
			return "", nil, fmt.Errorf("AddPod(%s) returned no UID", name)
		}
		refs = append(refs, p)
	}
	return node, refs, nil
}

// bindHeld sets up one node and the named pods, the first holding the node
// lock at epoch e1; why says what went wrong.
func bindHeld(ctx context.Context, h BindHarness, pods ...string) (node string, refs []gpu.PodRef, e1 uint64, why string) {
	node, refs, err := bindSetup(ctx, h, pods...)
	if err != nil {
		return "", nil, 0, err.Error()
	}
	e1, why = bindLock(ctx, h, node, refs[0], "free lock")
	return node, refs, e1, why
}

// bindLock takes the node lock for pod, reporting a failure as a string.
func bindLock(ctx context.Context, h BindHarness, node string, pod gpu.PodRef, what string) (uint64, string) {
	e, err := h.Exec.Lock(ctx, node, lock.HAMiLockName, pod)
	switch {
	case err != nil:
		return 0, fmt.Sprintf("%s: Lock for %s: %v", what, pod.Name, err)
	case e == 0:
		return 0, fmt.Sprintf("%s: Lock for %s granted epoch 0, want a positive fencing epoch", what, pod.Name)
	}
	return e, ""
}

// bindContended reports why pod's Lock was not refused with contention.
func bindContended(ctx context.Context, h BindHarness, node string, pod gpu.PodRef, what string) string {
	e, err := h.Exec.Lock(ctx, node, lock.HAMiLockName, pod)
	switch {
	case err == nil:
		return fmt.Sprintf("%s: Lock for %s was granted (epoch %d), want an error wrapping lock.ErrContention", what, pod.Name, e)
	case !errors.Is(err, lock.ErrContention):
		return fmt.Sprintf("%s: Lock for %s returned %v, want an error wrapping lock.ErrContention", what, pod.Name, err)
	}
	return ""
}

// bindNode reads the node a pod is bound to.
func bindNode(ctx context.Context, h BindHarness, pod gpu.PodRef) (string, string) {
	p, err := h.Exec.GetPod(ctx, pod)
	if err != nil {
		return "", fmt.Sprintf("GetPod(%s): %v", pod, err)
	}
	return p.Spec.NodeName, ""
}

// keep appends the non-empty reasons to out.
func keep(out []string, why ...string) []string {
	for _, w := range why {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

var bindChecks = []check[BindHarness]{
	{"get pod returns the pod; a missing pod is an error", func(ctx context.Context, h BindHarness) []string {
		_, pods, err := bindSetup(ctx, h, "a")
		if err != nil {
			return []string{err.Error()}
		}
		var out []string
		p, err := h.Exec.GetPod(ctx, pods[0])
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("GetPod: %v", err))
		case p == nil || p.Namespace != pods[0].Namespace || p.Name != pods[0].Name || string(p.UID) != pods[0].UID:
			out = append(out, fmt.Sprintf("GetPod(%s) returned %v", pods[0], p))
		}
		missing := gpu.PodRef{Namespace: pods[0].Namespace, Name: "missing"}
		if _, err := h.Exec.GetPod(ctx, missing); err == nil {
			out = append(out, "GetPod of a missing pod succeeded")
		}
		return out
	}},
	{"get node finds a node and fails for a missing one", func(ctx context.Context, h BindHarness) []string {
		node, _, err := bindSetup(ctx, h)
		if err != nil {
			return []string{err.Error()}
		}
		var out []string
		if err := h.Exec.GetNode(ctx, node); err != nil {
			out = append(out, fmt.Sprintf("GetNode(%s): %v", node, err))
		}
		if err := h.Exec.GetNode(ctx, node+"-missing"); err == nil {
			out = append(out, "GetNode of a missing node succeeded")
		}
		return out
	}},
	{"lock grants a free lock; the holder locking again keeps its epoch", func(ctx context.Context, h BindHarness) []string {
		node, pods, e1, why := bindHeld(ctx, h, "a")
		if why != "" {
			return []string{why}
		}
		e2, why := bindLock(ctx, h, node, pods[0], "held by the same pod")
		if why != "" {
			return []string{why}
		}
		if e2 != e1 {
			return []string{fmt.Sprintf("the holder locking again got epoch %d, want its grant's %d", e2, e1)}
		}
		return nil
	}},
	{"lock held by another pod fails with lock.ErrContention and stays the holder's", func(ctx context.Context, h BindHarness) []string {
		node, pods, e1, why := bindHeld(ctx, h, "a", "b")
		if why != "" {
			return []string{why}
		}
		out := keep(nil, bindContended(ctx, h, node, pods[1], "held by a"))
		if e, why := bindLock(ctx, h, node, pods[0], "after b's refusal"); why != "" {
			out = append(out, why)
		} else if e != e1 {
			out = append(out, fmt.Sprintf("after b's refusal a holds epoch %d, want %d", e, e1))
		}
		return out
	}},
	{"locks of different nodes are independent", func(ctx context.Context, h BindHarness) []string {
		n1, pods, err := bindSetup(ctx, h, "a", "b")
		if err != nil {
			return []string{err.Error()}
		}
		n2, err := h.AddNode(ctx)
		if err != nil {
			return []string{fmt.Sprintf("adding a second node: %v", err)}
		}
		_, why1 := bindLock(ctx, h, n1, pods[0], "first node")
		_, why2 := bindLock(ctx, h, n2, pods[1], "second node, while a holds the first")
		return keep(nil, why1, why2)
	}},
	{"release by the holder frees the lock; the next grant's epoch is higher", func(ctx context.Context, h BindHarness) []string {
		node, pods, e1, why := bindHeld(ctx, h, "a", "b")
		if why != "" {
			return []string{why}
		}
		if err := h.Exec.Release(ctx, node, lock.HAMiLockName, pods[0]); err != nil {
			return []string{fmt.Sprintf("Release by the holder: %v", err)}
		}
		e2, why := bindLock(ctx, h, node, pods[1], "after a's release")
		if why != "" {
			return []string{why}
		}
		if e2 <= e1 {
			return []string{fmt.Sprintf("the grant after a release has epoch %d, not above the previous grant's %d", e2, e1)}
		}
		return nil
	}},
	{"release by another pod is a no-op that keeps the lock", func(ctx context.Context, h BindHarness) []string {
		node, pods, e1, why := bindHeld(ctx, h, "a", "b", "c")
		if why != "" {
			return []string{why}
		}
		var out []string
		if err := h.Exec.Release(ctx, node, lock.HAMiLockName, pods[1]); err != nil {
			out = append(out, fmt.Sprintf("Release by a pod that does not hold the lock: %v, want nil", err))
		}
		out = keep(out, bindContended(ctx, h, node, pods[2], "after b's release of a's lock"))
		if e, why := bindLock(ctx, h, node, pods[0], "after b's release of a's lock"); why != "" {
			out = append(out, why)
		} else if e != e1 {
			out = append(out, fmt.Sprintf("after b's release a holds epoch %d, want %d", e, e1))
		}
		return out
	}},
	{"release of a lock not held is a no-op", func(ctx context.Context, h BindHarness) []string {
		node, pods, err := bindSetup(ctx, h, "a", "b")
		if err != nil {
			return []string{err.Error()}
		}
		var out []string
		if err := h.Exec.Release(ctx, node, lock.HAMiLockName, pods[0]); err != nil {
			out = append(out, fmt.Sprintf("Release of a lock never taken: %v, want nil", err))
		}
		if _, why := bindLock(ctx, h, node, pods[0], "after a release of a free lock"); why != "" {
			return append(out, why)
		}
		for i := 1; i <= 2; i++ {
			if err := h.Exec.Release(ctx, node, lock.HAMiLockName, pods[0]); err != nil {
				out = append(out, fmt.Sprintf("Release #%d by the holder: %v, want nil", i, err))
			}
		}
		_, why := bindLock(ctx, h, node, pods[1], "after the holder's releases")
		return keep(out, why)
	}},
	{"patch merges annotations and is repeatable", func(ctx context.Context, h BindHarness) []string {
		_, pods, err := bindSetup(ctx, h, "a")
		if err != nil {
			return []string{err.Error()}
		}
		var out []string
		for _, a := range []map[string]string{{"plancore.io/x": "1"}, {"plancore.io/y": "2"}, {"plancore.io/x": "1"}} {
			if err := h.Exec.PatchPodAnnotations(ctx, pods[0], a); err != nil {
				out = append(out, fmt.Sprintf("patch %v: %v", a, err))
			}
		}
		p, err := h.Exec.GetPod(ctx, pods[0])
		if err != nil {
			return append(out, fmt.Sprintf("GetPod: %v", err))
		}
		want := map[string]string{"plancore.io/x": "1", "plancore.io/y": "2"}
		got := maps.Clone(p.Annotations)
		maps.DeleteFunc(got, func(k, _ string) bool { return want[k] == "" })
		if !maps.Equal(got, want) {
			out = append(out, fmt.Sprintf("annotations %v after the patches, want %v among them", p.Annotations, want))
		}
		if err := h.Exec.PatchPodAnnotations(ctx, gpu.PodRef{Namespace: pods[0].Namespace, Name: "missing"}, want); err == nil {
			out = append(out, "patching a missing pod succeeded")
		}
		return out
	}},
	{"bind binds the pod; binding it again to that node succeeds", func(ctx context.Context, h BindHarness) []string {
		node, pods, err := bindSetup(ctx, h, "a")
		if err != nil {
			return []string{err.Error()}
		}
		var out []string
		for i := 1; i <= 2; i++ {
			if err := h.Exec.Bind(ctx, pods[0], node); err != nil {
				out = append(out, fmt.Sprintf("Bind #%d to %s: %v", i, node, err))
			}
		}
		got, why := bindNode(ctx, h, pods[0])
		if why == "" && got != node {
			why = fmt.Sprintf("the pod is bound to %q, want %q", got, node)
		}
		return keep(out, why)
	}},
	{"bind of a pod bound to another node fails and keeps it there", func(ctx context.Context, h BindHarness) []string {
		n1, pods, err := bindSetup(ctx, h, "a")
		if err != nil {
			return []string{err.Error()}
		}
		n2, err := h.AddNode(ctx)
		if err != nil {
			return []string{fmt.Sprintf("adding a second node: %v", err)}
		}
		if err := h.Exec.Bind(ctx, pods[0], n1); err != nil {
			return []string{fmt.Sprintf("Bind to %s: %v", n1, err)}
		}
		var out []string
		if err := h.Exec.Bind(ctx, pods[0], n2); err == nil {
			out = append(out, fmt.Sprintf("Bind to %s of a pod bound to %s succeeded", n2, n1))
		}
		got, why := bindNode(ctx, h, pods[0])
		if why == "" && got != n1 {
			why = fmt.Sprintf("the pod is bound to %q, want %q", got, n1)
		}
		return keep(out, why)
	}},
	{"bind with a stale UID fails and binds nothing", func(ctx context.Context, h BindHarness) []string {
		node, pods, err := bindSetup(ctx, h, "a")
		if err != nil {
			return []string{err.Error()}
		}
		stale := pods[0]
		stale.UID = "not-" + stale.UID
		var out []string
		if err := h.Exec.Bind(ctx, stale, node); err == nil {
			out = append(out, "Bind with another pod's UID succeeded")
		}
		got, why := bindNode(ctx, h, pods[0])
		if why == "" && got != "" {
			why = fmt.Sprintf("the pod is bound to %q after a Bind naming another UID", got)
		}
		return keep(out, why)
	}},
	{"bind whose context expired reports gpu.ErrOutcomeUnknown or context.DeadlineExceeded", func(ctx context.Context, h BindHarness) []string {
		node, pods, err := bindSetup(ctx, h, "a")
		if err != nil {
			return []string{err.Error()}
		}
		// A deadline long past, without reading the clock.
		expired, cancel := context.WithDeadline(ctx, time.Unix(1, 0))
		defer cancel()
		err = h.Exec.Bind(expired, pods[0], node)
		if err == nil {
			return []string{"Bind with an expired context succeeded"}
		}
		if !errors.Is(err, gpu.ErrOutcomeUnknown) && !errors.Is(err, context.DeadlineExceeded) {
			return []string{fmt.Sprintf("Bind with an expired context returned %v, which wraps neither gpu.ErrOutcomeUnknown nor context.DeadlineExceeded", err)}
		}
		return nil
	}},
}
