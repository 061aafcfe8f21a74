package gpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
// policy and selector annotations. An unknown policy, a malformed weight or a
// non-boolean numa-bind is an error wrapping ErrInvalidRequest that names the
// annotation; HAMi silently falls back to its defaults.
func FitRequestFromPod(pod *corev1.Pod, reg Registry) (FitRequest, error) {
	reqs, err := DetectRequests(pod, reg)
	if err != nil {
		return FitRequest{}, err
	}
	a := pod.Annotations
	fr := FitRequest{Requests: reqs, NodePolicy: Policy(strings.TrimSpace(a[AnnoNodePolicy])), Mode: a[AnnoVGPUMode]}
	for _, p := range splitList(a[AnnoGPUPolicy]) {
		fr.GPUPolicy = append(fr.GPUPolicy, Policy(p))
	}
	if v, ok := a[AnnoScoringWeights]; ok {
		if fr.Weights, err = parseWeights(v); err != nil {
			return FitRequest{}, err
		}
	}
	if v, ok := a[AnnoNUMABind]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return FitRequest{}, fmt.Errorf("%w: annotation %s = %q is not a boolean", ErrInvalidRequest, AnnoNUMABind, v)
		}
		fr.NUMABind = b
	}
	sel := Selector{
		Type:        "NVIDIA",
		UseModels:   splitList(a[AnnoUseGPUType]),
		NoUseModels: splitList(a[AnnoNoUseGPUType]),
		UseUUIDs:    splitList(a[AnnoUseGPUUUID]),
		NoUseUUIDs:  splitList(a[AnnoNoUseGPUUUID]),
	}
	if len(sel.UseModels)+len(sel.NoUseModels)+len(sel.UseUUIDs)+len(sel.NoUseUUIDs) > 0 {
		fr.Selectors = []Selector{sel}
	}
	if err := fr.Validate(); err != nil {
		return FitRequest{}, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return fr, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseWeights parses "slot=1,core=1,memory=3"; a key left out weighs 1.
func parseWeights(s string) (Weights, error) {
	w := Weights{Slot: 1, Core: 1, Memory: 1}
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !ok || err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return Weights{}, fmt.Errorf("%w: annotation %s entry %q: want <slot|core|memory>=<non-negative number>", ErrInvalidRequest, AnnoScoringWeights, kv)
		}
		switch strings.TrimSpace(k) {
		case "slot":
			w.Slot = f
		case "core":
			w.Core = f
		case "memory":
			w.Memory = f
		default:
			return Weights{}, fmt.Errorf("%w: annotation %s entry %q: unknown key %q", ErrInvalidRequest, AnnoScoringWeights, kv, k)
		}
	}
	return w, nil
}
