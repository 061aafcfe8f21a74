package fake

import (
	"time"
)

// World bundles what every fake shares: one simulated clock, one seeded fault
// injector and one call log.
type World struct {
	Clock  *Clock
	Faults *Faults
	Calls  *Recorder
}

// NewWorld returns a world whose clock reads start and whose randomness comes
// from seed.
func NewWorld(seed uint64, start time.Time) *World {
	return &World{
		Clock:  NewClock(start),
		Faults: NewFaults(seed),
		Calls:  &Recorder{},
	}
}

// Do runs one executor call of kind against target through fault injection:
// it advances the clock by the kind's latency, returns an injected failure
// without calling write, or calls write and then, if the response is to be
// lost, returns the injected error in place of write's result. Every call is
// recorded with its outcome.
func (w *World) Do(kind, target string, write func() error) error {
	inj := w.Faults.Next(kind)
	w.Clock.Advance(inj.Latency)
	call := Call{At: w.Clock.Now(), Kind: kind, Target: target}
	if inj.Fail != nil {
		call.Outcome, call.Err = OutcomeInjectedFail, inj.Fail
		w.Calls.Record(call)
		return inj.Fail
	}
	err := write()
	switch {
	case err != nil:
		call.Outcome, call.Err = OutcomeError, err
	case inj.Lose != nil:
		call.Outcome, call.Err = OutcomeLostResponse, inj.Lose
		err = inj.Lose
	default:
		call.Outcome = OutcomeOK
	}
	w.Calls.Record(call)
	return err
}
