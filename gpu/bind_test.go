package gpu_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/gpu"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var (
	tBind         = time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)
	errContention = errors.New("node lock contention")
	errAPI        = errors.New("apiserver unavailable")
	errTimeout    = errors.New("context deadline exceeded")
)

// scripted is a test executor for the pure state machine: every action
// succeeds unless the script says otherwise, each action takes step of
// simulated time, and a Wait takes its whole duration unless wakeAfter cuts it.
type scripted struct {
	now       time.Time
	step      time.Duration
	pod       *corev1.Pod
	results   map[string][]gpu.Result // "<Kind> <Lock> <Reason code>" -> results, consumed in order
	always    map[string]gpu.Result   // "<Kind> <Lock> <Reason code>" -> result for every call
	wakeAfter time.Duration
	epoch     uint64
}

func key(a gpu.Action) string { return string(a.Kind) + " " + a.Lock + " " + string(a.Reason.Code) }

func (s *scripted) do(a gpu.Action) gpu.Result {
	s.now = s.now.Add(s.step)
	k := key(a)
	var r gpu.Result
	if q := s.results[k]; len(q) > 0 {
		r, s.results[k] = q[0], q[1:]
	} else if ar, ok := s.always[k]; ok {
		r = ar
	} else {
		switch a.Kind {
		case gpu.ActGetPod:
			r.Pod = s.pod
		case gpu.ActLock:
			s.epoch++
			r.Epoch = s.epoch
		case gpu.ActWait:
			d := a.Wait
			if s.wakeAfter > 0 && s.wakeAfter < d {
				d, r.Woken = s.wakeAfter, true
			}
			s.now = s.now.Add(d)
		}
	}
	r.Now = s.now
	return r
}

// fataler is the part of testing.TB and rapid.T that drive needs.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// drive runs the state machine to completion against the script.
func drive(t fataler, in gpu.BindInput, s *scripted) ([]transcriptStep, gpu.Outcome) {
	t.Helper()
	st, err := gpu.StartBind(in)
	if err != nil {
		t.Fatal(err)
	}
	s.now = in.Now
	var steps []transcriptStep
	for i := 0; !st.Done(); i++ {
		if i > 10000 {
			t.Fatal("Bind did not finish in 10000 steps")
		}
		a := st.Next()
		r := s.do(a)
		steps = append(steps, transcriptStep{At: r.Now.Sub(in.Now).String(), Action: a, Result: r})
		if st, err = gpu.StepBind(st, r); err != nil {
			t.Fatal(err)
		}
	}
	if st.Next().Kind != gpu.ActDone {
		t.Fatalf("finished state's next action is %v", st.Next())
	}
	return steps, st.Outcome()
}

func gpuPod(limits ...string) *corev1.Pod {
	p := podWith(nil, []corev1.Container{ctr("main", rl(limits...))})
	p.Spec.NodeName = ""
	return p
}

func bindInput(opts gpu.Options) gpu.BindInput {
	return gpu.BindInput{Pod: gpu.PodRef{Namespace: "default", Name: "p", UID: "uid-p"}, Node: "n1", Now: tBind,
		Registry: gpu.DefaultRegistry(), Options: opts, Seed: 1}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("transcript differs from %s (-want +got):\n%s", path, diff)
	}
}

// kinds lists "<Kind> <Lock> (<Reason code>)" of every step, the shape the table checks.
func kinds(steps []transcriptStep) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = strings.TrimSpace(string(s.Action.Kind)+" "+s.Action.Lock) + " (" + string(s.Action.Reason.Code) + ")"
	}
	return out
}

const (
	mutex = gpu.LockNvidia
	mlu   = gpu.LockCambricon
)

func TestBindFlow(t *testing.T) {
	nvidiaAndMLU := gpuPod("nvidia.com/gpu", "1", "cambricon.com/vmlu", "1")
	contended := gpu.Result{Err: errContention, Contention: true}
	cases := []struct {
		name      string
		pod       *corev1.Pod
		opts      gpu.Options
		results   map[string][]gpu.Result
		always    map[string]gpu.Result
		wakeAfter time.Duration
		want      []string
		bound     bool
		released  []string
		errIs     error
		errHas    string
	}{
		{
			name:  "success keeps the lock for the allocator",
			pod:   gpuPod("nvidia.com/gpu", "1"),
			want:  []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkAllocating)", "Bind (Bind)", "Event (Report)"},
			bound: true,
		},
		{
			name:  "no lockable device binds without locks",
			pod:   gpuPod("mthreads.com/vgpu", "1"),
			want:  []string{"GetPod (Read)", "GetNode (Read)", "PatchPod (MarkAllocating)", "Bind (Bind)", "Event (Report)"},
			bound: true,
		},
		{
			name:  "mixed vendors lock in ascending name order",
			pod:   nvidiaAndMLU,
			want:  []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mlu + " (Acquire)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkAllocating)", "Bind (Bind)", "Event (Report)"},
			bound: true,
		},
		{
			name:    "pod missing: forget and return a Go error",
			pod:     gpuPod("nvidia.com/gpu", "1"),
			results: map[string][]gpu.Result{"GetPod  Read": {{Err: errAPI}}},
			want:    []string{"GetPod (Read)", "ForgetAssumed (Forget)"},
			errIs:   errAPI,
		},
		{
			name:    "node missing: failure path without locks",
			pod:     gpuPod("nvidia.com/gpu", "1"),
			results: map[string][]gpu.Result{"GetNode  Read": {{Err: errAPI}}},
			want:    []string{"GetPod (Read)", "GetNode (Read)", "PatchPod (MarkFailed)", "Event (Report)", "ForgetAssumed (Forget)"},
			errIs:   errAPI,
		},
		{
			name:     "second lock fails: release both, the failed one first",
			pod:      nvidiaAndMLU,
			results:  map[string][]gpu.Result{"Lock " + mutex + " Acquire": {{Err: errAPI}}},
			want:     []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mlu + " (Acquire)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkFailed)", "Release " + mutex + " (FailureRollback)", "Release " + mlu + " (FailureRollback)", "Event (Report)", "ForgetAssumed (Forget)"},
			released: []string{mutex, mlu},
			errIs:    errAPI,
		},
		{
			name:     "first lock fails: release it in case the write took effect",
			pod:      nvidiaAndMLU,
			results:  map[string][]gpu.Result{"Lock " + mlu + " Acquire": {{Err: errAPI}}},
			want:     []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mlu + " (Acquire)", "PatchPod (MarkFailed)", "Release " + mlu + " (FailureRollback)", "Event (Report)", "ForgetAssumed (Forget)"},
			errIs:    errAPI,
			released: []string{mlu},
		},
		{
			name:     "patch fails: release both in reverse",
			pod:      nvidiaAndMLU,
			results:  map[string][]gpu.Result{"PatchPod  MarkAllocating": {{Err: errAPI}}},
			want:     []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mlu + " (Acquire)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkAllocating)", "PatchPod (MarkFailed)", "Release " + mutex + " (FailureRollback)", "Release " + mlu + " (FailureRollback)", "Event (Report)", "ForgetAssumed (Forget)"},
			released: []string{mutex, mlu},
			errIs:    errAPI,
		},
		{
			name:     "bind fails: release both in reverse",
			pod:      nvidiaAndMLU,
			results:  map[string][]gpu.Result{"Bind  Bind": {{Err: errAPI}}},
			want:     []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mlu + " (Acquire)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkAllocating)", "Bind (Bind)", "PatchPod (MarkFailed)", "Release " + mutex + " (FailureRollback)", "Release " + mlu + " (FailureRollback)", "Event (Report)", "ForgetAssumed (Forget)"},
			released: []string{mutex, mlu},
			errIs:    errAPI,
		},
		{
			name: "failed mark and failed release still release everything and report the original error",
			pod:  nvidiaAndMLU,
			results: map[string][]gpu.Result{
				"Bind  Bind":                            {{Err: errAPI}},
				"PatchPod  MarkFailed":                  {{Err: errors.New("patch refused")}},
				"Release " + mutex + " FailureRollback": {{Err: errors.New("release refused")}},
			},
			want:     []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mlu + " (Acquire)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkAllocating)", "Bind (Bind)", "PatchPod (MarkFailed)", "Release " + mutex + " (FailureRollback)", "Release " + mlu + " (FailureRollback)", "Event (Report)", "ForgetAssumed (Forget)"},
			released: []string{mutex, mlu},
			errIs:    errAPI,
			errHas:   "also failed to mark hami.io/bind-phase=failed: patch refused",
		},
		{
			name:    "unknown bind outcome, pod found bound: success",
			pod:     gpuPod("nvidia.com/gpu", "1"),
			results: map[string][]gpu.Result{"Bind  Bind": {{Err: errTimeout, OutcomeUnknown: true}}, "GetPod  RereadAfterUnknown": {{Pod: boundPod("n1")}}},
			want:    []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkAllocating)", "Bind (Bind)", "GetPod (RereadAfterUnknown)", "Event (Report)"},
			bound:   true,
		},
		{
			name:     "unknown bind outcome, pod unbound: failure path",
			pod:      gpuPod("nvidia.com/gpu", "1"),
			results:  map[string][]gpu.Result{"Bind  Bind": {{Err: errTimeout, OutcomeUnknown: true}}, "GetPod  RereadAfterUnknown": {{Pod: boundPod("")}}},
			want:     []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkAllocating)", "Bind (Bind)", "GetPod (RereadAfterUnknown)", "PatchPod (MarkFailed)", "Release " + mutex + " (FailureRollback)", "Event (Report)", "ForgetAssumed (Forget)"},
			released: []string{mutex},
			errIs:    errTimeout,
		},
		{
			name:    "unknown bind outcome, re-read fails: keep the locks and Report",
			pod:     gpuPod("nvidia.com/gpu", "1"),
			results: map[string][]gpu.Result{"Bind  Bind": {{Err: errTimeout, OutcomeUnknown: true}}, "GetPod  RereadAfterUnknown": {{Err: errAPI}}},
			want:    []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkAllocating)", "Bind (Bind)", "GetPod (RereadAfterUnknown)", "Event (Report)"},
			errIs:   errTimeout,
			errHas:  "re-reading the pod failed: apiserver unavailable",
		},
		{
			name:      "contention: rollback, woken retry",
			pod:       nvidiaAndMLU,
			results:   map[string][]gpu.Result{"Lock " + mutex + " Acquire": {contended}},
			wakeAfter: 30 * time.Millisecond,
			want:      []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mlu + " (Acquire)", "Lock " + mutex + " (Acquire)", "Release " + mlu + " (RetryRollback)", "Wait (Backoff)", "Lock " + mlu + " (Acquire)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkAllocating)", "Bind (Bind)", "Event (Report)"},
			bound:     true,
		},
		{
			name:     "contention past the deadline",
			pod:      nvidiaAndMLU,
			opts:     gpu.Options{RetryDeadline: 2 * time.Second, ExtenderHTTPTimeout: 3 * time.Second},
			always:   map[string]gpu.Result{"Lock " + mutex + " Acquire": contended},
			released: []string{mlu},
			errIs:    errContention,
			errHas:   "still contended after 2s and 6 attempts",
		},
		{
			name:     "RetryPodGroupOnly: a lone pod fails at once",
			pod:      gpuPod("nvidia.com/gpu", "1"),
			opts:     gpu.Options{RetryPodGroupOnly: true},
			results:  map[string][]gpu.Result{"Lock " + mutex + " Acquire": {contended}},
			want:     []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkFailed)", "Event (Report)", "ForgetAssumed (Forget)"},
			errIs:    errContention,
			errHas:   "no retry: not a pod-group member",
			released: nil,
		},
		{
			name: "RetryPodGroupOnly: a gang pod retries",
			pod: func() *corev1.Pod {
				p := gpuPod("nvidia.com/gpu", "1")
				p.Labels = map[string]string{gpu.LabelPodGroup: "g1"}
				return p
			}(),
			opts:    gpu.Options{RetryPodGroupOnly: true},
			results: map[string][]gpu.Result{"Lock " + mutex + " Acquire": {contended}},
			want:    []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mutex + " (Acquire)", "Wait (Backoff)", "Lock " + mutex + " (Acquire)", "PatchPod (MarkAllocating)", "Bind (Bind)", "Event (Report)"},
			bound:   true,
		},
		{
			name: "rollback release fails: failure path releases what is left",
			pod:  nvidiaAndMLU,
			results: map[string][]gpu.Result{
				"Lock " + mutex + " Acquire":        {contended},
				"Release " + mlu + " RetryRollback": {{Err: errAPI}},
			},
			want:     []string{"GetPod (Read)", "GetNode (Read)", "Lock " + mlu + " (Acquire)", "Lock " + mutex + " (Acquire)", "Release " + mlu + " (RetryRollback)", "PatchPod (MarkFailed)", "Release " + mlu + " (FailureRollback)", "Event (Report)", "ForgetAssumed (Forget)"},
			released: []string{mlu},
			errIs:    errAPI,
		},
		{
			name:   "malformed quantity: failure path with a clear error",
			pod:    gpuPod("nvidia.com/gpu", "1.5"),
			want:   []string{"GetPod (Read)", "PatchPod (MarkFailed)", "Event (Report)", "ForgetAssumed (Forget)"},
			errIs:  gpu.ErrInvalidRequest,
			errHas: `pod default/p: gpu: invalid device request: spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "1500m"`,
		},
		{
			name:    "replaced pod (UID differs): like a missing pod",
			pod:     gpuPod("nvidia.com/gpu", "1"),
			results: map[string][]gpu.Result{"GetPod  Read": {{Pod: func() *corev1.Pod { p := gpuPod("nvidia.com/gpu", "1"); p.UID = "other"; return p }()}}},
			want:    []string{"GetPod (Read)", "ForgetAssumed (Forget)"},
			errHas:  "the pod was replaced",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := &scripted{step: time.Millisecond, pod: tc.pod, results: tc.results, always: tc.always, wakeAfter: tc.wakeAfter}
			steps, out := drive(t, bindInput(tc.opts), sc)
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, kinds(steps)); diff != "" {
					t.Errorf("actions (-want +got):\n%s", diff)
				}
			}
			if out.Bound != tc.bound {
				t.Errorf("bound = %v, want %v (%v)", out.Bound, tc.bound, out)
			}
			if diff := cmp.Diff(tc.released, out.Released); diff != "" {
				t.Errorf("released (-want +got):\n%s", diff)
			}
			if tc.errIs != nil && !errors.Is(out.Err, tc.errIs) {
				t.Errorf("err = %v, want it to wrap %v", out.Err, tc.errIs)
			}
			if tc.errHas != "" && !strings.Contains(out.ExtenderError(), tc.errHas) {
				t.Errorf("error %q does not mention %q", out.ExtenderError(), tc.errHas)
			}
			if tc.bound != (out.Err == nil) {
				t.Errorf("bound=%v but err=%v", tc.bound, out.Err)
			}
			checkBindContract(t, steps, out)
			golden(t, "bind/"+fileName(tc.name), FormatTranscriptWithOutcome(steps, out))
		})
	}
}

// fileName keeps letters and digits of a case name and joins the rest with "-".
func fileName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

func boundPod(node string) *corev1.Pod {
	p := gpuPod("nvidia.com/gpu", "1")
	p.Spec.NodeName = node
	return p
}

// FormatTranscriptWithOutcome is the golden file body.
func FormatTranscriptWithOutcome(steps []transcriptStep, out gpu.Outcome) string {
	return formatTranscript(steps) + "=> " + out.String() + "\n"
}

// checkBindContract checks that locks are taken in ascending order and a
// failure releases exactly what it took, in reverse, on one transcript.
func checkBindContract(t fataler, steps []transcriptStep, out gpu.Outcome) {
	t.Helper()
	var held []string // locks held right now, in acquisition order
	var failureReleases []string
	markedFailed, failedWriteErr, markedAllocating := false, false, false
	podKnown := false
	for _, s := range steps {
		a := s.Action
		if a.Kind != gpu.ActGetPod && a.Kind != gpu.ActForgetAssumed {
			podKnown = true
		}
		switch a.Kind {
		case gpu.ActGetPod, gpu.ActForgetAssumed:
		case gpu.ActLock:
			// A Lock that failed other than by contention may have written.
			if s.Result.Err == nil || !s.Result.Contention {
				held = append(held, a.Lock)
			}
		case gpu.ActRelease:
			if len(held) == 0 || held[len(held)-1] != a.Lock {
				t.Fatalf("released %s while holding %v: not the last lock taken", a.Lock, held)
			}
			if a.Reason.Code == gpu.ReasonRetryRollback && s.Result.Err != nil {
				continue // still held; the failure path must release it
			}
			held = held[:len(held)-1]
			if a.Reason.Code == gpu.ReasonFailureRollback {
				failureReleases = append(failureReleases, a.Lock)
			}
		case gpu.ActPatchPod:
			switch a.Annotations[gpu.AnnoBindPhase] {
			case gpu.PhaseFailed:
				markedFailed = true
				failedWriteErr = s.Result.Err != nil
				if len(failureReleases) > 0 {
					t.Fatal("bind-phase=failed written after a failure release")
				}
			case gpu.PhaseAllocating:
				markedAllocating = s.Result.Err == nil
			}
		}
	}
	switch {
	case out.Bound:
		if len(failureReleases) > 0 || !markedAllocating || markedFailed {
			t.Fatalf("successful bind: releases %v, allocating=%v, failed=%v", failureReleases, markedAllocating, markedFailed)
		}
		if diff := cmp.Diff(held, heldNames(out.Held)); diff != "" {
			t.Fatalf("successful bind must keep exactly the locks it holds (-held +reported):\n%s", diff)
		}
	case out.Unknown:
		// Unknown outcome: locks kept on purpose, to expire by TTL.
	case podKnown:
		if !markedFailed {
			t.Fatal("failed bind after the pod was known did not write bind-phase=failed")
		}
		if failedWriteErr != (out.PhaseErr != nil) {
			t.Fatalf("failed write error %v not reported", out.PhaseErr)
		}
		if len(held) != 0 {
			t.Fatalf("failed bind still holds %v", held)
		}
	}
}

func heldNames(h []gpu.HeldLock) []string {
	var out []string
	for _, l := range h {
		out = append(out, l.Name)
	}
	return out
}

func TestBindPatchCarriesTimeAndEpochs(t *testing.T) {
	sc := &scripted{step: time.Millisecond, pod: gpuPod("nvidia.com/gpu", "1", "cambricon.com/vmlu", "1"), epoch: 6}
	steps, out := drive(t, bindInput(gpu.Options{}), sc)
	var patch map[string]string
	for _, s := range steps {
		if s.Action.Kind == gpu.ActPatchPod {
			patch = s.Action.Annotations
		}
	}
	want := map[string]string{
		gpu.AnnoBindPhase: gpu.PhaseAllocating,
		gpu.AnnoBindTime:  "1781431200",
		gpu.AnnoLockEpoch: "cambricon.com/dsmlu.lock=7;hami.io/mutex.lock=8",
	}
	if diff := cmp.Diff(want, patch); diff != "" {
		t.Fatalf("patch (-want +got):\n%s", diff)
	}
	parsed, err := gpu.ParseLockEpochs(patch[gpu.AnnoLockEpoch])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out.Held, parsed); diff != "" {
		t.Fatalf("epochs (-held +parsed):\n%s", diff)
	}
	for _, bad := range []string{"x", "=1", "a=0", "a=-1", "a=1;b"} {
		if _, err := gpu.ParseLockEpochs(bad); !errors.Is(err, gpu.ErrInvalidBind) {
			t.Errorf("ParseLockEpochs(%q) err = %v", bad, err)
		}
	}
}

func TestStartBindRejectsBadInput(t *testing.T) {
	good := bindInput(gpu.Options{})
	for name, mut := range map[string]func(*gpu.BindInput){
		"no namespace": func(in *gpu.BindInput) { in.Pod.Namespace = "" },
		"no node":      func(in *gpu.BindInput) { in.Node = "" },
		"no time":      func(in *gpu.BindInput) { in.Now = time.Time{} },
		"deadline":     func(in *gpu.BindInput) { in.Options.RetryDeadline = 31 * time.Second },
	} {
		in := good
		mut(&in)
		if _, err := gpu.StartBind(in); !errors.Is(err, gpu.ErrInvalidBind) && !errors.Is(err, gpu.ErrInvalidOptions) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	st, err := gpu.StartBind(good)
	if err != nil {
		t.Fatal(err)
	}
	sc := &scripted{pod: gpuPod("nvidia.com/gpu", "1")}
	for !st.Done() {
		st, _ = gpu.StepBind(st, sc.do(st.Next()))
	}
	if _, err := gpu.StepBind(st, gpu.Result{}); !errors.Is(err, gpu.ErrInvalidBind) {
		t.Fatalf("step after done: err = %v", err)
	}
}

func FuzzParseLockEpochs(f *testing.F) {
	for _, s := range []string{"", "hami.io/mutex.lock=7", "a=1;b=2", "=", "a=0", "a=18446744073709551615", ";;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		held, err := gpu.ParseLockEpochs(s)
		if err != nil {
			if !errors.Is(err, gpu.ErrInvalidBind) || !errors.Is(err, gpu.ErrInvalidInput) || len(invalidFields(err)) == 0 {
				t.Fatalf("error does not wrap ErrInvalidBind or names no field: %v", err)
			}
			return
		}
		again, err := gpu.ParseLockEpochs(gpu.FormatLockEpochs(held))
		if err != nil {
			t.Fatalf("%q parsed, but its rendering does not: %v", s, err)
		}
		if diff := cmp.Diff(held, again); diff != "" {
			t.Fatalf("round trip of %q (-first +second):\n%s", s, diff)
		}
	})
}
