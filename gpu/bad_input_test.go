package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"pgregory.net/rapid"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/gpu"
)

// invalidFields returns the field paths an error names, from every
// *plancore.InvalidError it joins.
func invalidFields(err error) []string {
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, invalidFields(e)...)
		}
		return out
	}
	var inv *plancore.InvalidError
	if errors.As(err, &inv) {
		out = append(out, inv.Fields()...)
	}
	return out
}

// invalidErrors returns the problems an error lists, from every
// *plancore.InvalidError it joins.
func invalidErrors(err error) field.ErrorList {
	var out field.ErrorList
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, invalidErrors(e)...)
		}
		return out
	}
	var inv *plancore.InvalidError
	if errors.As(err, &inv) {
		out = append(out, inv.Errors...)
	}
	return out
}

// TestBadInput feeds bad input through Decide, StartBind, Options.Validate,
// AddUsage and ApplyBind: each row names the sentinel and the exact field
// paths, or (legal input) asserts a plan.
func TestBadInput(t *testing.T) {
	node := gpu.Node{Name: "n", Devices: []gpu.Device{card("g0", 0), card("g1", 1)}}
	req := gpu.FitRequest{Requests: []gpu.Request{nvReq("main", 1, 1000, 20)}}
	cases := []struct {
		name   string
		in     gpu.Input
		opts   gpu.Options
		kind   error
		fields []string
	}{
		{"empty node name", gpu.Input{Nodes: []gpu.Node{{Devices: node.Devices}}, Request: req}, gpu.Options{}, gpu.ErrInvalidDevice, []string{"nodes[0].name"}},
		{"duplicate node", gpu.Input{Nodes: []gpu.Node{node, node}, Request: req}, gpu.Options{}, gpu.ErrInvalidDevice, []string{"nodes[1].name"}},
		{"duplicate device", gpu.Input{Nodes: []gpu.Node{{Name: "n", Devices: []gpu.Device{card("g", 0), card("g", 1)}}}, Request: req}, gpu.Options{}, gpu.ErrInvalidDevice, []string{"nodes[0].devices[1].id"}},
		{"empty device ID", gpu.Input{Nodes: []gpu.Node{{Name: "n", Devices: []gpu.Device{card("", 0)}}}, Request: req}, gpu.Options{}, gpu.ErrInvalidDevice, []string{"nodes[0].devices[0].id"}},
		{"negative usage and capacity", gpu.Input{Nodes: []gpu.Node{{Name: "n", Devices: []gpu.Device{func() gpu.Device {
			d := used(card("g", 0), -1, math.MinInt32, 0)
			d.Count = -1
			return d
		}()}}}, Request: req}, gpu.Options{}, gpu.ErrInvalidDevice, []string{"nodes[0].devices[0].count", "nodes[0].devices[0].used", "nodes[0].devices[0].usedMemoryMiB"}},
		{"zero nums", gpu.Input{Nodes: []gpu.Node{node}, Request: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 0, 0, 0)}}}, gpu.Options{}, gpu.ErrInvalidRequest, []string{"request.requests[0].nums"}},
		{"MinInt32 everywhere", gpu.Input{Nodes: []gpu.Node{node}, Request: gpu.FitRequest{Requests: []gpu.Request{{Container: "c", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: math.MinInt32, MemoryMiB: math.MinInt32, MemoryPercent: math.MinInt32, Cores: math.MinInt32}}}}, gpu.Options{}, gpu.ErrInvalidRequest,
			[]string{"request.requests[0].nums", "request.requests[0].memoryMiB", "request.requests[0].memoryPercent", "request.requests[0].cores"}},
		{"memory percent above 100", gpu.Input{Nodes: []gpu.Node{node}, Request: gpu.FitRequest{Requests: []gpu.Request{{Container: "c", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryPercent: 101}}}}, gpu.Options{}, gpu.ErrInvalidRequest, []string{"request.requests[0].memoryPercent"}},
		{"unknown policies", gpu.Input{Request: gpu.FitRequest{NodePolicy: "random", GPUPolicy: []gpu.Policy{gpu.Spread, "topology"}}}, gpu.Options{}, gpu.ErrInvalidRequest, []string{"request.nodePolicy", "request.gpuPolicy[1]"}},
		{"NaN and negative weights", gpu.Input{Request: gpu.FitRequest{Weights: gpu.Weights{Slot: math.NaN(), Core: -1, Memory: math.Inf(1)}}}, gpu.Options{}, gpu.ErrInvalidRequest,
			[]string{"request.weights.slot", "request.weights.core", "request.weights.memory"}},
		{"request and nodes both bad", gpu.Input{Nodes: []gpu.Node{{}}, Request: gpu.FitRequest{NodePolicy: "x"}}, gpu.Options{}, gpu.ErrInvalidInput, []string{"request.nodePolicy", "nodes[0].name"}},
		{"negative options", gpu.Input{}, gpu.Options{RetryDeadline: -1, RetryBase: math.MinInt64, FixedInterval: -time.Second}, gpu.ErrInvalidOptions,
			[]string{"options.retryDeadline", "options.retryBase", "options.fixedInterval"}},
		{"MaxInt64 options", gpu.Input{}, gpu.Options{RetryDeadline: math.MaxInt64, ExtenderHTTPTimeout: math.MaxInt64, RetryCap: math.MaxInt64}, gpu.ErrInvalidOptions,
			[]string{"options.retryDeadline", "options.extenderHTTPTimeout", "options.retryCap"}},
		{"deadline not below the HTTP timeout, cap below base, jitter NaN", gpu.Input{}, gpu.Options{RetryDeadline: time.Minute, RetryBase: time.Second, RetryCap: time.Millisecond, RetryJitter: math.NaN()}, gpu.ErrInvalidOptions,
			[]string{"options.retryDeadline", "options.retryCap", "options.retryJitter"}},
		{"legal: no nodes", gpu.Input{Request: req}, gpu.Options{}, nil, nil},
		{"legal: node without devices", gpu.Input{Nodes: []gpu.Node{{Name: "empty"}}, Request: req}, gpu.Options{}, nil, nil},
		{"legal: MaxInt32 devices asked", gpu.Input{Nodes: []gpu.Node{node}, Request: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", math.MaxInt32, math.MaxInt32, math.MaxInt32)}}}, gpu.Options{}, nil, nil},
		{"legal: saturated usage", gpu.Input{Nodes: []gpu.Node{{Name: "n", Devices: []gpu.Device{used(card("g", 0), math.MaxInt32, math.MaxInt32, math.MaxInt32)}}}, Request: req}, gpu.HAMi(), nil, nil},
	}
	// The registry, detection and annotation decoders: each row calls one.
	decoders := []struct {
		name   string
		kind   error
		fields []string
		call   func() error
	}{
		{"registry: every bad row at once, by its index in the argument", gpu.ErrInvalidRegistry,
			[]string{"types[0].type", "types[1].memoryUnitMiB", "types[1].defaultCores", "types[2].lockName", "types[2].count", "types[3].type"},
			func() error {
				_, err := gpu.NewRegistry(
					gpu.DeviceType{Count: "a.io/gpu"},
					gpu.DeviceType{Type: "B", Count: "b.io/gpu", MemoryUnitMiB: math.MinInt32, DefaultCores: math.MaxInt32},
					gpu.DeviceType{Type: "C", Count: "b.io/gpu", LockName: "a/b/c"},
					gpu.DeviceType{Type: "B", Count: "d.io/gpu"})
				return err
			}},
		{"registry: the vendor-rule fields of one row at once", gpu.ErrInvalidRegistry,
			[]string{"types[0].fitRule", "types[0].vnpu.templates[1]", "types[0].vnpu", "types[0].annotations.extra", "types[0].cores",
				"types[1].fitRule"},
			func() error {
				_, err := gpu.NewRegistry(
					gpu.DeviceType{Type: "A", Count: "a.io/gpu", FitRule: "Tightest",
						VNPU:        gpu.VNPUConfig{Templates: []gpu.VNPUTemplate{{Name: "big", MemoryMiB: 2}, {Name: "small", MemoryMiB: 1}}, MemoryCapacityMiB: -1},
						Annotations: gpu.Annotations{Extra: "Everything", RegisterFormat: gpu.RegisterNeuron}},
					gpu.DeviceType{Type: "B", Count: "b.io/gpu", FitRule: gpu.FitSliceProfiles})
				return err
			}},
		{"fit request: an unknown rule and slices outside the slice rule", gpu.ErrInvalidRequest,
			[]string{"request.requests[0].rule", "request.requests[1].slices"},
			func() error {
				return gpu.FitRequest{Requests: []gpu.Request{{Container: "a", Type: "T", Nums: 1, Rule: "Tightest"}, {Container: "b", Type: "T", Nums: 1, Slices: 2}}}.Validate()
			}},
		{"registry With: a clash with a kept row and an empty name", gpu.ErrInvalidRegistry, []string{"types[0].count", "types[1].type"},
			func() error {
				_, err := gpu.DefaultRegistry().With(gpu.DeviceType{Type: "Dup", Count: "nvidia.com/gpu"}, gpu.DeviceType{Count: "z.io/x"})
				return err
			}},
		{"nil pod", gpu.ErrInvalidRequest, []string{"pod"},
			func() error { _, err := gpu.DetectRequests(nil, gpu.DefaultRegistry()); return err }},
		{"quantities in init and app containers at once", gpu.ErrInvalidRequest,
			[]string{"spec.initContainers[0].resources.limits[nvidia.com/gpucores]", "spec.containers[1].resources.limits[nvidia.com/gpu]",
				"spec.containers[1].resources.limits[nvidia.com/gpumem]", "spec.containers[2].resources.requests[cambricon.com/mlu.smlu.vmemory]"},
			func() error { _, err := gpu.DetectRequests(badQuantitiesPod(), gpu.DefaultRegistry()); return err }},
		{"required locks of the same pod", gpu.ErrInvalidRequest,
			[]string{"spec.initContainers[0].resources.limits[nvidia.com/gpucores]", "spec.containers[1].resources.limits[nvidia.com/gpu]",
				"spec.containers[1].resources.limits[nvidia.com/gpumem]", "spec.containers[2].resources.requests[cambricon.com/mlu.smlu.vmemory]"},
			func() error { _, err := gpu.RequiredLocks(badQuantitiesPod(), gpu.DefaultRegistry()); return err }},
		{"one container on its own", gpu.ErrInvalidRequest, []string{"resources.limits[nvidia.com/gpu]", "resources.limits[nvidia.com/priority]"},
			func() error {
				_, err := gpu.DefaultRegistry().Requests(ctr("c", rl("nvidia.com/gpu", "-1", "nvidia.com/priority", "3000000000")))
				return err
			}},
		{"fit request: quantities and every annotation at once", gpu.ErrInvalidRequest,
			[]string{"spec.containers[1].resources.limits[nvidia.com/gpu]", "metadata.annotations[hami.io/node-scheduler-policy]",
				"metadata.annotations[hami.io/gpu-scheduler-policy][2]", "metadata.annotations[hami.io/device-scoring-weights][0]",
				"metadata.annotations[hami.io/device-scoring-weights][2]", "metadata.annotations[nvidia.com/numa-bind]"},
			func() error {
				pod := podWith(nil, []corev1.Container{ctr("ok", rl("nvidia.com/gpu", "1")), ctr("bad", rl("nvidia.com/gpu", "1.5"))})
				pod.Annotations = map[string]string{
					gpu.AnnoNodePolicy:     "tightest",
					gpu.AnnoGPUPolicy:      "binpack,,topology",
					gpu.AnnoScoringWeights: "slot=NaN,core=1,gpu=2",
					gpu.AnnoNUMABind:       "sometimes",
				}
				_, err := gpu.FitRequestFromPod(pod, gpu.DefaultRegistry())
				return err
			}},
		{"fit request of a nil pod", gpu.ErrInvalidRequest, []string{"pod"},
			func() error { _, err := gpu.FitRequestFromPod(nil, gpu.DefaultRegistry()); return err }},
		{"allocation encoding: every bad item at once", gpu.ErrInvalidAllocation,
			[]string{"containers[0].devices[0].memoryMiB", "containers[0].devices[0].cores", "containers[0].devices[1].uuid",
				"containers[0].devices[1].type", "containers[2].devices[0]"},
			func() error {
				_, err := gpu.DecodeAllocations("g0,NVIDIA,x,-1:,,1,1:;g1,NVIDIA,1,1;a,b,c:")
				return err
			}},
		{"allocation encoding: MaxInt32 plus one", gpu.ErrInvalidAllocation, []string{"containers[0].devices[0].memoryMiB", "containers[0].devices[0].cores"},
			func() error { _, err := gpu.DecodeAllocations("g0,NVIDIA,2147483648,-2147483649"); return err }},
		{"lock epochs: every bad entry at once", gpu.ErrInvalidBind,
			[]string{"metadata.annotations[plancore.io/lock-epoch][1]", "metadata.annotations[plancore.io/lock-epoch][2]",
				"metadata.annotations[plancore.io/lock-epoch][3]", "metadata.annotations[plancore.io/lock-epoch][4]"},
			func() error { _, err := gpu.ParseLockEpochs("a=1;=2;b=0;c;d=18446744073709551616"); return err }},
		{"legal: whole quantities at a finer scale", nil, nil,
			func() error {
				_, err := gpu.DetectRequests(podWith(nil, []corev1.Container{ctr("c", rl("nvidia.com/gpu", "2000m", "nvidia.com/gpumem", "2147483647"))}), gpu.DefaultRegistry())
				return err
			}},
		{"legal: MaxUint64 epoch and MaxInt32 allocation", nil, nil,
			func() error {
				if _, err := gpu.ParseLockEpochs("a=18446744073709551615"); err != nil {
					return err
				}
				_, err := gpu.DecodeAllocations("g0,NVIDIA,2147483647,2147483647:;")
				return err
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := gpu.Decide(tc.in, tc.opts)
			if tc.kind == nil {
				if err != nil {
					t.Fatalf("legal input refused: %v", err)
				}
				if p.Reason.Code == "" || p.Reason.Message == "" {
					t.Fatalf("plan without a reason: %+v", p)
				}
				for _, n := range p.Nodes {
					if n.Reason.Code == "" || (!n.Fits && n.Reason.Code != gpu.ReasonNodeUnfit) {
						t.Errorf("node %s: reason %+v", n.Node, n.Reason)
					}
				}
				return
			}
			if !errors.Is(err, tc.kind) || !errors.Is(err, gpu.ErrInvalidInput) && tc.kind != gpu.ErrInvalidOptions {
				t.Fatalf("err = %v, want %v (and ErrInvalidInput)", err, tc.kind)
			}
			if diff := cmp.Diff(tc.fields, invalidFields(err)); diff != "" {
				t.Errorf("fields (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
	for _, tc := range decoders {
		t.Run(tc.name, func(t *testing.T) { checkInvalid(t, tc.call(), tc.kind, tc.fields) })
	}
}

// badQuantitiesPod has four malformed quantities in three containers: a
// negative core share in an init container, a fractional count and a
// negative memory in the second app container, and, in the third, an MLU
// memory request whose 256 MiB units overflow int32 MiB.
func badQuantitiesPod() *corev1.Pod {
	p := podWith([]corev1.Container{ctr("setup", rl("nvidia.com/gpu", "1", "nvidia.com/gpucores", "-5"))},
		[]corev1.Container{ctr("ok", rl("nvidia.com/gpu", "1")), ctr("bad", rl("nvidia.com/gpu", "1.5", "nvidia.com/gpumem", "-1")), ctr("mlu", nil)})
	p.Spec.Containers[2].Resources.Requests = rl("cambricon.com/vmlu", "1", "cambricon.com/mlu.smlu.vmemory", "10000000")
	return p
}

// checkInvalid asserts that err wraps kind and ErrInvalidInput and names
// exactly fields, each with its bad value; a nil kind asserts no error.
func checkInvalid(t *testing.T, err, kind error, fields []string) {
	t.Helper()
	if kind == nil {
		if err != nil {
			t.Fatalf("legal input refused: %v", err)
		}
		return
	}
	if !errors.Is(err, kind) || !errors.Is(err, gpu.ErrInvalidInput) {
		t.Fatalf("err = %v, want %v (and ErrInvalidInput)", err, kind)
	}
	if diff := cmp.Diff(fields, invalidFields(err)); diff != "" {
		t.Errorf("fields (-want +got):\n%s\nerror: %v", diff, err)
	}
	for _, e := range invalidErrors(err) {
		if e.Type != field.ErrorTypeRequired && e.BadValue == nil {
			t.Errorf("%s names no bad value: %v", e.Field, e)
		}
	}
}

// TestBadBindInput: StartBind names every missing field and the options'.
func TestBadBindInput(t *testing.T) {
	_, err := gpu.StartBind(gpu.BindInput{Options: gpu.Options{RetryJitter: 2}})
	want := []string{"pod.namespace", "pod.name", "node", "now", "options.retryJitter"}
	if !errors.Is(err, gpu.ErrInvalidBind) || !errors.Is(err, gpu.ErrInvalidInput) || !errors.Is(err, gpu.ErrInvalidOptions) || !cmp.Equal(invalidFields(err), want) {
		t.Errorf("StartBind(zero) = %v (fields %v), want %v", err, invalidFields(err), want)
	}
	if _, err := gpu.ApplyBind(context.Background(), gpu.BindInput{}, nil, gpu.StoreWaiter{}); !errors.Is(err, gpu.ErrNilExecutor) || !errors.Is(err, gpu.ErrInvalidInput) {
		t.Errorf("ApplyBind with a nil executor: %v", err)
	}
	var b gpu.Binder
	if _, err := b.Bind(context.Background(), gpu.BindInput{}); !errors.Is(err, gpu.ErrNilExecutor) {
		t.Errorf("zero Binder: %v", err)
	}
}

// TestAddUsageRefusesImpossibleAllocations is the crafted-annotation probe:
// two allocations of 2147483647 MiB used to wrap the device's used memory to
// -2, after which every fit on the node failed validation.
func TestAddUsageRefusesImpossibleAllocations(t *testing.T) {
	devs := []gpu.Device{card("g0", 0), card("g1", 1)}
	huge := gpu.Allocation{UUID: "g0", Type: "NVIDIA", MemoryMiB: math.MaxInt32, Cores: 10}
	_, err := gpu.AddUsage(devs, huge, huge)
	if !errors.Is(err, gpu.ErrInvalidDevice) || !cmp.Equal(invalidFields(err), []string{"allocs[0].memoryMiB", "allocs[1].memoryMiB"}) {
		t.Fatalf("AddUsage(MaxInt32 twice) = %v, want both allocations refused by path", err)
	}
	bad := []gpu.Allocation{
		{UUID: "nope", Type: "NVIDIA"},
		{UUID: "g1", Type: "AMD", MemoryMiB: -1, Cores: 101},
	}
	_, err = gpu.AddUsage(devs, bad...)
	if want := []string{"allocs[0].uuid", "allocs[1].type", "allocs[1].memoryMiB", "allocs[1].cores"}; !cmp.Equal(invalidFields(err), want) {
		t.Errorf("fields = %v, want %v (%v)", invalidFields(err), want, err)
	}
	// Dropping the pod that carries the lie keeps the node schedulable.
	out, err := gpu.AddUsage(devs, gpu.Allocation{UUID: "g0", Type: "NVIDIA", MemoryMiB: 8000, Cores: 100})
	if err != nil {
		t.Fatal(err)
	}
	p, err := fit([]gpu.Node{{Name: "n", Devices: out}}, gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 10)}})
	if err != nil || p.Node != "n" {
		t.Fatalf("fit after a legal full allocation = %v, %v", p, err)
	}
}

var extremeInt32 = []int32{0, -1, 1, 100, 8000, math.MaxInt32, math.MinInt32, math.MaxInt32 - 1}

// TestPropertyUsageNeverWraps: over extreme allocations AddUsage either
// refuses naming the allocation or returns usage that is never negative and
// never below what it was; Decide then either plans or refuses by field path,
// never panics. Removing addSat32 (a plain +=) with the capacity check also
// removed makes it fail at once: two MaxInt32 allocations give -2.
func TestPropertyUsageNeverWraps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := card("g0", 0)
		d.MemoryMiB = rapid.SampledFrom([]int32{0, 1, 8000, math.MaxInt32}).Draw(t, "capacity")
		d.Cores = rapid.SampledFrom([]int32{0, 100, math.MaxInt32}).Draw(t, "cores")
		d.Used = rapid.SampledFrom([]int32{0, 1, math.MaxInt32}).Draw(t, "used")
		d.UsedMemoryMiB = rapid.SampledFrom([]int32{0, d.MemoryMiB}).Draw(t, "usedMem")
		n := rapid.IntRange(0, 4).Draw(t, "n")
		allocs := make([]gpu.Allocation, n)
		for i := range allocs {
			allocs[i] = gpu.Allocation{UUID: "g0", Type: "NVIDIA",
				MemoryMiB: rapid.SampledFrom(extremeInt32).Draw(t, "mem"),
				Cores:     rapid.SampledFrom(extremeInt32).Draw(t, "allocCores")}
		}
		out, err := gpu.AddUsage([]gpu.Device{d}, allocs...)
		if err != nil {
			if !errors.Is(err, gpu.ErrInvalidDevice) || len(invalidFields(err)) == 0 {
				t.Fatalf("refusal %v names no field", err)
			}
			for _, a := range allocs {
				if a.MemoryMiB < 0 || a.MemoryMiB > d.MemoryMiB || a.Cores < 0 || a.Cores > d.Cores {
					return
				}
			}
			t.Fatalf("legal allocations %v refused: %v", allocs, err)
		}
		u := out[0]
		if u.Used < d.Used || u.UsedMemoryMiB < d.UsedMemoryMiB || u.UsedCores < d.UsedCores {
			t.Fatalf("usage went down or wrapped: %+v from %+v with %v", u, d, allocs)
		}
		p, err := fit([]gpu.Node{{Name: "n", Devices: out}}, gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1,
			rapid.SampledFrom(extremeInt32[:6]).Draw(t, "askMem"), rapid.SampledFrom([]int32{0, 1, 100, math.MaxInt32}).Draw(t, "askCores"))}})
		if err != nil {
			if !errors.Is(err, gpu.ErrInvalidInput) || len(invalidFields(err)) == 0 {
				t.Fatalf("fit refused without a field: %v", err)
			}
			return
		}
		if p.Node == "" && p.Reason.Code != gpu.ReasonNoNodeFits {
			t.Fatalf("no node chosen but reason %+v", p.Reason)
		}
	})
}

// TestZeroValues: the exported shell types' zero values are usable or say
// they are not: a zero StoreWaiter reads the real clock and sleeps on real
// timers, a zero NodeQueue queues, a zero Binder returns ErrNilExecutor (see
// TestBadBindInput), a StoreWaiter on a fake clock sleeps until it moves.
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	var w gpu.StoreWaiter
	if w.Now().IsZero() || w.Changes("n", "l") != nil {
		t.Error("zero StoreWaiter")
	}
	if woken, err := w.Sleep(ctx, time.Millisecond, nil); woken || err != nil {
		t.Errorf("zero StoreWaiter Sleep = %v, %v", woken, err)
	}
	var q gpu.NodeQueue
	leave, err := q.Enter(ctx, "n")
	if err != nil || q.Len("n") != 1 {
		t.Fatalf("zero NodeQueue: %v, len %d", err, q.Len("n"))
	}
	leave()
	clk := fake.NewClock(time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC))
	fw := gpu.StoreWaiter{Clock: clk}
	done := make(chan bool)
	go func() {
		woken, _ := fw.Sleep(ctx, time.Second, nil)
		done <- woken
	}()
	for clk.Waiters() == 0 {
		time.Sleep(time.Millisecond) // until the sleeper is parked on the fake clock
	}
	clk.Advance(time.Second)
	if woken := <-done; woken {
		t.Error("a timeout reported as a wake-up")
	}
}

// TestHAMiPreset: gpu.HAMi() is valid and restores HAMi's retry: only gang
// pods retry, at a fixed interval, polling.
func TestHAMiPreset(t *testing.T) {
	o := gpu.HAMi()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if !o.RetryPodGroupOnly || o.FixedInterval != 100*time.Millisecond {
		t.Errorf("HAMi() = %+v", o)
	}
	for attempt := range 5 {
		if d, ok := gpu.NextRetry(attempt, time.Second, o, 0.9); !ok || d != 100*time.Millisecond {
			t.Errorf("retry %d = %v, %v: want HAMi's fixed 100ms", attempt, d, ok)
		}
	}
}

// TestPropertyQuantitiesNamedOrExact: over extreme quantities (0, ±1,
// MaxInt32, MaxInt32+1, MaxInt64, MinInt64, fractions) in init and app
// containers, DetectRequests either returns exactly the asked counts, in pod
// order, or refuses naming every bad quantity by its path with its value;
// never a panic, never a wrapped count. Making quantityReader keep only its
// first problem, or dropping its MaxInt32 check, makes it fail.
func TestPropertyQuantitiesNamedOrExact(t *testing.T) {
	extremes := []string{"0", "1", "-1", "2147483647", "2147483648", "9223372036854775807", "-9223372036854775808", "1.5", "2000m", "1e30"}
	legal := map[string]int32{"0": 0, "1": 1, "2147483647": math.MaxInt32, "2000m": 2}
	rapid.Check(t, func(t *rapid.T) {
		type slot struct{ count, cores string }
		lists := map[string][]slot{}
		for range rapid.IntRange(1, 4).Draw(t, "containers") {
			list := rapid.SampledFrom([]string{"initContainers", "containers"}).Draw(t, "list")
			lists[list] = append(lists[list], slot{rapid.SampledFrom(extremes).Draw(t, "count"), rapid.SampledFrom(extremes).Draw(t, "cores")})
		}
		pod := podWith(nil, nil)
		var wantFields []string
		var wantNums []int32
		for _, list := range []string{"initContainers", "containers"} {
			for i, sl := range lists[list] {
				c := ctr("c", rl("nvidia.com/gpu", sl.count, "nvidia.com/gpucores", sl.cores))
				if list == "initContainers" {
					pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
				} else {
					pod.Spec.Containers = append(pod.Spec.Containers, c)
				}
				n, countOK := legal[sl.count]
				_, coresOK := legal[sl.cores]
				p := fmt.Sprintf("spec.%s[%d].resources.limits", list, i)
				if !countOK {
					wantFields = append(wantFields, p+"[nvidia.com/gpu]")
				}
				if !coresOK {
					wantFields = append(wantFields, p+"[nvidia.com/gpucores]")
				}
				if countOK && coresOK && n > 0 {
					wantNums = append(wantNums, n)
				}
			}
		}
		reqs, err := gpu.DetectRequests(pod, gpu.DefaultRegistry())
		if len(wantFields) > 0 {
			if !errors.Is(err, gpu.ErrInvalidRequest) || !cmp.Equal(invalidFields(err), wantFields) {
				t.Fatalf("err = %v, want fields %v", err, wantFields)
			}
			for _, e := range invalidErrors(err) {
				if e.BadValue == nil || e.BadValue == "" {
					t.Fatalf("%s names no value", e.Field)
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("legal quantities refused: %v", err)
		}
		var got []int32
		for _, r := range reqs {
			got = append(got, r.Nums)
		}
		if !cmp.Equal(got, wantNums) {
			t.Fatalf("counts %v, want %v", got, wantNums)
		}
	})
}

// TestDecideOneInvalidError: options, request and nodes all wrong at once
// are one *plancore.InvalidError whose one list names every field, and
// which is each kind (errors.As sees every field, not the first part's).
func TestDecideOneInvalidError(t *testing.T) {
	in := gpu.Input{
		Nodes:   []gpu.Node{{Name: ""}},
		Request: gpu.FitRequest{NodePolicy: "closest"},
	}
	_, err := gpu.Decide(in, gpu.Options{RetryJitter: 2})
	var inv *plancore.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Decide = %v, want a *plancore.InvalidError", err)
	}
	want := []string{"request.nodePolicy", "nodes[0].name", "options.retryJitter"}
	if diff := cmp.Diff(want, inv.Fields()); diff != "" {
		t.Errorf("errors.As finds fields (-want +got):\n%s", diff)
	}
	for _, kind := range []error{gpu.ErrInvalidRequest, gpu.ErrInvalidDevice, gpu.ErrInvalidInput, gpu.ErrInvalidOptions} {
		if !errors.Is(err, kind) {
			t.Errorf("errors.Is(%v, %v) = false", err, kind)
		}
	}
}

// TestApplyBindRefusesAnotherClock: ApplyBind reads the time from its
// Waiter; a BindInput.Now from another clock is refused by name instead of
// being silently replaced.
func TestApplyBindRefusesAnotherClock(t *testing.T) {
	ex := &recordingExec{pod: gpuPod("nvidia.com/gpu", "1")}
	wt := &cancelWaiter{cancel: func() {}, now: tBind}
	in := bindInput(gpu.Options{})
	in.Now = tBind.Add(-time.Hour)
	_, err := gpu.ApplyBind(context.Background(), in, ex, wt)
	var inv *plancore.InvalidError
	if !errors.Is(err, gpu.ErrInvalidInput) || !errors.As(err, &inv) || inv.Fields()[0] != "now" || len(ex.calls) != 0 {
		t.Fatalf("ApplyBind with another clock's Now: %v (calls %v)", err, ex.calls)
	}
}
