package main

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// Labels both operators put on a RayCluster's pods.
const (
	labelCluster  = "ray.io/cluster"
	labelNodeType = "ray.io/node-type"
)

// observer follows RayClusters and their pods through the harness's own
// watches (not the operator's) and stamps each transition with the time its
// event arrived: a cluster's creation, its first pod, and the moment every
// pod it wants (1 head + its workers) exists and then is Running and Ready.
// A change of the wanted count (a scale) restarts the last two stamps.
type observer struct {
	mu       sync.Mutex
	clusters map[string]*track // namespace/name
}

type track struct {
	seen       time.Time // the RayCluster's add event
	firstPod   time.Time // the first pod's add event
	want       int       // 1 + the workers its spec asks for
	generation int64
	changed    time.Time // the event of the last spec change of want
	exist      time.Time // all wanted pods exist (since changed, or seen)
	ready      time.Time // all wanted pods Running and Ready
	pods       map[string]bool
}

func newObserver() *observer { return &observer{clusters: map[string]*track{}} }

func (o *observer) get(key string) *track {
	t := o.clusters[key]
	if t == nil {
		t = &track{pods: map[string]bool{}}
		o.clusters[key] = t
	}
	return t
}

// wanted is 1 + the replicas of every worker group (numOfHosts 1).
func wanted(rc *unstructured.Unstructured) int {
	groups, _, _ := unstructured.NestedSlice(rc.Object, "spec", "workerGroupSpecs")
	n := 1
	for _, g := range groups {
		if m, ok := g.(map[string]any); ok {
			if r, ok := m["replicas"].(int64); ok {
				n += int(r)
			}
		}
	}
	return n
}

func (o *observer) cluster(obj any) {
	rc, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.get(rc.GetNamespace() + "/" + rc.GetName())
	if t.seen.IsZero() {
		t.seen = now
	}
	if rc.GetGeneration() == t.generation {
		return
	}
	t.generation = rc.GetGeneration()
	if w := wanted(rc); w != t.want {
		if t.want != 0 {
			t.changed, t.exist, t.ready = now, time.Time{}, time.Time{}
		}
		t.want = w
		t.check(now)
	}
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (o *observer) pod(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Labels[labelCluster] == "" {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.get(p.Namespace + "/" + p.Labels[labelCluster])
	if deleted || p.DeletionTimestamp != nil {
		delete(t.pods, p.Name)
		return
	}
	if t.firstPod.IsZero() {
		t.firstPod = now
	}
	t.pods[p.Name] = podReady(p)
	t.check(now)
}

// check stamps exist and ready once the wanted pods are there.
func (t *track) check(now time.Time) {
	if t.want == 0 {
		return
	}
	ready := 0
	for _, r := range t.pods {
		if r {
			ready++
		}
	}
	if t.exist.IsZero() && len(t.pods) >= t.want {
		t.exist = now
	}
	if t.ready.IsZero() && ready >= t.want {
		t.ready = now
	}
}

// progress counts, over the clusters whose key starts with prefix, those
// seen, the pods that exist and are ready, and the clusters ready.
type progress struct{ clusters, pods, readyPods, readyClusters int }

func (o *observer) progress(prefix string) progress {
	o.mu.Lock()
	defer o.mu.Unlock()
	var p progress
	for key, t := range o.clusters {
		if len(key) < len(prefix) || key[:len(prefix)] != prefix {
			continue
		}
		if !t.seen.IsZero() {
			p.clusters++
		}
		p.pods += len(t.pods)
		for _, r := range t.pods {
			if r {
				p.readyPods++
			}
		}
		if !t.ready.IsZero() {
			p.readyClusters++
		}
	}
	return p
}

// snapshot copies the track of key.
func (o *observer) snapshot(key string) track {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := *o.get(key)
	t.pods = nil
	return t
}

// steady summarises the clusters under prefix: the first seen, the last
// ready (zero if one is not), and the create-to-first-pod latencies sorted.
func (o *observer) steady(prefix string) (first, lastReady time.Time, firstPod []time.Duration, allReady bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	allReady = true
	for key, t := range o.clusters {
		if len(key) < len(prefix) || key[:len(prefix)] != prefix {
			continue
		}
		if first.IsZero() || t.seen.Before(first) {
			first = t.seen
		}
		if t.ready.IsZero() {
			allReady = false
		} else if t.ready.After(lastReady) {
			lastReady = t.ready
		}
		if !t.firstPod.IsZero() && !t.seen.IsZero() {
			firstPod = append(firstPod, t.firstPod.Sub(t.seen))
		}
	}
	sort.Slice(firstPod, func(i, j int) bool { return firstPod[i] < firstPod[j] })
	return first, lastReady, firstPod, allReady
}

// quantile of sorted durations, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}
