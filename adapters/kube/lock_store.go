package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/lock"
)

// WireFormat chooses how NodeLockStore writes a lock value.
type WireFormat string

const (
	// WireHAMi (the default; "" means it too) writes HAMi's 3-part value
	// "<RFC3339>,<namespace>,<name>" into the lock annotation, so HAMi's
	// scheduler and device plugins keep reading it, and the extended record
	// (UID and epoch) into the sidecar annotation lock.SidecarAnnotation(name),
	// in the same patch.
	WireHAMi WireFormat = "HAMi"
	// WireExtended writes plancore's 5-part value into the lock annotation
	// itself (HAMi reads it as malformed), and the same value into the sidecar,
	// which keeps the epoch high-water mark across releases.
	WireExtended WireFormat = "Extended"
)

// NodeLockStore is a lock.Store kept in Node annotations: the lock named
// key.Name (lock.HAMiLockName for HAMi's shared node lock) on the Node named
// key.Node, wire-compatible with HAMi's scheduler and device plugin.
//
// Every write is one JSON merge patch of the Node that carries
// metadata.resourceVersion: the API server applies it only if the Node is still
// at the observed resourceVersion and answers 409 Conflict otherwise, which the
// store reports as lock.ErrConflict. A steal is therefore a compare-and-swap
// against the observed value; HAMi releases the re-read value and then sets
// (HAMi steals by a release and a set, so two stealers can both win). Because resourceVersion covers the whole Node, unrelated Node writes
// (kubelet status, device handshakes) also cause conflicts; lock.Locker re-reads
// and re-decides at once and does not count them as contention.
//
// The epoch high-water mark lives in the sidecar annotation, which a release
// keeps, so epochs keep rising across releases. A HAMi scheduler that steals
// rewrites only the main annotation; the sidecar then no longer matches it, the
// holder's UID and epoch read as unknown, and the next plancore grant still
// numbers itself above the sidecar's epoch.
//
// The store checks each write's precondition and epoch against the Node as it
// was at the precondition's resourceVersion. It remembers the last Node it read
// per lock, so the usual Get-then-write costs one read and one patch; a
// precondition it has not seen costs an extra read. It is safe for concurrent
// use, and keeps a release from stampeding the API server when it wakes many
// waiters of one process at once: concurrent Gets of one Node share one read
// (never one already in flight, so each is as fresh as the caller's own), and
// writes to one Node take turns, so the writers that lost to this store's own
// write fail with lock.ErrConflict without a patch. Reads go to Reader when set (use an uncached reader such as a manager's
// APIReader: a lagging cache only produces conflicts), else to Client.
type NodeLockStore struct {
	// Client writes (and, without Reader, reads) Nodes. It needs get and patch
	// on nodes.
	Client client.Client
	// Reader, when set, serves the reads.
	Reader client.Reader
	// Format is the wire format of new values. Default WireHAMi.
	Format WireFormat

	mu    sync.Mutex
	views map[lock.Key]nodeView
	subs  map[string]chan struct{}
	// writing holds one token per Node while a write to it is in flight.
	writing map[string]chan struct{}
	// reads are the Node reads in flight and queued, per Node.
	reads map[string]*nodeReads
}

// nodeView is what a lock looked like on a Node at one resourceVersion.
type nodeView struct {
	version   string
	present   bool
	raw       string
	sidecar   string
	epochHigh uint64
	// supersedes is the resourceVersion this store's own write replaced to
	// reach version, or "": a precondition at it can no longer hold.
	supersedes string
}

var (
	_ lock.Store    = (*NodeLockStore)(nil)
	_ lock.Notifier = (*NodeLockStore)(nil)
)

func (s *NodeLockStore) reader() client.Reader {
	if s.Reader != nil {
		return s.Reader
	}
	return s.Client
}

// viewOf reads key's lock from node.
func viewOf(node *corev1.Node, key lock.Key) nodeView {
	raw, present := node.Annotations[key.Name]
	v := nodeView{version: node.ResourceVersion, present: present, raw: raw, sidecar: node.Annotations[lock.SidecarAnnotation(key.Name)]}
	// The sidecar's epoch always feeds the high-water mark, matching or not; an
	// extended main value (WireExtended) feeds it too.
	for _, s := range []string{v.sidecar, v.raw} {
		if r, f, err := lock.Decode(s); err == nil && f == lock.FormatExtended {
			v.epochHigh = max(v.epochHigh, r.Epoch)
		}
	}
	return v
}

func (s *NodeLockStore) remember(key lock.Key, v nodeView) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.views == nil {
		s.views = map[lock.Key]nodeView{}
	}
	s.views[key] = v
}

// fetch reads the Node and remembers its view of key.
func (s *NodeLockStore) fetch(ctx context.Context, key lock.Key) (nodeView, error) {
	node, err := s.readNode(ctx, key.Node)
	if err != nil {
		return nodeView{}, fmt.Errorf("lock %s: get node: %w", key, err)
	}
	v := viewOf(node, key)
	s.remember(key, v)
	return v, nil
}

// nodeReads is the read of one Node in flight and the one queued behind it.
type nodeReads struct {
	running, next *nodeRead
}

// nodeRead is one Get of a Node, shared by every caller that joined it.
type nodeRead struct {
	done chan struct{}
	node *corev1.Node // read-only once done is closed
	err  error
	// waiters counts the callers that joined the read while it was queued.
	waiters int
}

// readTimeout bounds one shared Node read, which no single caller's context
// governs.
const readTimeout = 30 * time.Second

// readNode reads a Node, coalescing concurrent reads: a caller never joins a
// read already in flight (it might have been served before the caller's call
// began, so it could miss a write the caller already knows of), but waits for
// it to end and shares the next one with everyone else who arrived meanwhile.
// Each result is thus as fresh as a read of the caller's own, and when a
// release wakes every waiter of this store at once, they cost two reads
// instead of one each.
func (s *NodeLockStore) readNode(ctx context.Context, name string) (*corev1.Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.reads == nil {
		s.reads = map[string]*nodeReads{}
	}
	g := s.reads[name]
	if g == nil {
		g = &nodeReads{}
		s.reads[name] = g
	}
	var r *nodeRead
	switch {
	case g.running == nil:
		r = &nodeRead{done: make(chan struct{})}
		g.running = r
		go s.runRead(ctx, name, g, r)
	default:
		if g.next == nil {
			g.next = &nodeRead{done: make(chan struct{})}
		}
		r = g.next
		r.waiters++
	}
	s.mu.Unlock()
	select {
	case <-r.done:
		return r.node, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runRead performs r, then starts the read queued behind it, if any.
func (s *NodeLockStore) runRead(ctx context.Context, name string, g *nodeReads, r *nodeRead) {
	for r != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		var node corev1.Node
		r.err = s.reader().Get(rctx, client.ObjectKey{Name: name}, &node)
		cancel()
		if r.err == nil {
			r.node = &node
		}
		close(r.done)
		s.mu.Lock()
		g.running, g.next = g.next, nil
		if g.running == nil && s.reads[name] == g {
			delete(s.reads, name)
		}
		r = g.running
		s.mu.Unlock()
	}
}

// Get implements lock.Store. A missing Node is an error (wrapping the API
// server's NotFound): a lock on a node that does not exist cannot be taken.
func (s *NodeLockStore) Get(ctx context.Context, key lock.Key) (lock.Observation, error) {
	if err := key.Validate(); err != nil {
		return lock.Observation{}, err
	}
	v, err := s.fetch(ctx, key)
	if err != nil {
		return lock.Observation{}, err
	}
	return lock.Observation{Key: key, Present: v.present, Raw: v.raw, Sidecar: v.sidecar, Version: v.version, EpochHigh: v.epochHigh}, nil
}

// viewAt returns key's view at version: the remembered one, or a fresh read,
// which must still be at version.
func (s *NodeLockStore) viewAt(ctx context.Context, key lock.Key, version string) (nodeView, error) {
	s.mu.Lock()
	v, ok := s.views[key]
	s.mu.Unlock()
	if ok && v.version == version {
		return v, nil
	}
	if ok && version != "" && v.supersedes == version {
		// This store's own write moved the Node past version; a
		// resourceVersion never comes back, so no read is needed.
		return nodeView{}, fmt.Errorf("%w: %s: node was written since resourceVersion %s", lock.ErrConflict, key, version)
	}
	v, err := s.fetch(ctx, key)
	if err != nil {
		return nodeView{}, err
	}
	if v.version != version {
		return nodeView{}, fmt.Errorf("%w: %s: node is at resourceVersion %s, not %s", lock.ErrConflict, key, v.version, version)
	}
	return v, nil
}

// check reports whether pre describes v.
func check(key lock.Key, v nodeView, pre lock.Precondition) error {
	if pre.Present != v.present || (pre.Present && pre.Raw != v.raw) {
		return fmt.Errorf("%w: %s no longer %s", lock.ErrConflict, key, pre)
	}
	return nil
}

// CompareAndSwap implements lock.Store: one merge patch that sets the lock and
// sidecar annotations under the precondition's resourceVersion. The record
// needs namespace, name, UID and an epoch exactly one above the Node's
// high-water mark.
func (s *NodeLockStore) CompareAndSwap(ctx context.Context, key lock.Key, pre lock.Precondition, rec lock.Record) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if err := rec.ValidateExtended(); err != nil {
		return err
	}
	v, done, err := s.beginWrite(ctx, key, pre)
	if err != nil {
		return err
	}
	defer done()
	if rec.Epoch != v.epochHigh+1 {
		return fmt.Errorf("%w: %s epoch %d is not the next after %d", lock.ErrConflict, key, rec.Epoch, v.epochHigh)
	}
	main, sidecar := lock.EncodeNode(rec)
	if s.Format == WireExtended {
		main = sidecar
	}
	return s.patch(ctx, key, pre.Version, map[string]*string{key.Name: &main, lock.SidecarAnnotation(key.Name): &sidecar})
}

// CompareAndDelete implements lock.Store: one merge patch that removes the lock
// annotation under the precondition's resourceVersion, keeping the sidecar and
// with it the epoch high-water mark.
func (s *NodeLockStore) CompareAndDelete(ctx context.Context, key lock.Key, pre lock.Precondition) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if !pre.Present {
		return fmt.Errorf("%w: %s: a delete needs a present value, got %s", lock.ErrConflict, key, pre)
	}
	_, done, err := s.beginWrite(ctx, key, pre)
	if err != nil {
		return err
	}
	defer done()
	return s.patch(ctx, key, pre.Version, map[string]*string{key.Name: nil})
}

// beginWrite takes this store's turn to write key's Node and checks pre
// against the Node's view at pre's version. On success the caller holds the
// turn and ends it with done; on error no turn is held.
func (s *NodeLockStore) beginWrite(ctx context.Context, key lock.Key, pre lock.Precondition) (nodeView, func(), error) {
	done, err := s.writeTurn(ctx, key.Node)
	if err != nil {
		return nodeView{}, nil, err
	}
	v, err := s.viewAt(ctx, key, pre.Version)
	if err == nil {
		err = check(key, v, pre)
	}
	if err != nil {
		done()
		return nodeView{}, nil, err
	}
	return v, done, nil
}

// writeTurn waits until no other write of this store to node is in flight
// and returns the function that ends this one. Writes to one Node cannot
// succeed side by side anyway (each is guarded by the whole Node's
// resourceVersion); taking turns lets the writers that lost to a write of this
// store fail at once, from the view that write left (nodeView.supersedes),
// instead of each sending a patch the API server refuses with 409. When a
// release wakes many waiters of one process, only one of their grants reaches
// the API server.
func (s *NodeLockStore) writeTurn(ctx context.Context, node string) (done func(), err error) {
	s.mu.Lock()
	if s.writing == nil {
		s.writing = map[string]chan struct{}{}
	}
	turn, ok := s.writing[node]
	if !ok {
		turn = make(chan struct{}, 1)
		s.writing[node] = turn
	}
	s.mu.Unlock()
	select {
	case turn <- struct{}{}:
		return func() { <-turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// nodePatch is a JSON merge patch of a Node's annotations guarded by its
// resourceVersion; a nil annotation value removes the annotation.
type nodePatch struct {
	Metadata struct {
		ResourceVersion string             `json:"resourceVersion"`
		Annotations     map[string]*string `json:"annotations"`
	} `json:"metadata"`
}

func (s *NodeLockStore) patch(ctx context.Context, key lock.Key, version string, annotations map[string]*string) error {
	var p nodePatch
	p.Metadata.ResourceVersion = version
	p.Metadata.Annotations = annotations
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("lock %s: encoding patch: %w", key, err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: key.Node}}
	err = s.Client.Patch(ctx, node, client.RawPatch(types.MergePatchType, body))
	switch {
	case err == nil:
		v := viewOf(node, key)
		v.supersedes = version
		s.remember(key, v)
		s.Notify(key.Node)
		return nil
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: %s: node changed since resourceVersion %s: %v", lock.ErrConflict, key, version, err)
	case apierrors.IsNotFound(err):
		// The Node is gone, so it is certainly not at the observed version.
		return fmt.Errorf("%w: %s: node deleted: %v", lock.ErrConflict, key, err)
	}
	// Any other error (timeout, 5xx, lost connection) may or may not have
	// written; the caller re-reads (lock.Locker does, and accepts only an exact
	// match with what it wrote).
	return fmt.Errorf("lock %s: patch node: %w", key, err)
}

// Changes implements lock.Notifier: the channel is closed at the next write to
// any lock of key.Node that this store makes, or that an informer reports
// through Notify or EventHandler. Without an informer, other processes' writes
// are seen only at the waiter's next backoff.
func (s *NodeLockStore) Changes(key lock.Key) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		s.subs = map[string]chan struct{}{}
	}
	ch, ok := s.subs[key.Node]
	if !ok {
		ch = make(chan struct{})
		s.subs[key.Node] = ch
	}
	return ch
}

// Notify wakes everyone waiting on a lock of node.
func (s *NodeLockStore) Notify(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.subs[node]; ok {
		close(ch)
		delete(s.subs, node)
	}
}

// EventHandler returns an informer event handler that calls Notify for every
// Node update or delete whose lock annotations changed, so waiters wake on
// other processes' releases (HAMi's included). Register it on a Node informer,
// e.g. from a controller-runtime cache:
//
//	inf, _ := mgr.GetCache().GetInformer(ctx, &corev1.Node{})
//	_, _ = inf.AddEventHandler(store.EventHandler(lock.HAMiLockName))
func (s *NodeLockStore) EventHandler(lockNames ...string) toolscache.ResourceEventHandler {
	if len(lockNames) == 0 {
		lockNames = []string{lock.HAMiLockName}
	}
	changed := func(a, b *corev1.Node) bool {
		for _, n := range lockNames {
			if a.Annotations[n] != b.Annotations[n] || a.Annotations[lock.SidecarAnnotation(n)] != b.Annotations[lock.SidecarAnnotation(n)] {
				return true
			}
		}
		return false
	}
	return toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && changed(o, n) {
				s.Notify(n.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				s.Notify(n.Name)
				s.Forget(n.Name)
			}
		},
	}
}

// Forget drops what the store remembers about node's locks, e.g. when the
// Node is deleted (EventHandler does it), so memory stays bounded by the live
// nodes.
func (s *NodeLockStore) Forget(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A write still in flight keeps its turn token; a new writer gets a new
	// one. Only the fast path suffers: the resourceVersion guards every write.
	delete(s.writing, node)
	for k := range s.views {
		if k.Node == node {
			delete(s.views, k)
		}
	}
}
