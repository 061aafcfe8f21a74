package fake_test

import (
	"testing"
	"time"

	"github.com/plancore/plancore/fake"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func fired(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestClockTimerFiresWhenAdvancedPastDeadline(t *testing.T) {
	c := fake.NewClock(t0)
	tm := c.NewTimer(time.Second)
	c.Advance(999 * time.Millisecond)
	if fired(tm.C()) {
		t.Fatal("timer fired before its deadline")
	}
	c.Advance(time.Millisecond)
	if !fired(tm.C()) {
		t.Fatal("timer did not fire at its deadline")
	}
	if c.Waiters() != 0 {
		t.Fatalf("Waiters() = %d after the timer fired, want 0", c.Waiters())
	}
}

func TestClockStoppedTimerNeverFires(t *testing.T) {
	c := fake.NewClock(t0)
	tm := c.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of a waiting timer = false")
	}
	c.Advance(time.Hour)
	if fired(tm.C()) {
		t.Fatal("a stopped timer fired")
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer reported it was waiting")
	}
	c.Advance(time.Second)
	if !fired(tm.C()) {
		t.Fatal("a reset timer did not fire")
	}
}

func TestClockTickerTicksEachPeriod(t *testing.T) {
	c := fake.NewClock(t0)
	tk := c.NewTicker(time.Second)
	for i := 0; i < 3; i++ {
		c.Advance(time.Second)
		if !fired(tk.C()) {
			t.Fatalf("tick %d missing", i)
		}
	}
	tk.Stop()
	c.Advance(time.Second)
	if fired(tk.C()) {
		t.Fatal("a stopped ticker ticked")
	}
}

func TestClockAutoAdvanceLetsTimeDPass(t *testing.T) {
	c := fake.NewClock(t0)
	c.SetAutoAdvance(true)
	<-c.After(5 * time.Second) // would block forever without AutoAdvance
	if got := c.Since(t0); got != 5*time.Second {
		t.Fatalf("Since(start) = %v, want 5s", got)
	}
}

func TestClockAfterFuncRuns(t *testing.T) {
	c := fake.NewClock(t0)
	done := make(chan struct{})
	c.AfterFunc(time.Minute, func() { close(done) })
	c.Sleep(time.Minute)
	<-done
}
