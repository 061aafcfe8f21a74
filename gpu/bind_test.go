package gpu_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/gpu"
)

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
		case gpu.ActionGetPod:
			r.Pod = s.pod
		case gpu.ActionLock:
			s.epoch++
			r.Epoch = s.epoch
		case gpu.ActionWait:
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
	if st.Next().Kind != gpu.ActionDone {
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
		if a.Kind != gpu.ActionGetPod && a.Kind != gpu.ActionForgetAssumed {
			podKnown = true
		}
		switch a.Kind {
		case gpu.ActionGetPod, gpu.ActionForgetAssumed:
		case gpu.ActionLock:
			// A Lock that failed other than by contention may have written.
			if s.Result.Err == nil || !s.Result.Contention {
				held = append(held, a.Lock)
			}
		case gpu.ActionRelease:
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
		case gpu.ActionPatchPod:
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
		if s.Action.Kind == gpu.ActionPatchPod {
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
