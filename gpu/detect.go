package gpu

import (
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Request is what one container asks of one device type, derived with HAMi's
// rules. Memory is either absolute (MemoryMiB) or relative
// (MemoryPercent), never both: when a container sets both, MiB wins, exactly as
// HAMi's fit uses Memreq whenever it is non-zero.
type Request struct {
	// Container is the container's name.
	Container string
	// Init is true for an init container.
	Init bool
	// Type is the registry row the request is for.
	Type string
	// Nums is the number of devices.
	Nums int32
	// MemoryMiB is the memory per device in MiB, or 0 when MemoryPercent is set.
	MemoryMiB int32
	// MemoryPercent is the memory per device as a percentage of the card
	// (1..100), or 0 when MemoryMiB is set.
	MemoryPercent int32
	// Cores is the compute per device, a percentage of one card (values above
	// 100 are clamped by Fit, as HAMi does).
	Cores int32
	// Priority is the task priority, where the type has a Priority resource.
	Priority int32
}

// DetectRequests returns one Request per container and requested device type:
// init containers first, then app containers, each in pod order, types in
// registry order within a container.
//
// HAMi looks only at spec.containers, so a pod whose GPU request sits in an init
// container skips the node lock and Allocate serves the wrong pod (#2640);
// plancore reads both lists. HAMi also turns a non-integer, negative or
// overflowing quantity into an empty request; plancore returns an error that
// wraps ErrInvalidRequest and names the container and the resource.
func DetectRequests(pod *corev1.Pod, reg Registry) ([]Request, error) {
	if pod == nil {
		return nil, fmt.Errorf("%w: pod is nil", ErrInvalidRequest)
	}
	var out []Request
	for _, list := range []struct {
		init       bool
		containers []corev1.Container
	}{{true, pod.Spec.InitContainers}, {false, pod.Spec.Containers}} {
		for i := range list.containers {
			reqs, err := reg.containerRequests(&list.containers[i], list.init)
			if err != nil {
				return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			out = append(out, reqs...)
		}
	}
	return out, nil
}

// Requests returns the container's requests, one per requested type in
// registry order, treating it as an app container.
func (r Registry) Requests(c corev1.Container) ([]Request, error) {
	return r.containerRequests(&c, false)
}

func (r Registry) containerRequests(c *corev1.Container, init bool) ([]Request, error) {
	var out []Request
	for _, t := range r.types {
		// Every resource of the type is read, so a malformed value is reported
		// even on a container that does not ask for the type's devices.
		q := quantityReader{c: c, init: init}
		nums, _ := q.read(t.Count)
		mem, _ := q.read(t.Memory)
		pct, _ := q.read(t.MemoryPercentage)
		cores, coresSet := q.read(t.Cores)
		prio, _ := q.read(t.Priority)
		if q.err != nil {
			return nil, q.err
		}
		if nums == 0 {
			continue
		}
		req := Request{Container: c.Name, Init: init, Type: t.Type, Nums: nums, Priority: prio}
		memMiB := int64(mem) * t.memoryUnit()
		if memMiB > math.MaxInt32 {
			return nil, fmt.Errorf("%w: container %q resource %s = %d × %d MiB overflows int32 MiB",
				ErrInvalidRequest, c.Name, t.Memory, mem, t.memoryUnit())
		}
		req.MemoryMiB = int32(memMiB)
		switch {
		case req.MemoryMiB > 0:
			// MiB wins over a percentage, as in HAMi's fit.
		case pct > 100:
			req.MemoryPercent = 100
		case pct > 0:
			req.MemoryPercent = pct
		case t.DefaultMemoryMiB > 0:
			req.MemoryMiB = t.DefaultMemoryMiB
		default:
			req.MemoryPercent = 100
		}
		req.Cores = t.DefaultCores
		if coresSet {
			req.Cores = cores
		}
		out = append(out, req)
	}
	return out, nil
}

// quantityReader reads integer resource values of one container, limits first,
// then requests, keeping the first error.
type quantityReader struct {
	c    *corev1.Container
	init bool
	err  error
}

// read returns the resource's value and whether the container sets it.
func (q *quantityReader) read(name corev1.ResourceName) (int32, bool) {
	if q.err != nil || name == "" {
		return 0, false
	}
	v, ok := q.c.Resources.Limits[name]
	if !ok {
		v, ok = q.c.Resources.Requests[name]
	}
	if !ok {
		return 0, false
	}
	kind := "container"
	if q.init {
		kind = "init container"
	}
	n, exact := v.AsInt64()
	if !exact {
		// AsInt64 refuses a whole number written at a finer scale ("2000m");
		// compare the rounded value with the original instead.
		if r := v.Value(); resource.NewQuantity(r, resource.DecimalSI).Cmp(v) == 0 {
			n, exact = r, true
		}
	}
	switch {
	case !exact && v.Sign() < 0, exact && n < 0:
		q.err = fmt.Errorf("%w: %s %q resource %s = %q is negative", ErrInvalidRequest, kind, q.c.Name, name, v.String())
	case !exact:
		q.err = fmt.Errorf("%w: %s %q resource %s = %q is not an integer that fits in int64", ErrInvalidRequest, kind, q.c.Name, name, v.String())
	case n > math.MaxInt32:
		q.err = fmt.Errorf("%w: %s %q resource %s = %q overflows int32", ErrInvalidRequest, kind, q.c.Name, name, v.String())
	}
	if q.err != nil {
		return 0, false
	}
	return int32(n), true
}

// RequiredLocks returns the node locks a Bind of pod must hold: the LockName of
// every type some init or app container requests, de-duplicated and sorted
// ascending. One global order for every pod rules out two Binds each holding one
// lock the other waits for; HAMi orders by backend type name and relies on
// re-entrancy to de-duplicate the shared lock (#2255).
func RequiredLocks(pod *corev1.Pod, reg Registry) ([]string, error) {
	reqs, err := DetectRequests(pod, reg)
	if err != nil {
		return nil, err
	}
	return locksOf(reqs, reg), nil
}

func locksOf(reqs []Request, reg Registry) []string {
	var locks []string
	for _, req := range reqs {
		t, _ := reg.Lookup(req.Type)
		if t.LockName != "" {
			locks = append(locks, t.LockName)
		}
	}
	slices.Sort(locks)
	return slices.Compact(locks)
}
