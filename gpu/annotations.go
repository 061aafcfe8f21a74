package gpu

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pod annotations read and written by the Bind flow and the fit.
const (
	// AnnoBindPhase is the Bind→Allocate phase: allocating, then success or failed.
	AnnoBindPhase = "hami.io/bind-phase"
	// AnnoBindTime is the Unix time in seconds at which Bind started.
	AnnoBindTime = "hami.io/bind-time"
	// AnnoLockEpoch carries the fencing epochs Bind holds, "<lock name>=<epoch>"
	// entries joined by ";" in acquisition order.
	AnnoLockEpoch = "plancore.io/lock-epoch"

	// AnnoNodePolicy is the pod's node scheduling policy (binpack | spread).
	AnnoNodePolicy = "hami.io/node-scheduler-policy"
	// AnnoGPUPolicy is the pod's device ordering chain, e.g. "binpack,numa".
	AnnoGPUPolicy = "hami.io/gpu-scheduler-policy"
	// AnnoScoringWeights weighs the device score, e.g. "slot=1,core=1,memory=3".
	AnnoScoringWeights = "hami.io/device-scoring-weights"
	// AnnoUseGPUType accepts only NVIDIA models containing one of its comma-separated values.
	AnnoUseGPUType = "nvidia.com/use-gputype"
	// AnnoNoUseGPUType rejects NVIDIA models containing one of its values.
	AnnoNoUseGPUType = "nvidia.com/nouse-gputype"
	// AnnoUseGPUUUID accepts only the listed NVIDIA device UUIDs.
	AnnoUseGPUUUID = "nvidia.com/use-gpuuuid"
	// AnnoNoUseGPUUUID rejects the listed NVIDIA device UUIDs.
	AnnoNoUseGPUUUID = "nvidia.com/nouse-gpuuuid"
	// AnnoNUMABind keeps each NVIDIA request on one NUMA node ("true").
	AnnoNUMABind = "nvidia.com/numa-bind"
	// AnnoVGPUMode accepts only devices of one sharing mode.
	AnnoVGPUMode = "nvidia.com/vgpu-mode"
)

// Bind phases written to AnnoBindPhase.
const (
	PhaseAllocating = "allocating"
	PhaseSuccess    = "success"
	PhaseFailed     = "failed"
)

// FitRequestFromPod builds a FitRequest from the pod's device requests and its
// policy and selector annotations. HAMi silently falls back to its defaults
// on an unknown policy, a malformed weight or a non-boolean numa-bind;
// plancore refuses the pod. Every problem is reported at once, the
// quantities DetectRequests refuses and the annotations alike: a
// *plancore.InvalidError wrapping ErrInvalidRequest (and so ErrInvalidInput)
// naming each by its path in the pod and its value
// (metadata.annotations[hami.io/node-scheduler-policy]: "tightest";
// metadata.annotations[hami.io/device-scoring-weights][1]: "core=x" for the
// second comma-separated entry).
func FitRequestFromPod(pod *corev1.Pod, reg Registry) (FitRequest, error) {
	if pod == nil {
		_, err := DetectRequests(nil, reg)
		return FitRequest{}, err
	}
	reqs, errs := reg.podRequests(pod)
	a := pod.Annotations
	annos := field.NewPath("metadata", "annotations")
	fr := FitRequest{Requests: reqs, NodePolicy: Policy(strings.TrimSpace(a[AnnoNodePolicy])), Mode: a[AnnoVGPUMode]}
	if !nodePolicyKnown(fr.NodePolicy) {
		errs = append(errs, field.NotSupported(annos.Key(AnnoNodePolicy), string(fr.NodePolicy), []Policy{Binpack, Spread}))
	}
	for i, p := range boundedEntries(a[AnnoGPUPolicy], annos.Key(AnnoGPUPolicy), &errs) {
		if p == "" {
			continue
		}
		if !gpuPolicyKnown(Policy(p)) {
			errs = append(errs, field.NotSupported(annos.Key(AnnoGPUPolicy).Index(i), p, gpuPolicies))
		}
		fr.GPUPolicy = append(fr.GPUPolicy, Policy(p))
	}
	if v, ok := a[AnnoScoringWeights]; ok {
		var bad field.ErrorList
		fr.Weights, bad = parseWeights(v, annos.Key(AnnoScoringWeights))
		errs = append(errs, bad...)
	}
	if v, ok := a[AnnoNUMABind]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			errs = append(errs, field.Invalid(annos.Key(AnnoNUMABind), v, "must be a boolean (true or false)"))
		}
		fr.NUMABind = b
	}
	fr.Selectors = reg.selectors(a, annos, &errs)
	if err := invalid(ErrInvalidRequest, errs); err != nil {
		return FitRequest{}, err
	}
	if a[AnnoAscendVNPUMode] == "hami-core" {
		for i, q := range fr.Requests {
			if t, ok := reg.Lookup(q.Type); ok && t.Annotations.Extra == ExtraAscend {
				fr.Requests[i].SoftSplit = true
			}
		}
	}
	// What was read above is what Validate checks; this is a guard, not a
	// second source of errors.
	if err := fr.Validate(); err != nil {
		return FitRequest{}, err
	}
	return fr, nil
}

// selectors returns, per registry type in registry order, the device
// selectors the pod's annotations set with the type's use/nouse type and
// UUID annotation names (nvidia.com/use-gputype, hygon.com/use-gpuuuid, ...).
// A list longer than its bound (MaxPolicyEntries models, MaxUUIDEntries
// ids) is reported under annos: every device of every candidate node is
// compared with every entry.
func (r Registry) selectors(a map[string]string, annos *field.Path, errs *field.ErrorList) []Selector {
	var out []Selector
	list := func(key string, bound int) []string {
		if key == "" {
			return nil
		}
		if n := strings.Count(a[key], ",") + 1; n > bound {
			*errs = append(*errs, field.TooMany(annos.Key(key), n, bound))
			return nil
		}
		return splitList(a[key])
	}
	for _, t := range r.types {
		n := t.Annotations
		sel := Selector{Type: t.Type, UseModels: list(n.UseType, MaxPolicyEntries), NoUseModels: list(n.NoUseType, MaxPolicyEntries),
			UseUUIDs: list(n.UseUUID, MaxUUIDEntries), NoUseUUIDs: list(n.NoUseUUID, MaxUUIDEntries)}
		if len(sel.UseModels)+len(sel.NoUseModels)+len(sel.UseUUIDs)+len(sel.NoUseUUIDs) > 0 {
			out = append(out, sel)
		}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, p := range splitEntries(s) {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// splitEntries splits a comma-separated annotation, trimming each entry and
// keeping empty ones, so that an entry's index is its position in the text.
func splitEntries(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	out := strings.Split(s, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// MaxPolicyEntries bounds the comma-separated lists a pod's scheduling
// annotations hold (the device policy chain, the scoring weights, the
// device models to use or avoid): a chain names each of the five device
// policies once, the weights three keys, and a model list a few product
// names, so a longer list is a mistake. It is refused as a whole, with one
// error, rather than with one error per entry: a pod's annotations may
// hold 256 KiB, and an error per two bytes would cost far more than the
// pod; and every candidate device is compared with every model.
const MaxPolicyEntries = 32

// MaxUUIDEntries bounds the device ids a pod's use or avoid list names
// (nvidia.com/use-gpuuuid, ...): every candidate device is compared with
// each, and a pod naming more devices than a large rack holds is a mistake.
const MaxUUIDEntries = 1024

// boundedEntries is splitEntries for a list of at most MaxPolicyEntries
// entries; a longer one is reported under p and read as empty.
func boundedEntries(s string, p *field.Path, errs *field.ErrorList) []string {
	if n := strings.Count(s, ",") + 1; n > MaxPolicyEntries {
		*errs = append(*errs, field.TooMany(p, n, MaxPolicyEntries))
		return nil
	}
	return splitEntries(s)
}

// parseWeights parses "slot=1,core=1,memory=3"; a key left out weighs 1.
// Each malformed entry is reported under p, indexed by its position.
func parseWeights(s string, p *field.Path) (Weights, field.ErrorList) {
	w := Weights{Slot: 1, Core: 1, Memory: 1}
	var errs field.ErrorList
	for i, kv := range boundedEntries(s, p, &errs) {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !ok || err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			errs = append(errs, field.Invalid(p.Index(i), kv, "want <slot|core|memory>=<finite non-negative number>"))
			continue
		}
		switch strings.TrimSpace(k) {
		case "slot":
			w.Slot = f
		case "core":
			w.Core = f
		case "memory":
			w.Memory = f
		default:
			errs = append(errs, field.NotSupported(p.Index(i), kv, []string{"slot", "core", "memory"}))
		}
	}
	return w, errs
}
