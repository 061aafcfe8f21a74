package gpu

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestPropNextRetryBounds checks the retry bounds: an uncut sleep lies
// in [min(1s, d), min(1s, 1.5d)] with d = 100ms·2^n, and no sleep ends after the
// deadline.
func TestPropNextRetryBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		attempt := rapid.IntRange(0, 40).Draw(t, "attempt")
		elapsed := time.Duration(rapid.Int64Range(0, int64(30*time.Second)).Draw(t, "elapsed"))
		u := rapid.Float64Range(0, 0.999999).Draw(t, "u")
		sleep, ok := NextRetry(attempt, elapsed, Options{}, u)
		if elapsed >= DefaultRetryDeadline {
			if ok {
				t.Fatalf("retry allowed at %v, past the deadline", elapsed)
			}
			return
		}
		if !ok {
			t.Fatalf("gave up at %v, before the deadline", elapsed)
		}
		if elapsed+sleep > DefaultRetryDeadline {
			t.Fatalf("sleep %v at %v ends after the deadline", sleep, elapsed)
		}
		d := 100 * time.Millisecond * time.Duration(1<<min(attempt, 20))
		lo, hi := min(time.Second, d), min(time.Second, d+d/2)
		cut := DefaultRetryDeadline - elapsed
		if sleep < min(lo, cut) || sleep > hi {
			t.Fatalf("attempt %d u=%v: sleep %v outside [%v, %v] (time left %v)", attempt, u, sleep, lo, hi, cut)
		}
	})
}

func TestNextRetryFixedInterval(t *testing.T) {
	o := Options{FixedInterval: 100 * time.Millisecond}
	for attempt := range 5 {
		if s, ok := NextRetry(attempt, time.Second, o, 0.9); !ok || s != 100*time.Millisecond {
			t.Fatalf("attempt %d: %v %v, want 100ms", attempt, s, ok)
		}
	}
	if s, ok := NextRetry(3, DefaultRetryDeadline-30*time.Millisecond, o, 0); !ok || s != 30*time.Millisecond {
		t.Fatalf("cut sleep = %v %v, want 30ms", s, ok)
	}
	if _, ok := NextRetry(0, DefaultRetryDeadline, o, 0); ok {
		t.Fatal("retry at the deadline")
	}
}

// TestRetryStorm is HAMi's storm test: 50 clients retrying 3 times each,
// bucketed by 10 ms of cumulative backoff, put at most 20 retries in any bucket.
// A fixed interval puts all 50 in one bucket per step.
func TestRetryStorm(t *testing.T) {
	storm := func(o Options) int {
		buckets := map[time.Duration]int{}
		for c := range 50 {
			uid := fmt.Sprintf("pod-%02d", c)
			var at time.Duration
			for n := range 3 {
				s, ok := NextRetry(n, at, o, jitterDraw(7, uid, n))
				if !ok {
					t.Fatalf("client %d gave up", c)
				}
				at += s
				buckets[at/(10*time.Millisecond)]++
			}
		}
		worst := 0
		for _, n := range buckets {
			worst = max(worst, n)
		}
		return worst
	}
	if worst := storm(Options{}); worst > 20 {
		t.Fatalf("jittered backoff put %d retries in one 10ms bucket, want ≤ 20", worst)
	}
	if worst := storm(Options{FixedInterval: 100 * time.Millisecond}); worst != 50 {
		t.Fatalf("fixed interval put %d retries in one bucket, want all 50 (the herd HAMi #2589 describes)", worst)
	}
}

func TestJitterDrawIsUniformEnough(t *testing.T) {
	var hist [10]int
	for i := range 10000 {
		u := jitterDraw(uint64(i/100), fmt.Sprintf("uid-%d", i), i%7)
		if u < 0 || u >= 1 {
			t.Fatalf("draw %v outside [0, 1)", u)
		}
		hist[int(u*10)]++
	}
	for i, n := range hist {
		if n < 800 || n > 1200 {
			t.Fatalf("decile %d has %d of 10000 draws: %v", i, n, hist)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Fatalf("zero options: %v", err)
	}
	for name, o := range map[string]Options{
		"deadline at timeout": {RetryDeadline: 30 * time.Second},
		"deadline negative":   {RetryDeadline: -1},
		"timeout negative":    {ExtenderHTTPTimeout: -1},
		"cap below base":      {RetryBase: 2 * time.Second},
		"jitter above 1":      {RetryJitter: 1.5},
		"fixed negative":      {FixedInterval: -1},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%s: accepted %+v", name, o)
		}
	}
}
