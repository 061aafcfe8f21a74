package kube

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/reconcile"
)

// PodClusterIndex is the field index IndexPodsByCluster registers: pods by
// the value of their reconcile.LabelCluster label.
const PodClusterIndex = reconcile.LabelCluster

// IndexPodsByCluster registers PodClusterIndex on a cache's field indexer
// (a manager's GetFieldIndexer()), before the cache starts. Listing one
// cluster's pods with ClusterPods then reads the index instead of matching
// the labels of every pod in the namespace, which on a steady-state pass
// over 10,000 pods costs about half as much as reconcile.Decide
// (BenchmarkSteadyPass10k).
func IndexPodsByCluster(ctx context.Context, fi client.FieldIndexer) error {
	return fi.IndexField(ctx, &corev1.Pod{}, PodClusterIndex, func(o client.Object) []string {
		if c := o.GetLabels()[reconcile.LabelCluster]; c != "" {
			return []string{c}
		}
		return nil
	})
}

// ClusterPods returns the list options that read cluster name's pods in
// namespace from a cache indexed by IndexPodsByCluster, without deep copies
// (see the package doc: the pods are shared with the cache and must not be
// changed).
func ClusterPods(namespace, name string) []client.ListOption {
	return []client.ListOption{client.InNamespace(namespace), client.MatchingFields{PodClusterIndex: name}, client.UnsafeDisableDeepCopy}
}

// podListerIndex is the name of the index PodLister adds to the pod
// informer: pods by "<namespace>/<cluster label>".
const podListerIndex = "plancore.reconcile.cluster"

// PodLister reads one cluster's pods straight from the pod informer's own
// index into a slice the caller owns and reuses, for the steady-state pass
// of a controller: no List, no new slice and no garbage per pass.
// controller-runtime's List, even with client.UnsafeDisableDeepCopy,
// allocates a new Items slice and copies every pod into it (11.8 MB per
// pass over 10,000 pods), and collecting that garbage costs more than
// planning the pods (BenchmarkSteadyPass10k).
//
// The pods AppendClusterPods appends are shallow copies of the cached
// objects: their maps, slices and pointers are the cache's own, as with
// any read without copies (see the package doc), so they must not be
// changed; the cores never change their input (TestCachedObjectsUntouched).
// A PodLister is safe for concurrent use; each caller owns its slice.
type PodLister struct {
	indexer toolscache.Indexer
}

// NewPodLister adds PodLister's index to the pod informer of informers (a
// manager's GetCache(), before or after it starts) and returns a lister on
// it. The informer must expose its indexer, as a cache over all namespaces
// does; a cache restricted to namespaces wraps its informers and is
// refused with an error (list with ClusterPods instead).
func NewPodLister(ctx context.Context, informers cache.Informers) (*PodLister, error) {
	inf, err := informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("kube: pod informer: %w", err)
	}
	ix, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("kube: the pod informer %T does not expose its indexer (a cache restricted to namespaces?); list with ClusterPods instead", inf)
	}
	if _, done := ix.GetIndexer().GetIndexers()[podListerIndex]; !done {
		err := inf.AddIndexers(toolscache.Indexers{podListerIndex: func(o any) ([]string, error) {
			p, ok := o.(*corev1.Pod)
			if !ok {
				return nil, nil
			}
			if c := p.Labels[reconcile.LabelCluster]; c != "" {
				return []string{p.Namespace + "/" + c}, nil
			}
			return nil, nil
		}})
		if err != nil {
			return nil, fmt.Errorf("kube: adding the pod index: %w", err)
		}
	}
	return &PodLister{indexer: ix.GetIndexer()}, nil
}

// AppendClusterPods appends the pods of cluster name in namespace (those
// labelled reconcile.LabelCluster = name) to dst and returns the extended
// slice, ordered by the address of the cached objects (an order with no
// meaning but to the memory: see below). Pass dst[:0] of the previous pass
// to reuse its array.
//
// The index hands out its pods in a random order, while the informer's
// objects lie in memory roughly in the order they arrived: every pod decoded
// from a watch event holds its own labels map and strings, allocated beside
// it. Read in a random order, each of these is a cache miss; read in
// address order, the processor's prefetching finds most of them, which
// halves reconcile.Decide's time on these pods (BenchmarkSteadyPass10k).
// Sorting the addresses costs far less than that.
func (l *PodLister) AppendClusterPods(dst []corev1.Pod, namespace, name string) ([]corev1.Pod, error) {
	objs, err := l.indexer.ByIndex(podListerIndex, namespace+"/"+name)
	if err != nil {
		return dst, fmt.Errorf("kube: reading the pod index: %w", err)
	}
	scratch := addrPool.Get().(*addrScratch)
	scratch.a = slices.Grow(scratch.a[:0], len(objs))
	scratch.tmp = slices.Grow(scratch.tmp[:0], len(objs))[:len(objs)]
	defer func() {
		// The pool must not keep cached objects alive.
		clear(scratch.a[:cap(scratch.a)])
		clear(scratch.tmp)
		addrPool.Put(scratch)
	}()
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return dst, fmt.Errorf("kube: the pod index holds a %T", o)
		}
		scratch.a = append(scratch.a, podAddr{uintptr(unsafe.Pointer(p)), p})
	}
	sorted := sortByAddress(scratch.a, scratch.tmp)
	dst = slices.Grow(dst, len(sorted))
	for i := range sorted {
		dst = append(dst, *sorted[i].p)
	}
	return dst, nil
}

// podAddr is a cached pod and its address, which the Go heap never moves.
type podAddr struct {
	addr uintptr
	p    *corev1.Pod
}

// addrScratch holds AppendClusterPods' buffers between calls, so that a
// steady-state pass makes no garbage of them.
type addrScratch struct{ a, tmp []podAddr }

var addrPool = sync.Pool{New: func() any { return new(addrScratch) }}

// addrDigit is the width in bits of one radix-sort pass: heap addresses of
// one cache differ in about 30 bits, so three passes.
const addrDigit = 11

// sortByAddress orders a by address with a least-significant-digit radix
// sort over the bits in which the addresses differ, using tmp (as long as
// a) as the other buffer, and returns whichever of the two holds the result.
func sortByAddress(a, tmp []podAddr) []podAddr {
	if len(a) < 2 {
		return a
	}
	lo, hi := a[0].addr, a[0].addr
	for i := range a {
		lo, hi = min(lo, a[i].addr), max(hi, a[i].addr)
	}
	const mask = 1<<addrDigit - 1
	for shift := 0; shift < bits.UintSize && (hi-lo)>>shift != 0; shift += addrDigit {
		var count [1<<addrDigit + 1]int
		for i := range a {
			count[(a[i].addr-lo)>>shift&mask+1]++
		}
		for d := 1; d < len(count); d++ {
			count[d] += count[d-1]
		}
		for i := range a {
			d := (a[i].addr - lo) >> shift & mask
			tmp[count[d]] = a[i]
			count[d]++
		}
		a, tmp = tmp, a
	}
	return a
}
