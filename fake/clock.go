package fake

import (
	"sync"
	"time"
)

// Clock is a settable clock shared by every fake of a World. It only moves when
// a test (or injected latency) moves it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now returns the simulated time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d. A negative d is ignored: simulated time,
// like the real monotonic clock, never runs backwards. Tests that need a skewed
// clock should give each party its own Clock.
func (c *Clock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t if t is later than the current reading and reports
// whether it moved.
func (c *Clock) Set(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.After(c.now) {
		return false
	}
	c.now = t
	return true
}
