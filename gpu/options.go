package gpu

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
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
	// fixed gang-retry interval (100 ms) and no jitter, polling instead of
	// waking on a release (HAMi #2589).
	FixedInterval time.Duration
	// RetryPodGroupOnly restores HAMi's rule that only gang pods (label
	// scheduling.x-k8s.io/pod-group) retry contention; others fail at once and
	// fall into the kube-scheduler's backoff (HAMi #1130, #1367).
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

// MaxTimeout is the largest duration any Options field accepts: a day. Bind
// is an HTTP call of the kube-scheduler; longer values are mistakes, and
// bounding them keeps every instant Bind computes from wrapping.
const MaxTimeout = 24 * time.Hour

// HAMi returns the options that reproduce HAMi v2.10's Bind retry: only gang
// pods (label scheduling.x-k8s.io/pod-group) retry contention, at HAMi's
// fixed 100 ms interval without jitter, within the same 28 s deadline.
// Assign it whole: each field it sets is one of the anchor's behaviours, and
// copying only some of them reproduces none of the anchor exactly.
func HAMi() Options {
	return Options{
		RetryDeadline:       DefaultRetryDeadline,
		ExtenderHTTPTimeout: DefaultExtenderHTTPTimeout,
		FixedInterval:       100 * time.Millisecond,
		NoJitter:            true,
		RetryPodGroupOnly:   true,
	}
}

// Validate reports every invalid field, wrapping ErrInvalidOptions: a negative
// duration or one above MaxTimeout, a retry deadline not below the extender's
// HTTP timeout, a cap below the base, a jitter outside [0, 1].
func (o Options) Validate() error {
	return plancore.Invalid(ErrInvalidOptions, o.validate(optionsPath))
}

func optionsPath() *field.Path { return field.NewPath("options") }

func (o Options) validate(p pathFn) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"retryDeadline", o.RetryDeadline}, {"extenderHTTPTimeout", o.ExtenderHTTPTimeout}, {"retryBase", o.RetryBase},
		{"retryCap", o.RetryCap}, {"fixedInterval", o.FixedInterval}} {
		switch {
		case f.d < 0:
			errs = append(errs, field.Invalid(p().Child(f.name), f.d.String(), "must not be negative"))
		case f.d > MaxTimeout:
			errs = append(errs, field.Invalid(p().Child(f.name), f.d.String(), fmt.Sprintf("must be at most %v", MaxTimeout)))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	d := o.withDefaults()
	if d.RetryDeadline >= d.ExtenderHTTPTimeout {
		errs = append(errs, field.Invalid(p().Child("retryDeadline"), d.RetryDeadline.String(),
			fmt.Sprintf("must be below extenderHTTPTimeout %v, or the scheduler abandons Binds that still hold locks", d.ExtenderHTTPTimeout)))
	}
	if d.RetryCap < d.RetryBase {
		errs = append(errs, field.Invalid(p().Child("retryCap"), d.RetryCap.String(), fmt.Sprintf("must not be below retryBase %v", d.RetryBase)))
	}
	if o.RetryJitter < 0 || o.RetryJitter > 1 || math.IsNaN(o.RetryJitter) {
		errs = append(errs, field.Invalid(p().Child("retryJitter"), o.RetryJitter, "must be within [0, 1]"))
	}
	return errs
}

// NextRetry returns how long to wait before contention retry number attempt+1
// (attempt counts failed attempts from 0), given the time elapsed since Bind
// started and a uniform draw u in [0, 1); ok is false when the deadline has
// passed and Bind must give up:
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
