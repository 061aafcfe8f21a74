package kube

import (
	"context"
	"fmt"
	"slices"

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
// slice, in no particular order. Pass dst[:0] of the previous pass to
// reuse its array.
func (l *PodLister) AppendClusterPods(dst []corev1.Pod, namespace, name string) ([]corev1.Pod, error) {
	objs, err := l.indexer.ByIndex(podListerIndex, namespace+"/"+name)
	if err != nil {
		return dst, fmt.Errorf("kube: reading the pod index: %w", err)
	}
	dst = slices.Grow(dst, len(objs))
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return dst, fmt.Errorf("kube: the pod index holds a %T", o)
		}
		dst = append(dst, *p)
	}
	return dst, nil
}
