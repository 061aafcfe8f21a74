package lock_test

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/lock"
)

// decide is PlanAcquire with the arguments spelled out, as the scenarios read.
func decide(obs lock.Observation, req lock.Requester, now time.Time, o lock.Options, h lock.Holder) (lock.Plan, error) {
	return lock.PlanAcquire(lock.AcquireInput{Observation: obs, Requester: req, Now: now, Holder: h}, o)
}

// planRelease is PlanRelease with the arguments spelled out.
func planRelease(obs lock.Observation, req lock.Requester, o lock.Options) (lock.Plan, error) {
	return lock.PlanRelease(lock.ReleaseInput{Observation: obs, Requester: req}, o)
}

// stepClock is a fake.Clock whose timers fire at once: with advance set they
// first move the clock by their duration, otherwise the wait takes no time.
// Each duration is appended to sleeps when it is set.
type stepClock struct {
	*fake.Clock
	advance bool
	sleeps  *[]time.Duration
	// stop, when set, is called once more than maxSleeps sleeps were recorded:
	// it ends a waiter that would otherwise loop for ever, without a wall-clock
	// timeout that a loaded machine could trip.
	stop      func()
	maxSleeps int
}

func (c stepClock) NewTimer(d time.Duration) clock.Timer {
	if c.sleeps != nil {
		*c.sleeps = append(*c.sleeps, d)
		if c.stop != nil && len(*c.sleeps) > c.maxSleeps {
			c.stop()
		}
	}
	if c.advance {
		c.Advance(d)
	}
	return c.Clock.NewTimer(0)
}

func (c stepClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }
