package gpu

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	// CoresShare is true when Cores is a percentage of each device's own
	// compute units rather than of a 100-core card (the type's
	// CoresShareOfDevice, HAMi's AMD).
	CoresShare bool
	// Rule is the type's fit rule (DeviceType.FitRule).
	Rule FitRule
	// SoftSplit is true for an Ascend request of a pod asking the hami-core
	// soft split (huawei.com/vnpu-mode, read by FitRequestFromPod): the node
	// must support it (Node.VNPUCore, else ModeNotFit) and every device
	// counts 100 cores.
	SoftSplit bool
	// Capabilities are the type's (DeviceType.Capabilities).
	Capabilities Capabilities
	// Slices is, under FitSliceProfiles, the exact profile size asked
	// (Enflame's drs-gcu); 0 chooses the smallest profile holding MemoryMiB
	// (HAMi's raw gcu-memory value: GiB, or MiB when above twice the
	// largest profile's memory) and Cores.
	Slices int32
}

// DetectRequests returns one Request per container and requested device type:
// init containers first, then app containers, each in pod order, types in
// registry order within a container.
//
// HAMi v2.10 reads both lists too (Resourcereqs, and Filter fits init
// containers in allocateInitContainers), but its LockNode looks only at
// spec.containers, so a pod whose GPU request sits in an init container
// alone skips the node lock and Allocate may serve the wrong pod (HAMi
// #2640); RequiredLocks reads both lists. HAMi also turns a non-integer, negative or
// overflowing quantity into an empty request; plancore refuses the pod with
// every such quantity at once: a *plancore.InvalidError wrapping
// ErrInvalidRequest (and so ErrInvalidInput) that names each by its path in
// the pod and its value
// (spec.initContainers[0].resources.limits[nvidia.com/gpucores]: "-5").
func DetectRequests(pod *corev1.Pod, reg Registry) ([]Request, error) {
	if pod == nil {
		return nil, invalid(ErrInvalidRequest, field.ErrorList{field.Required(field.NewPath("pod"), "a pod is required")})
	}
	reqs, errs := reg.podRequests(pod)
	if err := invalid(ErrInvalidRequest, errs); err != nil {
		return nil, err
	}
	return reqs, nil
}

// podRequests reads the requests of a non-nil pod, init containers first,
// with every problem found.
func (r Registry) podRequests(pod *corev1.Pod) ([]Request, field.ErrorList) {
	var out []Request
	var errs field.ErrorList
	spec := field.NewPath("spec")
	for _, list := range []struct {
		init       bool
		path       *field.Path
		containers []corev1.Container
	}{{true, spec.Child("initContainers"), pod.Spec.InitContainers}, {false, spec.Child("containers"), pod.Spec.Containers}} {
		for i := range list.containers {
			reqs, bad := r.containerRequests(&list.containers[i], list.init, list.path.Index(i))
			out = append(out, reqs...)
			errs = append(errs, bad...)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// Requests returns the container's requests, one per requested type in
// registry order, treating it as an app container. Problems are named from
// the container (resources.limits[nvidia.com/gpu]), all at once, as
// DetectRequests names them.
func (r Registry) Requests(c corev1.Container) ([]Request, error) {
	reqs, errs := r.containerRequests(&c, false, nil)
	if err := invalid(ErrInvalidRequest, errs); err != nil {
		return nil, err
	}
	return reqs, nil
}

// containerRequests reads one container, named by p (nil for a container on
// its own), reporting every malformed quantity.
func (r Registry) containerRequests(c *corev1.Container, init bool, p *field.Path) ([]Request, field.ErrorList) {
	var out []Request
	var errs field.ErrorList
	for _, t := range r.types {
		// Every resource of the type is read, so a malformed value is reported
		// even on a container that does not ask for the type's devices.
		q := quantityReader{c: c, path: p, limitsOnly: t.LimitsOnly}
		if req, ok := t.derive(&q, Request{Container: c.Name, Init: init, Type: t.Type}); ok {
			out = append(out, req)
		}
		errs = append(errs, q.errs...)
	}
	return out, errs
}

// derive reads the type's resources through q and completes req with HAMi's
// rules for the type; false when the container does not ask for the type or
// a value is malformed (q.errs says which).
func (t DeviceType) derive(q *quantityReader, req Request) (Request, bool) {
	req.Capabilities = t.Capabilities
	nums, _ := q.read(t.Count)
	mem, memSet, memPath, memText := t.readMemory(q)
	pct, _ := q.read(t.MemoryPercentage)
	cores, coresSet := q.read(t.Cores)
	coresPath := q.last
	req.Priority, _ = q.read(t.Priority)
	if len(q.errs) > 0 {
		return req, false
	}
	switch {
	case t.CountRule == CountFromCores && nums == 0 && coresSet && cores > 0:
		per := t.CoresPerDevice
		if cores > per && cores%per != 0 {
			q.errs = append(q.errs, field.Invalid(coresPath, cores, fmt.Sprintf("must be at most %d or a multiple of it", per)))
			return req, false
		}
		req.Nums, req.Cores, req.MemoryPercent, req.Rule = max(cores/per, 1), min(cores, per), 100, t.FitRule
		return req, true
	case t.CountRule == CountFromCores && nums > 0:
		// A device-count request takes every core of each device: HAMi's
		// Coresreq is then the cores per device it read off the node
		// (coresPerAWSNeuron), CoresPerDevice here.
		cores, coresSet = t.CoresPerDevice, true
	case t.CountRule == CountOneDevice && nums > 0 && t.FitRule == FitSliceProfiles:
		// The count is the profile's size (HAMi's direct mode).
		req.Slices, mem, memSet, nums, cores, coresSet = nums, 0, false, 1, 0, true
	case t.CountRule == CountOneDevice && nums > 0:
		// The count is the size of one slice (HAMi's direct mode).
		mem, memSet, memText, nums, cores, coresSet = int64(nums), true, fmt.Sprint(nums), 1, 0, true
	case t.CountRule == CountOneDevice && (memSet || coresSet):
		nums = 1
	}
	if nums == 0 {
		return req, false
	}
	if t.CoresMax > 0 && coresSet && (cores < t.CoresMin || cores > t.CoresMax) {
		q.errs = append(q.errs, field.Invalid(coresPath, cores, fmt.Sprintf("must be within %d..%d", t.CoresMin, t.CoresMax)))
		return req, false
	}
	if t.MemoryRule == MemoryTiers {
		mem, cores, coresSet = t.tier(mem, memSet)
	}
	if t.SplitAcrossDevices {
		mem, cores = mem/int64(nums), cores/nums
	}
	if mem > math.MaxInt32 {
		q.errs = append(q.errs, field.Invalid(memPath, memText, "overflows int32 MiB"))
		return req, false
	}
	req.Nums, req.CoresShare, req.Rule = nums, t.CoresShareOfDevice, t.FitRule
	return newRequest(t, req, int32(mem), pct, cores, coresSet), true
}

// readMemory returns the type's memory request in MiB, whether it is set, its
// path and its text.
func (t DeviceType) readMemory(q *quantityReader) (int64, bool, *field.Path, string) {
	v, text, ok := q.readInt64(t.Memory)
	switch {
	case !ok:
		return 0, false, q.last, ""
	case t.MemoryRule != MemoryGiBOrQuantity:
		if v > math.MaxInt32 {
			q.errs = append(q.errs, field.Invalid(q.last, text, "overflows int32"))
			return 0, false, q.last, text
		}
		return v * t.memoryUnit(), true, q.last, text
	case strings.IndexFunc(text, unicode.IsLetter) >= 0:
		// A quantity with a unit is bytes.
		return v / (1 << 20), true, q.last, text
	default:
		// A bare number is GiB.
		return v * 1024, true, q.last, text
	}
}

// tier rounds a memory request up to the type's next tier and derives the
// cores from its share of the largest; an unset memory asks for all of it.
func (t DeviceType) tier(mem int64, set bool) (int64, int32, bool) {
	top := int64(t.MemoryTiersMiB[len(t.MemoryTiersMiB)-1])
	if !set {
		return top, 100, true
	}
	rounded := top
	for _, tier := range t.MemoryTiersMiB {
		if mem <= int64(tier) {
			rounded = int64(tier)
			break
		}
	}
	return rounded, int32(rounded * 100 / top), true
}

// newRequest completes req with HAMi's memory and core defaults.
func newRequest(t DeviceType, req Request, memMiB, pct, cores int32, coresSet bool) Request {
	req.MemoryMiB = memMiB
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
	return req
}

// quantityReader reads integer resource values of one container, limits first,
// then requests (limits alone when limitsOnly), collecting every problem.
type quantityReader struct {
	c          *corev1.Container
	path       *field.Path // the container's path; nil for a container on its own
	limitsOnly bool
	last       *field.Path // the path of the value read last
	errs       field.ErrorList
}

// read returns the resource's value and whether the container sets it
// (validly) as an int32.
func (q *quantityReader) read(name corev1.ResourceName) (int32, bool) {
	n, text, ok := q.readInt64(name)
	if !ok {
		return 0, false
	}
	if n > math.MaxInt32 {
		q.errs = append(q.errs, field.Invalid(q.last, text, "overflows int32"))
		return 0, false
	}
	return int32(n), true
}

// readInt64 returns the resource's non-negative integer value, its text and
// whether the container sets it (validly).
func (q *quantityReader) readInt64(name corev1.ResourceName) (int64, string, bool) {
	q.last = nil
	if name == "" {
		return 0, "", false
	}
	list := "limits"
	v, ok := q.c.Resources.Limits[name]
	if !ok && !q.limitsOnly {
		list = "requests"
		v, ok = q.c.Resources.Requests[name]
	}
	if !ok {
		return 0, "", false
	}
	if q.path != nil {
		q.last = q.path.Child("resources", list).Key(string(name))
	} else {
		q.last = field.NewPath("resources", list).Key(string(name))
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
		q.errs = append(q.errs, field.Invalid(q.last, v.String(), "must not be negative"))
	case !exact:
		q.errs = append(q.errs, field.Invalid(q.last, v.String(), "must be an integer that fits in int64"))
	default:
		return n, v.String(), true
	}
	return 0, "", false
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
