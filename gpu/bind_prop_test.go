package gpu_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/gpu"
)

// genPod draws a pod whose containers request a random mix of default types,
// sometimes in init containers, sometimes malformed.
func genPod(t *rapid.T) *corev1.Pod {
	var types []gpu.DeviceType
	for _, name := range []string{"NVIDIA", "MLU", "X1", "X2", "X3", "Mthreads", "AMD"} {
		typ, _ := propRegistry.Lookup(name)
		types = append(types, typ)
	}
	container := func(label string) corev1.Container {
		var kv []string
		for _, typ := range types {
			if rapid.IntRange(0, 9).Draw(t, label+"-"+typ.Type) < 3 {
				kv = append(kv, string(typ.Count), rapid.SampledFrom([]string{"1", "2", "0"}).Draw(t, label+"-n"))
			}
		}
		if rapid.IntRange(0, 29).Draw(t, label+"-bad") == 29 {
			kv = append(kv, "nvidia.com/gpumem", "-1")
		}
		return ctr(label, rl(kv...))
	}
	var init, app []corev1.Container
	for i := range rapid.IntRange(0, 2).Draw(t, "inits") {
		init = append(init, container(fmt.Sprintf("i%d", i)))
	}
	for i := range rapid.IntRange(1, 2).Draw(t, "apps") {
		app = append(app, container(fmt.Sprintf("a%d", i)))
	}
	p := podWith(init, app)
	if rapid.Bool().Draw(t, "gang") {
		p.Labels = map[string]string{gpu.LabelPodGroup: "g"}
	}
	return p
}

// propRegistry adds three vendors with locks of their own to the default
// registry, so random pods often need several locks.
var propRegistry = func() gpu.Registry {
	r, err := gpu.DefaultRegistry().With(
		gpu.DeviceType{Type: "X1", Count: "x1.io/dev", LockName: "x1.io/lock"},
		gpu.DeviceType{Type: "X2", Count: "x2.io/dev", LockName: "x2.io/lock"},
		gpu.DeviceType{Type: "X3", Count: "x3.io/dev", LockName: "x3.io/lock"},
	)
	if err != nil {
		panic(err)
	}
	return r
}()

// randomExecutor answers each action with a random outcome.
// Its draws come from a PCG seeded by rapid: rapid's own draws lean towards
// boundary values, which would make nearly every lock contend and hide
// failures with several locks held.
type randomExecutor struct {
	rnd *rand.Rand
	now time.Time
	pod *corev1.Pod
	ep  uint64
}

func (e *randomExecutor) do(a gpu.Action) gpu.Result {
	e.now = e.now.Add(time.Duration(e.rnd.IntN(6)) * time.Millisecond)
	fail := func(p float64) bool { return e.rnd.Float64() < p }
	var r gpu.Result
	switch a.Kind {
	case gpu.ActionGetPod:
		if fail(0.05) {
			r.Err = errAPI
			break
		}
		p := e.pod.DeepCopy()
		if a.Reason.Code == gpu.ReasonRereadAfterUnknown && e.rnd.IntN(2) == 0 {
			p.Spec.NodeName = a.Node
		}
		r.Pod = p
	case gpu.ActionLock:
		switch {
		case fail(0.3):
			r.Err, r.Contention = errContention, true
		case fail(0.05):
			r.Err = errAPI
		default:
			e.ep++
			r.Epoch = e.ep
		}
	case gpu.ActionWait:
		d := a.Wait
		if e.rnd.IntN(2) == 0 {
			d = time.Duration(e.rnd.Int64N(int64(d) + 1))
			r.Woken = true
		}
		e.now = e.now.Add(d)
	case gpu.ActionBind:
		if fail(0.15) {
			r.Err, r.OutcomeUnknown = errTimeout, e.rnd.IntN(2) == 0
		}
	default:
		if fail(0.1) {
			r.Err = errAPI
		}
	}
	r.Now = e.now
	return r
}

// TestPropBindContract drives the state machine against random outcomes and
// checks the Bind invariants (locks in ascending order, a failure releases
// exactly what it took in reverse, bind-phase=failed before any release) on
// every transcript.
func TestPropBindContract(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pod := genPod(t)
		in := gpu.BindInput{Pod: gpu.PodRef{Namespace: "default", Name: "p", UID: "uid-p"}, Node: "n1", Now: tBind,
			Registry: propRegistry, Seed: rapid.Uint64().Draw(t, "seed"),
			Options: gpu.Options{RetryDeadline: time.Duration(rapid.IntRange(1, 3000).Draw(t, "deadline-ms")) * time.Millisecond}}
		st, err := gpu.StartBind(in)
		if err != nil {
			t.Fatal(err)
		}
		seed := rapid.Uint64().Draw(t, "executor-seed")
		ex := &randomExecutor{rnd: rand.New(rand.NewPCG(seed, seed>>1)), now: tBind, pod: pod}
		var steps []transcriptStep
		for !st.Done() {
			a := st.Next()
			r := ex.do(a)
			steps = append(steps, transcriptStep{Action: a, Result: r})
			before := st
			next, err := gpu.StepBind(st, r)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before.Next(), st.Next()); diff != "" {
				t.Fatalf("StepBind modified its input state:\n%s", diff)
			}
			st = next
			if len(steps) > 5000 {
				t.Fatal("no progress")
			}
		}
		out := st.Outcome()
		checkBindContract(t, steps, out)

		// Locks are taken in RequiredLocks order, each once per attempt, and
		// never past the retry deadline.
		locks, lockErr := gpu.RequiredLocks(pod, propRegistry)
		if !slices.IsSorted(locks) || len(slices.Compact(slices.Clone(locks))) != len(locks) {
			t.Fatalf("RequiredLocks %v is not sorted and unique", locks)
		}
		var attempt []string
		for _, s := range steps {
			switch s.Action.Kind {
			case gpu.ActionLock:
				attempt = append(attempt, s.Action.Lock)
				if !slices.Equal(attempt, locks[:len(attempt)]) {
					t.Fatalf("lock order %v, want a prefix of %v", attempt, locks)
				}
			case gpu.ActionWait:
				attempt = nil
				if end := s.Result.Now.Sub(tBind); end > in.Options.RetryDeadline+5*time.Millisecond {
					t.Fatalf("a wait ended at %v, past the %v deadline", end, in.Options.RetryDeadline)
				}
			}
		}
		if lockErr == nil && len(locks) == 0 {
			for _, s := range steps {
				if s.Action.Kind == gpu.ActionLock || s.Action.Kind == gpu.ActionRelease {
					t.Fatalf("a pod without lockable requests touched a lock: %v", s.Action)
				}
			}
		}
		if out.Err != nil && errors.Is(out.Err, errContention) && !retryCut(steps) {
			// Every pod retries contention (unlike HAMi #1130), so contention ends a Bind only
			// once the deadline has passed.
			var last time.Duration
			for i, s := range steps {
				if s.Action.Reason.Code == gpu.ReasonMarkFailed {
					last = steps[i-1].Result.Now.Sub(tBind)
					break
				}
			}
			if last < in.Options.RetryDeadline {
				t.Fatalf("gave up on contention at %v, before the %v deadline", last, in.Options.RetryDeadline)
			}
		}
	})
}

// retryCut reports whether the transcript shows the retry ended by something
// other than contention timing out (a failed release or wait).
func retryCut(steps []transcriptStep) bool {
	for _, s := range steps {
		if (s.Action.Kind == gpu.ActionRelease && s.Action.Reason.Code == gpu.ReasonRetryRollback || s.Action.Kind == gpu.ActionWait) && s.Result.Err != nil {
			return true
		}
	}
	return false
}

// TestPropBindDeterministic runs the same scripted Bind twice.
func TestPropBindDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pod := genPod(t)
		contend := rapid.IntRange(0, 5).Draw(t, "contend")
		run := func() string {
			sc := &scripted{step: time.Millisecond, pod: pod.DeepCopy(),
				results: map[string][]gpu.Result{"Lock " + gpu.LockNvidia + " Acquire": slices.Repeat([]gpu.Result{{Err: errContention, Contention: true}}, contend)}}
			steps, out := drive(t, bindInput(gpu.Options{}), sc)
			return FormatTranscriptWithOutcome(steps, out)
		}
		before := pod.DeepCopy()
		a, b := run(), run()
		if a != b {
			t.Fatalf("two runs differ:\n%s\n---\n%s", a, b)
		}
		if !reflect.DeepEqual(before, pod) {
			t.Fatalf("pod modified:\n%s", cmp.Diff(before, pod))
		}
	})
}
