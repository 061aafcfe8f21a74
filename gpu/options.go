package gpu

import (
	"fmt"
	"math"
	"time"
)

// Options configures the Bind flow. The zero value means the documented
// defaults; Options is the only source of Bind's timeouts (HAMi configures the
// lock TTL and the retry deadline in two places, #2790; the lock TTL belongs to
// lock.Options).
type Options struct {
	// RetryDeadline bounds the whole contention retry, measured from the start
	// of Bind. Default 28 s, HAMi's --node-lock-retry-timeout. It must stay
	// below ExtenderHTTPTimeout so the scheduler never gives up on a Bind that
	// still holds locks.
	RetryDeadline time.Duration
	// ExtenderHTTPTimeout is the kube-scheduler's extender httpTimeout. Default 30 s.
	ExtenderHTTPTimeout time.Duration
	// RetryBase is the first backoff. Default 100 ms.
	RetryBase time.Duration
	// RetryCap caps every backoff. Default 1 s.
	RetryCap time.Duration
	// RetryJitter is the jitter factor: a backoff d becomes d·(1 + RetryJitter·u)
	// with u uniform in [0, 1). 0 means the default 0.5; use NoJitter for none.
	RetryJitter float64
	// NoJitter turns the jitter off.
	NoJitter bool
	// FixedInterval, when non-zero, replaces the exponential backoff with HAMi's
	// fixed gang-retry interval (100 ms) and no jitter (compat for G4).
	FixedInterval time.Duration
	// RetryPodGroupOnly restores HAMi's rule that only gang pods (label
	// scheduling.x-k8s.io/pod-group) retry contention; others fail at once and
	// fall into the kube-scheduler's backoff (compat for G3; #1130, #1367).
	RetryPodGroupOnly bool
}

// Default values of Options.
const (
	DefaultRetryDeadline       = 28 * time.Second
	DefaultExtenderHTTPTimeout = 30 * time.Second
	DefaultRetryBase           = 100 * time.Millisecond
	DefaultRetryCap            = time.Second
	DefaultRetryJitter         = 0.5
)

// LabelPodGroup marks a gang pod (HAMi's gang retry applies to it).
const LabelPodGroup = "scheduling.x-k8s.io/pod-group"

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.RetryDeadline == 0 {
		o.RetryDeadline = DefaultRetryDeadline
	}
	if o.ExtenderHTTPTimeout == 0 {
		o.ExtenderHTTPTimeout = DefaultExtenderHTTPTimeout
	}
	if o.RetryBase == 0 {
		o.RetryBase = DefaultRetryBase
	}
	if o.RetryCap == 0 {
		o.RetryCap = DefaultRetryCap
	}
	if o.RetryJitter == 0 {
		o.RetryJitter = DefaultRetryJitter
	}
	if o.NoJitter {
		o.RetryJitter = 0
	}
	return o
}

// Validate reports the first invalid field, naming it and its value.
func (o Options) Validate() error {
	d := o.withDefaults()
	switch {
	case o.RetryDeadline < 0:
		return fmt.Errorf("%w: RetryDeadline %v is negative", ErrInvalidOptions, o.RetryDeadline)
	case o.ExtenderHTTPTimeout < 0:
		return fmt.Errorf("%w: ExtenderHTTPTimeout %v is negative", ErrInvalidOptions, o.ExtenderHTTPTimeout)
	case d.RetryDeadline >= d.ExtenderHTTPTimeout:
		return fmt.Errorf("%w: RetryDeadline %v must be below ExtenderHTTPTimeout %v, or the scheduler abandons Binds that still hold locks",
			ErrInvalidOptions, d.RetryDeadline, d.ExtenderHTTPTimeout)
	case o.RetryBase < 0:
		return fmt.Errorf("%w: RetryBase %v is negative", ErrInvalidOptions, o.RetryBase)
	case o.RetryCap < 0:
		return fmt.Errorf("%w: RetryCap %v is negative", ErrInvalidOptions, o.RetryCap)
	case d.RetryCap < d.RetryBase:
		return fmt.Errorf("%w: RetryCap %v is below RetryBase %v", ErrInvalidOptions, d.RetryCap, d.RetryBase)
	case o.RetryJitter < 0 || o.RetryJitter > 1 || math.IsNaN(o.RetryJitter):
		return fmt.Errorf("%w: RetryJitter %v is outside [0, 1]", ErrInvalidOptions, o.RetryJitter)
	case o.FixedInterval < 0:
		return fmt.Errorf("%w: FixedInterval %v is negative", ErrInvalidOptions, o.FixedInterval)
	}
	return nil
}

// NextRetry returns how long to wait before contention retry number attempt+1
// (attempt counts failed attempts from 0), given the time elapsed since Bind
// started and a uniform draw u in [0, 1); ok is false when the deadline has
// passed and Bind must give up (spec gpu.md §2.1):
//
//	sleep = min(RetryCap, RetryBase·2^attempt·(1 + RetryJitter·u)), cut to the time left.
//
// HAMi retries gang pods at a fixed 100 ms (#2589); FixedInterval restores that.
// opts must be valid.
func NextRetry(attempt int, elapsed time.Duration, opts Options, u float64) (sleep time.Duration, ok bool) {
	o := opts.withDefaults()
	left := o.RetryDeadline - elapsed
	if left <= 0 {
		return 0, false
	}
	if o.FixedInterval > 0 {
		return min(o.FixedInterval, left), true
	}
	u = min(max(u, 0), 1)
	d := float64(o.RetryBase) * math.Pow(2, float64(max(attempt, 0))) * (1 + o.RetryJitter*u)
	sleep = o.RetryCap
	if d < float64(o.RetryCap) {
		sleep = time.Duration(d)
	}
	return min(sleep, left), true
}

// jitterDraw derives a uniform draw in [0, 1) from the seed, the pod UID and the
// attempt number (splitmix64), so a Bind's retries are reproducible and two pods
// with one seed still draw differently.
func jitterDraw(seed uint64, uid string, attempt int) float64 {
	h := seed ^ 0x9e3779b97f4a7c15
	for i := 0; i < len(uid); i++ {
		h = (h ^ uint64(uid[i])) * 0x100000001b3
	}
	h += uint64(attempt+1) * 0x9e3779b97f4a7c15
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
	h = (h ^ (h >> 27)) * 0x94d049bb133111eb
	h ^= h >> 31
	return float64(h>>11) / (1 << 53)
}
