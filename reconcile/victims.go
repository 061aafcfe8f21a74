package reconcile

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// victimKey is a pod's rank for scale-down, computed once per pod.
type victimKey struct {
	idx        int32
	assigned   bool
	phase      int
	ready      bool
	cost       int64
	readySince time.Time
	restarts   int32
	created    time.Time
	name       string
}

func phaseOrdinal(p corev1.PodPhase) int {
	switch p {
	case corev1.PodPending:
		return 0
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 0
}

func podReady(p *corev1.Pod) (bool, time.Time) {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

func keyOf(i int32, p *corev1.Pod) victimKey {
	k := victimKey{idx: i, assigned: p.Spec.NodeName != "", phase: phaseOrdinal(p.Status.Phase),
		created: p.CreationTimestamp.Time, name: p.Name}
	k.ready, k.readySince = podReady(p)
	if v, ok := p.Annotations[AnnotationPodDeletionCost]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			k.cost = n
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		k.restarts = max(k.restarts, cs.RestartCount)
	}
	return k
}

// compareVictims orders pods for deletion like Kubernetes ReplicaSet's
// ActivePods: unscheduled before scheduled; Pending < Unknown < Running;
// not ready before ready; lower pod-deletion-cost first; ready for less time
// first (a zero time counts as the newest); more restarts first; newer
// first (a zero time first); then name.
func compareVictims(a, b *victimKey) int {
	if a.assigned != b.assigned {
		return boolFirst(!a.assigned, !b.assigned)
	}
	if a.phase != b.phase {
		return cmp.Compare(a.phase, b.phase)
	}
	if a.ready != b.ready {
		return boolFirst(!a.ready, !b.ready)
	}
	if a.cost != b.cost {
		return cmp.Compare(a.cost, b.cost)
	}
	if a.ready && b.ready && !a.readySince.Equal(b.readySince) {
		return newerOrZeroFirst(a.readySince, b.readySince)
	}
	if a.restarts != b.restarts {
		return cmp.Compare(b.restarts, a.restarts)
	}
	if !a.created.Equal(b.created) {
		return newerOrZeroFirst(a.created, b.created)
	}
	return cmp.Compare(a.name, b.name)
}

// newerOrZeroFirst orders the later time first, and a zero time before any
// other, as Kubernetes' ActivePods does (its afterOrZero): a pod whose
// creation or ready time is unknown counts as the newest, so it goes first.
func newerOrZeroFirst(a, b time.Time) int {
	if a.IsZero() || b.IsZero() {
		return boolFirst(a.IsZero(), b.IsZero())
	}
	return b.Compare(a)
}

// boolFirst orders the side where x is true first.
func boolFirst(a, b bool) int {
	switch {
	case a && !b:
		return -1
	case b && !a:
		return 1
	}
	return 0
}

// victims picks n pods of running to delete. KubeRay takes the first n in list
// order, which its tests observe as name order (#747); that is kept under
// Compat.NameOrderVictims. By default the pods are ranked (compareVictims).
// Only the n best are fully ordered: a partial selection, O(len·log n).
func (d *decider) victims(running []int32, n int) []int32 {
	if n >= len(running) {
		n = len(running)
	}
	if n <= 0 {
		return nil
	}
	if d.c.NameOrderVictims {
		names := slices.Clone(running)
		slices.SortFunc(names, func(a, b int32) int { return cmp.Compare(d.pod(a).Name, d.pod(b).Name) })
		return names[:n]
	}
	// A bounded max-heap of the n best keys. The keys stay where they were
	// first stored; the heap orders their slots, so sifting moves 4-byte
	// slot numbers rather than whole keys.
	keys := make([]victimKey, 0, n)
	heap := make([]int32, 0, n)
	worse := func(i, j int) bool { return compareVictims(&keys[heap[i]], &keys[heap[j]]) > 0 }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(heap) {
				return
			}
			m := l
			if r := l + 1; r < len(heap) && worse(r, l) {
				m = r
			}
			if !worse(m, i) {
				return
			}
			heap[i], heap[m] = heap[m], heap[i]
			i = m
		}
	}
	for _, i := range running {
		k := keyOf(i, d.pod(i))
		if len(keys) < n {
			keys = append(keys, k)
			heap = append(heap, int32(len(keys)-1))
			for c := len(heap) - 1; c > 0; {
				par := (c - 1) / 2
				if !worse(c, par) {
					break
				}
				heap[c], heap[par] = heap[par], heap[c]
				c = par
			}
			continue
		}
		if compareVictims(&k, &keys[heap[0]]) < 0 {
			keys[heap[0]] = k
			down(0)
		}
	}
	// Popping the max-heap yields the victims worst-ranked first; filling
	// out from the back leaves them best first.
	out := make([]int32, len(heap))
	for j := len(heap) - 1; j >= 0; j-- {
		out[j] = keys[heap[0]].idx
		heap[0] = heap[len(heap)-1]
		heap = heap[:len(heap)-1]
		down(0)
	}
	return out
}
