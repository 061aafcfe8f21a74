package fake

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Clock is a settable clock shared by every fake of a World. It only moves when
// a test (or injected latency) moves it. It implements k8s.io/utils/clock's
// WithTickerAndDelayedExecution, so any shell that takes a clock.Clock runs on it:
// its timers, tickers and AfterFuncs fire when the clock is moved past them.
//
// With AutoAdvance set, a timer created on the clock moves the clock to its
// deadline at once (and so fires), which suits single-goroutine simulations where
// "wait for d" should mean "let d pass".
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	auto    bool
	waiters []*fakeTimer
}

var _ clock.WithTickerAndDelayedExecution = (*Clock)(nil)

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

// Since returns the simulated time elapsed since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// SetAutoAdvance turns AutoAdvance on or off (see Clock).
func (c *Clock) SetAutoAdvance(on bool) {
	c.mu.Lock()
	c.auto = on
	c.mu.Unlock()
}

// Advance moves the clock forward by d and fires every timer that is due. A
// negative d is ignored: simulated time, like the real monotonic clock, never runs
// backwards. Tests that need a skewed clock should give each party its own Clock.
func (c *Clock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	c.fireDue()
}

// Set moves the clock to t if t is later than the current reading and reports
// whether it moved.
func (c *Clock) Set(t time.Time) bool {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return false
	}
	c.now = t
	c.mu.Unlock()
	c.fireDue()
	return true
}

// Sleep lets d pass on the simulated clock: it advances the clock by d.
func (c *Clock) Sleep(d time.Duration) { c.Advance(d) }

// After returns the channel of a new timer.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

// NewTimer returns a timer that fires once the clock reaches now+d.
func (c *Clock) NewTimer(d time.Duration) clock.Timer { return c.add(d, 0, nil) }

// AfterFunc runs f in its own goroutine once the clock reaches now+d.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer { return c.add(d, 0, f) }

// Tick returns the channel of a new ticker.
func (c *Clock) Tick(d time.Duration) <-chan time.Time { return c.NewTicker(d).C() }

// NewTicker returns a ticker that fires every d of simulated time. A d <= 0 is
// taken as one nanosecond, since a ticker that never moves would spin.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		d = time.Nanosecond
	}
	return fakeTicker{c.add(d, d, nil)}
}

// fakeTicker adapts a periodic fakeTimer to clock.Ticker, whose Stop returns nothing.
type fakeTicker struct{ t *fakeTimer }

func (k fakeTicker) C() <-chan time.Time { return k.t.ch }
func (k fakeTicker) Stop()               { k.t.clock.remove(k.t) }

// Waiters returns how many timers and tickers are waiting: a test can wait until
// the code under test is blocked on the clock before it advances it.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

func (c *Clock) add(d, period time.Duration, f func()) *fakeTimer {
	t := &fakeTimer{clock: c, ch: make(chan time.Time, 1), period: period, fn: f}
	c.mu.Lock()
	t.at = c.now.Add(d)
	c.waiters = append(c.waiters, t)
	auto := c.auto
	c.mu.Unlock()
	if auto && d > 0 {
		c.Set(t.at)
	} else {
		c.fireDue()
	}
	return t
}

// fireDue fires, outside the lock, every waiter whose time has come.
func (c *Clock) fireDue() {
	c.mu.Lock()
	now := c.now
	var due []*fakeTimer
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(now) {
			kept = append(kept, w)
			continue
		}
		due = append(due, w)
		if w.period > 0 {
			// A ticker drops ticks it could not deliver, as time.Ticker does.
			for !w.at.After(now) {
				w.at = w.at.Add(w.period)
			}
			kept = append(kept, w)
		}
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
	c.mu.Unlock()
	for _, w := range due {
		if w.fn != nil {
			go w.fn()
			continue
		}
		select {
		case w.ch <- now:
		default:
		}
	}
}

func (c *Clock) remove(t *fakeTimer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, w := range c.waiters {
		if w == t {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// fakeTimer is a Timer or Ticker of a Clock.
type fakeTimer struct {
	clock  *Clock
	ch     chan time.Time
	at     time.Time // guarded by clock.mu
	period time.Duration
	fn     func()
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// Stop removes the timer and reports whether it was still waiting.
func (t *fakeTimer) Stop() bool { return t.clock.remove(t) }

// Reset stops the timer and arms it again for d from the current reading.
func (t *fakeTimer) Reset(d time.Duration) bool {
	was := t.clock.remove(t)
	c := t.clock
	c.mu.Lock()
	t.at = c.now.Add(d)
	c.waiters = append(c.waiters, t)
	c.mu.Unlock()
	c.fireDue()
	return was
}
