package kube_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/lock"
)

var t0 = time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)

func nodeAnnotations(t testing.TB, env *kubetest.Env, node string) map[string]string {
	t.Helper()
	var n corev1.Node
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	return n.Annotations
}

// rawPatch writes annotations on node with a JSON merge patch, as HAMi or a
// human would; version "" means no resourceVersion precondition.
func rawPatch(ctx context.Context, c client.Client, node, version string, annotations map[string]any) error {
	md := map[string]any{"annotations": annotations}
	if version != "" {
		md["resourceVersion"] = version
	}
	body, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return err
	}
	n := &corev1.Node{}
	n.Name = node
	return c.Patch(ctx, n, client.RawPatch(types.MergePatchType, body))
}

// TestNodeLockStoreContract holds NodeLockStore to lock.Store's contract against
// the real API server, clause by clause, beyond what fake.CheckLockStore
// covers (TestNodeLockStoreConformance runs that suite).
func TestNodeLockStoreContract(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	node := newNode(t, env).Name
	c := &nodeStoreContract{t: t, env: env, ctx: ctx, node: node, key: lock.NodeKey(node), store: &kube.NodeLockStore{Client: env.Client}}

	obs, err := c.store.Get(ctx, c.key)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Present || obs.Version == "" || obs.EpochHigh != 0 {
		t.Fatalf("fresh node: %+v, want absent with a version and epoch 0", obs)
	}
	c.refusals(obs)
	heldPre := c.acquire(lock.Precondition{Version: obs.Version})
	fresh := c.staleVersion(heldPre)
	c.stealAndRelease(fresh)

	// A lock on a node that does not exist cannot be read or taken.
	missing := lock.NodeKey(env.UniqueName("missing"))
	if _, err := c.store.Get(ctx, missing); !apierrors.IsNotFound(err) {
		t.Fatalf("Get on a missing node: %v, want NotFound", err)
	}
}

// nodeStoreContract is one run of TestNodeLockStoreContract; each clause
// group is a method.
type nodeStoreContract struct {
	t     *testing.T
	env   *kubetest.Env
	ctx   context.Context
	node  string
	key   lock.Key
	store *kube.NodeLockStore
}

func (c *nodeStoreContract) rec(name string, epoch uint64) lock.Record {
	return lock.Record{Time: t0, Namespace: "default", Name: name, UID: "uid-" + name, Epoch: epoch}
}

// want is what the annotations hold after p1's acquire.
var contractWant = map[string]string{
	lock.HAMiLockName:                         "2026-06-14T10:00:00Z,default,p1",
	lock.SidecarAnnotation(lock.HAMiLockName): "2026-06-14T10:00:00Z,default,p1,uid-p1,1",
}

// refusals: writes the contract refuses leave the Node untouched.
func (c *nodeStoreContract) refusals(obs lock.Observation) {
	t, ctx, env, node, key, store, rec := c.t, c.ctx, c.env, c.node, c.key, c.store, c.rec
	absent := lock.Precondition{Version: obs.Version}
	// An epoch that skips a number is refused, and nothing is written.
	if err := store.CompareAndSwap(ctx, key, absent, rec("p1", 2)); !errors.Is(err, lock.ErrConflict) {
		t.Fatalf("CAS with epoch 2 on a fresh node: %v, want ErrConflict", err)
	}
	// A precondition claiming a value that is not there is refused.
	if err := store.CompareAndSwap(ctx, key, lock.Precondition{Present: true, Raw: "x", Version: obs.Version}, rec("p1", 1)); !errors.Is(err, lock.ErrConflict) {
		t.Fatalf("CAS expecting a value on an unlocked node: %v, want ErrConflict", err)
	}
	// A record without UID cannot be written: the sidecar needs it.
	if err := store.CompareAndSwap(ctx, key, absent, lock.Record{Time: t0, Namespace: "default", Name: "p1", Epoch: 1}); !errors.Is(err, lock.ErrInvalidInput) {
		t.Fatalf("CAS without UID: %v, want ErrInvalidInput", err)
	}
	if got := nodeAnnotations(t, env, node); len(got) != 0 {
		t.Fatalf("refused writes left annotations %v", got)
	}

}

// acquire takes the lock and returns the precondition of what it wrote.
func (c *nodeStoreContract) acquire(absent lock.Precondition) lock.Precondition {
	t, ctx, env, node, key, store, rec := c.t, c.ctx, c.env, c.node, c.key, c.store, c.rec
	// Acquire.
	if err := store.CompareAndSwap(ctx, key, absent, rec("p1", 1)); err != nil {
		t.Fatalf("CAS acquire: %v", err)
	}
	want := contractWant
	if diff := cmp.Diff(want, nodeAnnotations(t, env, node)); diff != "" {
		t.Fatalf("annotations after acquire (-want +got):\n%s", diff)
	}
	// The same precondition again is stale: the Node's resourceVersion moved.
	if err := store.CompareAndSwap(ctx, key, absent, rec("p2", 2)); !errors.Is(err, lock.ErrConflict) {
		t.Fatalf("second CAS on the same absent precondition: %v, want ErrConflict", err)
	}

	held, err := store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !held.Present || held.Raw != want[lock.HAMiLockName] || held.Sidecar != want[lock.SidecarAnnotation(lock.HAMiLockName)] || held.EpochHigh != 1 {
		t.Fatalf("Get after acquire: %+v", held)
	}
	heldPre := lock.Precondition{Present: true, Raw: held.Raw, Version: held.Version}

	return heldPre
}

// staleVersion: an unrelated Node write makes every precondition at the old
// resourceVersion fail; it returns a store that never saw that version.
func (c *nodeStoreContract) staleVersion(heldPre lock.Precondition) *kube.NodeLockStore {
	t, ctx, env, node, key, store, rec := c.t, c.ctx, c.env, c.node, c.key, c.store, c.rec
	// An unrelated Node write moves the resourceVersion: the API server answers
	// 409 to the stale precondition, even though the lock value is unchanged.
	if err := rawPatch(ctx, env.Client, node, "", map[string]any{"unrelated": "1"}); err != nil {
		t.Fatal(err)
	}
	fresh := &kube.NodeLockStore{Client: env.Client} // never saw this version: must re-read
	for name, s := range map[string]*kube.NodeLockStore{"same store": store, "fresh store": fresh} {
		if err := s.CompareAndSwap(ctx, key, heldPre, rec("p2", 2)); !errors.Is(err, lock.ErrConflict) {
			t.Fatalf("%s: steal at a stale resourceVersion: %v, want ErrConflict", name, err)
		}
		if err := s.CompareAndDelete(ctx, key, heldPre); !errors.Is(err, lock.ErrConflict) {
			t.Fatalf("%s: delete at a stale resourceVersion: %v, want ErrConflict", name, err)
		}
	}

	return fresh
}

// stealAndRelease: a steal replaces exactly the observed value; a release
// keeps the epoch high-water mark.
func (c *nodeStoreContract) stealAndRelease(fresh *kube.NodeLockStore) {
	t, ctx, env, node, key, store, rec := c.t, c.ctx, c.env, c.node, c.key, c.store, c.rec
	// Steal: one CAS replacing exactly the observed value, epoch 2.
	held, _ := fresh.Get(ctx, key)
	heldPre := lock.Precondition{Present: true, Raw: held.Raw, Version: held.Version}
	if err := fresh.CompareAndSwap(ctx, key, lock.Precondition{Present: true, Raw: "other", Version: held.Version}, rec("p2", 2)); !errors.Is(err, lock.ErrConflict) {
		t.Fatalf("steal of a value other than the observed one: %v, want ErrConflict", err)
	}
	if err := fresh.CompareAndSwap(ctx, key, heldPre, rec("p2", 2)); err != nil {
		t.Fatalf("steal: %v", err)
	}

	// Release keeps the sidecar and so the epoch high-water mark.
	held, _ = store.Get(ctx, key)
	if err := store.CompareAndDelete(ctx, key, lock.Precondition{Present: true, Raw: "2026-06-14T10:00:00Z,default,p1", Version: held.Version}); !errors.Is(err, lock.ErrConflict) {
		t.Fatalf("delete of a value no longer there: %v, want ErrConflict", err)
	}
	if err := store.CompareAndDelete(ctx, key, lock.Precondition{Version: held.Version}); !errors.Is(err, lock.ErrConflict) {
		t.Fatalf("delete with an absent precondition: %v, want ErrConflict", err)
	}
	if err := store.CompareAndDelete(ctx, key, lock.Precondition{Present: true, Raw: held.Raw, Version: held.Version}); err != nil {
		t.Fatalf("release: %v", err)
	}
	after, _ := store.Get(ctx, key)
	if after.Present || after.EpochHigh != 2 {
		t.Fatalf("after release: %+v, want absent with epoch high-water mark 2", after)
	}
	if got := nodeAnnotations(t, env, node)[lock.SidecarAnnotation(lock.HAMiLockName)]; got != "2026-06-14T10:00:00Z,default,p2,uid-p2,2" {
		t.Fatalf("sidecar after release = %q", got)
	}
	if err := store.CompareAndSwap(ctx, key, lock.Precondition{Version: after.Version}, rec("p3", 2)); !errors.Is(err, lock.ErrConflict) {
		t.Fatalf("re-using epoch 2 after a release: %v, want ErrConflict", err)
	}
	if err := store.CompareAndSwap(ctx, key, lock.Precondition{Version: after.Version}, rec("p3", 3)); err != nil {
		t.Fatalf("acquire after release with epoch 3: %v", err)
	}

}

// TestNodeLockStoreExtendedFormat checks WireExtended: the 5-part value in the
// lock annotation itself, and the epoch still surviving a release.
func TestNodeLockStoreExtendedFormat(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	node := newNode(t, env).Name
	key := lock.Key{Name: lock.CambriconLockName, Node: node}
	store := &kube.NodeLockStore{Client: env.Client, Format: kube.WireExtended}
	l := &lock.Locker{Store: store, Clock: fake.NewClock(t0)}
	req := lock.Requester{Namespace: "ml", Name: "p1", UID: "u1"}
	g, err := l.Acquire(ctx, key, req)
	if err != nil {
		t.Fatal(err)
	}
	if g.Record().Epoch != 1 {
		t.Fatalf("first grant epoch %d", g.Record().Epoch)
	}
	ann := nodeAnnotations(t, env, node)
	if got := ann[lock.CambriconLockName]; got != "2026-06-14T10:00:00Z,ml,p1,u1,1" {
		t.Fatalf("main value %q, want the extended record", got)
	}
	if _, err := l.Release(ctx, key, req); err != nil {
		t.Fatal(err)
	}
	g, err = l.Acquire(ctx, key, req)
	if err != nil || g.Record().Epoch != 2 {
		t.Fatalf("re-acquire after release: epoch %d, %v; want 2", g.Record().Epoch, err)
	}
}

// hamiLockNode is HAMi v2.10's SetNodeLock as seen on the wire: read the Node;
// any value present is contention; otherwise a merge patch with the read
// resourceVersion writing "<RFC3339 local>,<ns>,<name>".
func hamiLockNode(ctx context.Context, c client.Client, node, ns, name string, now time.Time) error {
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return err
	}
	if v, ok := n.Annotations[lock.HAMiLockName]; ok {
		if strings.HasSuffix(v, ","+ns+","+name) {
			return nil
		}
		return lock.ErrContention
	}
	value := now.In(time.FixedZone("CST", 8*3600)).Format(time.RFC3339) + "," + ns + "," + name
	return rawPatch(ctx, c, node, n.ResourceVersion, map[string]any{lock.HAMiLockName: value})
}

// hamiReleaseNodeLock is HAMi v2.10's owner-checked ReleaseNodeLock on the
// wire: the value must end with ",<ns>,<name>"; a merge patch nulls it under
// the read resourceVersion.
func hamiReleaseNodeLock(ctx context.Context, c client.Client, node, ns, name string) (released bool, err error) {
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return false, err
	}
	v, ok := n.Annotations[lock.HAMiLockName]
	if !ok || !strings.HasSuffix(v, ","+ns+","+name) {
		return false, nil
	}
	return true, rawPatch(ctx, c, node, n.ResourceVersion, map[string]any{lock.HAMiLockName: nil})
}

// TestNodeLockStoreHAMiInterop runs plancore's Locker on NodeLockStore beside
// HAMi's scheduler and device plugin (their wire behaviour, reproduced above)
// on one Node.
func TestNodeLockStoreHAMiInterop(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	ns := env.Namespace(t)
	node := newNode(t, env).Name
	key := lock.NodeKey(node)
	hamiPod := newPod(t, env, ns, "hami-pod")
	ourPod := newPod(t, env, ns, "our-pod")
	req := lock.Requester{Namespace: ns, Name: ourPod.Name, UID: string(ourPod.UID)}
	clk := fake.NewClock(time.Now())
	l := &lock.Locker{
		Store: &kube.NodeLockStore{Client: env.Client},
		Clock: clk,
		Holder: func(ctx context.Context, _ lock.Key, rec lock.Record) lock.Holder {
			var p corev1.Pod
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: rec.Namespace, Name: rec.Name}, &p)
			return lock.ClassifyHolder(&p, err, rec, lock.UIDThenName)
		},
	}

	// HAMi's scheduler holds the lock (local zone, no sidecar): plancore sees
	// contention while the holder pod lives.
	if err := hamiLockNode(ctx, env.Client, node, ns, hamiPod.Name, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, key, req); !errors.Is(err, lock.ErrContention) {
		t.Fatalf("Acquire while HAMi holds the lock: %v, want ErrContention", err)
	}
	// HAMi's device plugin releases after Allocate; plancore then acquires and
	// writes a value HAMi reads as held by our pod.
	if ok, err := hamiReleaseNodeLock(ctx, env.Client, node, ns, hamiPod.Name); err != nil || !ok {
		t.Fatalf("HAMi release: %v, %v", ok, err)
	}
	g, err := l.Acquire(ctx, key, req)
	if err != nil {
		t.Fatalf("Acquire after HAMi's release: %v", err)
	}
	if g.Plan.Kind != lock.Acquire || g.Record().Epoch != 1 {
		t.Fatalf("grant %v", g.Plan)
	}
	if err := hamiLockNode(ctx, env.Client, node, ns, hamiPod.Name, clk.Now()); !errors.Is(err, lock.ErrContention) {
		t.Fatalf("HAMi scheduler on a plancore-held lock: %v, want contention", err)
	}
	// HAMi's device plugin, allocating our pod, releases plancore's lock by the
	// owner suffix rule; the sidecar stays.
	if ok, err := hamiReleaseNodeLock(ctx, env.Client, node, ns, ourPod.Name); err != nil || !ok {
		t.Fatalf("HAMi device plugin releasing plancore's lock: %v, %v", ok, err)
	}
	// HAMi takes it again; its holder pod then disappears: plancore steals the
	// dangling lock with an epoch above the sidecar's, which HAMi never touches.
	if err := hamiLockNode(ctx, env.Client, node, ns, hamiPod.Name, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, hamiPod); err != nil {
		t.Fatal(err)
	}
	g, err = l.Acquire(ctx, key, req)
	if err != nil {
		t.Fatalf("Acquire with HAMi's holder gone: %v", err)
	}
	if g.Plan.Kind != lock.StealDangling || g.Record().Epoch != 2 {
		t.Fatalf("grant %v, want StealDangling with epoch 2", g.Plan)
	}
	// Our own release is owner-checked and leaves the sidecar.
	if d, err := l.Release(ctx, key, req); err != nil || d.Kind != lock.Release {
		t.Fatalf("release: %v, %v", d, err)
	}
	ann := nodeAnnotations(t, env, node)
	if _, ok := ann[lock.HAMiLockName]; ok {
		t.Fatalf("lock still present after release: %v", ann)
	}
	if !strings.HasSuffix(ann[lock.SidecarAnnotation(lock.HAMiLockName)], ",2") {
		t.Fatalf("sidecar lost the epoch: %v", ann)
	}
}

// TestNodeLockStoreConflictIsNotContention checks that a conflict caused by an unrelated Node write is not contention, on a real API server:
// unrelated Node writes racing the lock produce 409s that the Locker absorbs,
// and the lock is still granted.
func TestNodeLockStoreConflictIsNotContention(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	node := newNode(t, env).Name
	key := lock.NodeKey(node)
	// A store whose reads are followed by a kubelet-like status write: every
	// observed resourceVersion is stale by the time of the write.
	noisy := &noisyReader{Reader: env.Client, c: env.Client, node: node, left: 3}
	store := &kube.NodeLockStore{Client: env.Client, Reader: noisy}
	l := &lock.Locker{Store: store}
	g, err := l.Acquire(ctx, key, lock.Requester{Namespace: "default", Name: "p", UID: "u"})
	if err != nil {
		t.Fatalf("Acquire under unrelated Node writes: %v", err)
	}
	if g.Attempts != 4 {
		t.Fatalf("Acquire took %d reads, want 4 (3 conflicts, then success)", g.Attempts)
	}
}

// noisyReader writes an unrelated annotation to node after each of its first
// left reads, as a kubelet heartbeat racing the scheduler would.
type noisyReader struct {
	client.Reader
	c    client.Client
	node string
	left int
}

func (r *noisyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if r.left > 0 {
		r.left--
		return rawPatch(ctx, r.c, r.node, "", map[string]any{"heartbeat": time.Now().Format(time.RFC3339Nano)})
	}
	return nil
}
