package kube_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/lock"
)

// countingClient counts the Node reads and patches a NodeLockStore sends.
type countingClient struct {
	client.Client
	gets, patches atomic.Int64
}

func (c *countingClient) Get(ctx context.Context, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Client.Get(ctx, k, o, opts...)
}

func (c *countingClient) Patch(ctx context.Context, o client.Object, p client.Patch, opts ...client.PatchOption) error {
	c.patches.Add(1)
	return c.Client.Patch(ctx, o, p, opts...)
}

// gatedReader reads from the API server, then holds the answer of every read
// until the gate opens; started receives one value per read once it has read.
type gatedReader struct {
	client.Reader
	gate    chan struct{}
	started chan struct{}
	gets    atomic.Int64
}

func (r *gatedReader) Get(ctx context.Context, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	r.gets.Add(1)
	err := r.Reader.Get(ctx, k, o, opts...)
	r.started <- struct{}{}
	<-r.gate
	return err
}

// TestNodeLockStoreReadsAreFreshAndCoalesced checks the read coalescing: a
// Get issued after a write never shares a read that was already in flight
// (and may predate the write), and every Get that arrives while one read is
// in flight shares a single next read.
func TestNodeLockStoreReadsAreFreshAndCoalesced(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	key := lock.NodeKey(newNode(t, env).Name)
	r := &gatedReader{Reader: env.Client, gate: make(chan struct{}), started: make(chan struct{}, 16)}
	store := &kube.NodeLockStore{Client: env.Client, Reader: r}

	first := make(chan lock.Observation, 1)
	go func() {
		obs, err := store.Get(ctx, key)
		if err != nil {
			t.Error(err)
		}
		first <- obs
	}()
	<-r.started // the first read has seen the free lock and is held
	rec := lock.Record{Time: t0, Namespace: "default", Name: "writer", UID: "uid-writer", Epoch: 1}
	if err := (&kube.NodeLockStore{Client: env.Client}).CompareAndSwap(ctx, key, lock.Precondition{Version: mustVersion(t, env, key.Node)}, rec); err != nil {
		t.Fatal(err)
	}
	const late = 5
	var wg sync.WaitGroup
	got := make(chan lock.Observation, late)
	for range late {
		wg.Add(1)
		go func() {
			defer wg.Done()
			obs, err := store.Get(ctx, key)
			if err != nil {
				t.Error(err)
			}
			got <- obs
		}()
	}
	// Let the late callers queue behind the held read, then open the gate.
	waitFor(t, func() bool { return kube.QueuedReads(store, key.Node) == late })
	close(r.gate)
	wg.Wait()
	close(got)
	if obs := <-first; obs.Present {
		t.Errorf("the first read, made before the write, saw %q", obs.Raw)
	}
	for obs := range got {
		if !obs.Present {
			t.Error("a Get issued after a completed write returned the lock free: it shared a read from before the write")
		}
	}
	if n := r.gets.Load(); n != 2 {
		t.Errorf("%d Node reads for 1 + %d Gets, want 2 (the held one and one shared by the rest)", n, late)
	}

	// A caller whose context ends stops waiting for a held read.
	r2 := &gatedReader{Reader: env.Client, gate: make(chan struct{}), started: make(chan struct{}, 16)}
	defer close(r2.gate)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := (&kube.NodeLockStore{Client: env.Client, Reader: r2}).Get(short, key); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get with a context that ends during a held read: %v, want DeadlineExceeded", err)
	}
}

func mustVersion(t *testing.T, env *kubetest.Env, node string) string {
	t.Helper()
	obs, err := (&kube.NodeLockStore{Client: env.Client}).Get(context.Background(), lock.NodeKey(node))
	if err != nil {
		t.Fatal(err)
	}
	return obs.Version
}

// waitFor polls cond (a state change in another goroutine, not a timing
// assumption) for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
	}
}

// TestNodeLockStoreWritersTakeTurns checks that concurrent compare-and-swaps
// of one store under the same precondition send one patch: the first wins and
// the rest fail with lock.ErrConflict from the view the winner's write left,
// without a 409 round trip, and a later write at that stale version also
// fails without one.
func TestNodeLockStoreWritersTakeTurns(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	key := lock.NodeKey(newNode(t, env).Name)
	c := &countingClient{Client: env.Client}
	store := &kube.NodeLockStore{Client: c}
	obs, err := store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	pre := lock.Precondition{Version: obs.Version}
	const n = 8
	var wins, conflicts atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := lock.Record{Time: t0, Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: fmt.Sprintf("uid-%d", i), Epoch: 1}
			switch err := store.CompareAndSwap(ctx, key, pre, rec); {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, lock.ErrConflict):
				conflicts.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != n-1 {
		t.Fatalf("%d wins and %d conflicts, want 1 and %d", wins.Load(), conflicts.Load(), n-1)
	}
	if p := c.patches.Load(); p != 1 {
		t.Errorf("%d patches for %d writers at one version, want 1", p, n)
	}
	gets := c.gets.Load()
	if err := store.CompareAndDelete(ctx, key, lock.Precondition{Present: true, Raw: "whatever", Version: obs.Version}); !errors.Is(err, lock.ErrConflict) {
		t.Errorf("delete at a superseded version: %v, want lock.ErrConflict", err)
	}
	if c.patches.Load() != 1 || c.gets.Load() != gets {
		t.Errorf("a write at a version this store superseded cost %d patches and %d reads, want none", c.patches.Load()-1, c.gets.Load()-gets)
	}
}

// newCountingStore returns a NodeLockStore over a counting client, for the
// benchmarks' API-call figures.
func newCountingStore(env *kubetest.Env) (*kube.NodeLockStore, *countingClient) {
	c := &countingClient{Client: env.Client}
	return &kube.NodeLockStore{Client: c}, c
}
