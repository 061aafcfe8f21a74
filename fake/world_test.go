package fake

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestClockOnlyMovesForward(t *testing.T) {
	c := NewClock(t0)
	c.Advance(time.Second)
	c.Advance(-time.Hour)
	if got, want := c.Now(), t0.Add(time.Second); !got.Equal(want) {
		t.Fatalf("Now = %v, want %v", got, want)
	}
	if c.Set(t0) {
		t.Fatal("Set moved the clock backwards")
	}
	if !c.Set(t0.Add(time.Minute)) || !c.Now().Equal(t0.Add(time.Minute)) {
		t.Fatal("Set did not move the clock forwards")
	}
}

func TestDoAppliesScriptedFaultsInOrder(t *testing.T) {
	w := NewWorld(1, t0)
	errDown := errors.New("down")
	errLost := errors.New("lost")
	w.Faults.FailNext("pod.create", 1, errDown)
	w.Faults.LoseResponseNext("pod.create", 1, errLost)
	w.Faults.SetLatency("pod.create", 10*time.Millisecond)

	writes := 0
	write := func() error { writes++; return nil }
	errs := []error{
		w.Do("pod.create", "a", write),
		w.Do("pod.create", "b", write),
		w.Do("pod.create", "c", write),
	}
	if !errors.Is(errs[0], errDown) || !errors.Is(errs[1], errLost) || errs[2] != nil {
		t.Fatalf("errors = %v", errs)
	}
	if writes != 2 {
		t.Fatalf("writes = %d, want 2 (the failed call must not write, the lost one must)", writes)
	}
	if got, want := w.Clock.Now(), t0.Add(30*time.Millisecond); !got.Equal(want) {
		t.Fatalf("clock = %v, want %v after three 10ms calls", got, want)
	}
	var outcomes []Outcome
	for _, c := range w.Calls.Calls() {
		outcomes = append(outcomes, c.Outcome)
	}
	if diff := cmp.Diff([]Outcome{OutcomeInjectedFail, OutcomeLostResponse, OutcomeOK}, outcomes); diff != "" {
		t.Fatalf("outcomes (-want +got):\n%s", diff)
	}
	if n := w.Calls.Count("pod.create", OutcomeOK, OutcomeLostResponse); n != 2 {
		t.Fatalf("Count = %d, want 2", n)
	}
}

func TestDoRecordsTheCallsOwnError(t *testing.T) {
	w := NewWorld(1, t0)
	errExists := errors.New("already exists")
	if err := w.Do("pod.create", "a", func() error { return errExists }); !errors.Is(err, errExists) {
		t.Fatalf("err = %v", err)
	}
	if c := w.Calls.Calls()[0]; c.Outcome != OutcomeError || c.Target != "a" || c.Seq != 1 {
		t.Fatalf("call = %+v", c)
	}
}

func TestRatesAreReproducibleFromTheSeed(t *testing.T) {
	run := func(seed uint64) []Outcome {
		w := NewWorld(seed, t0)
		w.Faults.SetRates("k", 0.3, 0.2, errors.New("x"))
		var out []Outcome
		for range 200 {
			_ = w.Do("k", "", func() error { return nil })
		}
		for _, c := range w.Calls.Calls() {
			out = append(out, c.Outcome)
		}
		return out
	}
	a, b := run(7), run(7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, different outcomes:\n%s", diff)
	}
	counts := map[Outcome]int{}
	for _, o := range a {
		counts[o]++
	}
	// 200 draws at 30%/20%: each bucket is far from empty and far from full.
	for _, o := range []Outcome{OutcomeOK, OutcomeInjectedFail, OutcomeLostResponse} {
		if counts[o] < 20 || counts[o] > 150 {
			t.Errorf("outcome %s drawn %d times of 200", o, counts[o])
		}
	}
	if diff := cmp.Diff(a, run(8)); diff == "" {
		t.Error("different seeds gave identical outcome sequences")
	}
}
