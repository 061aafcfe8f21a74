package dag

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// SuccessRule decides when the workflow has succeeded.
type SuccessRule string

// Success rules.
const (
	// SuccessSet (the default) succeeds once every flow is final and the
	// main part succeeded, with no finally flow Failed.
	SuccessSet SuccessRule = ""
	// SuccessCount is Volcano's len(completedJobs) == len(flows).
	SuccessCount SuccessRule = "Count"
)

// StateMachine selects the phase logic.
type StateMachine string

// State machines.
const (
	// StatePlancore (the default) decides the phase in one step from the
	// observations and flow outcomes, with retries, failFast and finally.
	StatePlancore StateMachine = ""
	// StateVolcano reproduces Volcano's Pending/Running/Succeed/Failed table.
	StateVolcano StateMachine = "Volcano"
)

// BucketMode selects how job phases map to status lists.
type BucketMode string

// Bucket modes.
const (
	// BucketsExtended (the default) puts each job in exactly one list.
	BucketsExtended BucketMode = ""
	// BucketsVolcano reproduces Volcano's six lists: Completing and
	// Terminating in none, Aborting, Aborted, Restarting and "" unknown.
	BucketsVolcano BucketMode = "Volcano"
)

// AbortedPolicy says what an Aborted job means.
type AbortedPolicy string

// Aborted policies.
const (
	// AbortedFail (the default) treats Aborted as a failure phase.
	AbortedFail AbortedPolicy = ""
	// AbortedWait is Volcano's: Aborted never ends the flow.
	AbortedWait AbortedPolicy = "Wait"
)

// SpecChangeMode says how a mid-run spec edit is handled.
type SpecChangeMode string

// Spec change modes.
const (
	// SpecChangeReport (the default) reports SpecChanged and plans against
	// the new spec.
	SpecChangeReport SpecChangeMode = ""
	// SpecChangeLazy is Volcano's: the new spec is used silently.
	SpecChangeLazy SpecChangeMode = "Lazy"
)

// DefaultStatusSizeWarn is 80 % of etcd's ~1.5 MiB object limit.
const DefaultStatusSizeWarn = 1258291

// DefaultAnnotationPrefix prefixes plancore's job annotations.
const DefaultAnnotationPrefix = "plancore.io/"

// Options tune Decide. The zero value is the Default preset; VolcanoCompat
// returns the knobs that reproduce the anchor. Every knob can be set alone.
type Options struct {
	// SkipValidation turns spec validation off (Volcano never validates);
	// inverted so that the zero value is the Default preset.
	SkipValidation bool
	SuccessRule    SuccessRule
	StateMachine   StateMachine
	Buckets        BucketMode
	AbortedPolicy  AbortedPolicy
	// KeepStaleEntries keeps job status entries of jobs no longer observed
	// (Volcano).
	KeepStaleEntries bool
	// HistoryQuirk reproduces Volcano's quirk: a non-nil empty history is
	// never seeded.
	HistoryQuirk bool
	// HistoryLimit k > 0 keeps the first history entry and the last k−1.
	HistoryLimit int
	SpecChange   SpecChangeMode
	// AlwaysWrite writes the status on every sync, changed or not.
	AlwaysWrite bool
	// CreateInTerminal lets a Succeed+retain workflow re-create removed
	// jobs (Volcano).
	CreateInTerminal bool
	// SkipNameConflictCheck counts a same-named job of someone else as
	// this flow's job, as Volcano does; inverted so that the
	// zero value is the Default preset.
	SkipNameConflictCheck bool
	// StatusSizeWarn is the StatusBytes above which StatusTooLarge is
	// reported; 0 means DefaultStatusSizeWarn.
	StatusSizeWarn int
	// AnnotationPrefix prefixes plancore's annotations; empty means
	// DefaultAnnotationPrefix.
	AnnotationPrefix string
	// AllowAppend lets ValidateUpdate accept flows appended to a running
	// workflow.
	AllowAppend bool
	// ProbeTTL is the age after which a probe result no longer counts; 0
	// means three times the probe's period.
	ProbeTTL time.Duration
}

// Default returns the Default preset (the zero Options).
func Default() Options { return Options{} }

// VolcanoCompat returns the preset that reproduces Volcano's JobFlow
// controller at ed72c7c.
// Assign it whole: each field it sets is one of the anchor's behaviours, and
// copying only some of them reproduces none of the anchor exactly.
func VolcanoCompat() Options {
	return Options{
		SkipValidation:        true,
		SuccessRule:           SuccessCount,
		StateMachine:          StateVolcano,
		Buckets:               BucketsVolcano,
		AbortedPolicy:         AbortedWait,
		KeepStaleEntries:      true,
		HistoryQuirk:          true,
		SpecChange:            SpecChangeLazy,
		AlwaysWrite:           true,
		CreateInTerminal:      true,
		SkipNameConflictCheck: true,
	}
}

// Validate reports every unusable knob at once, as a *plancore.InvalidError
// wrapping ErrInvalidOptions whose field paths are the knobs' JSON-style names.
func (o Options) Validate() error {
	var errs field.ErrorList
	enum := func(name string, v string, ok bool, want ...string) {
		if !ok {
			errs = append(errs, field.NotSupported(field.NewPath(name), v, want))
		}
	}
	enum("successRule", string(o.SuccessRule), o.SuccessRule == SuccessSet || o.SuccessRule == SuccessCount, "", string(SuccessCount))
	enum("stateMachine", string(o.StateMachine), o.StateMachine == StatePlancore || o.StateMachine == StateVolcano, "", string(StateVolcano))
	enum("buckets", string(o.Buckets), o.Buckets == BucketsExtended || o.Buckets == BucketsVolcano, "", string(BucketsVolcano))
	enum("abortedPolicy", string(o.AbortedPolicy), o.AbortedPolicy == AbortedFail || o.AbortedPolicy == AbortedWait, "", string(AbortedWait))
	enum("specChange", string(o.SpecChange), o.SpecChange == SpecChangeReport || o.SpecChange == SpecChangeLazy, "", string(SpecChangeLazy))
	if o.HistoryLimit < 0 {
		errs = append(errs, field.Invalid(field.NewPath("historyLimit"), o.HistoryLimit, "must not be negative"))
	}
	if o.ProbeTTL < 0 {
		errs = append(errs, field.Invalid(field.NewPath("probeTTL"), o.ProbeTTL, "must not be negative"))
	}
	if o.StatusSizeWarn < 0 {
		errs = append(errs, field.Invalid(field.NewPath("statusSizeWarn"), o.StatusSizeWarn, "must not be negative"))
	}
	return plancore.Invalid(ErrInvalidOptions, errs)
}

func (o Options) volcano() bool { return o.StateMachine == StateVolcano }

// probeTTL is the result lifetime for a probe of the given period.
func (o Options) probeTTL(period time.Duration) time.Duration {
	if o.ProbeTTL > 0 {
		return o.ProbeTTL
	}
	return 3 * period
}

// period is the probe's re-check period.
func (p *Probe) period() time.Duration {
	if p.Period > 0 {
		return p.Period
	}
	return DefaultProbePeriod
}

func (o Options) sizeWarn() int {
	if o.StatusSizeWarn == 0 {
		return DefaultStatusSizeWarn
	}
	return o.StatusSizeWarn
}

func (o Options) prefix() string {
	if o.AnnotationPrefix == "" {
		return DefaultAnnotationPrefix
	}
	return o.AnnotationPrefix
}

// failurePhase reports whether a job phase is a failure under these options.
func (o Options) failurePhase(p JobPhase) bool {
	switch p {
	case JobPhaseFailed, JobPhaseTerminated:
		return true
	case JobPhaseAborted:
		return o.AbortedPolicy == AbortedFail
	}
	return false
}

// wait returns the backoff before retry n (1-based). It saturates: a
// duration, factor or cap near the largest time.Duration gives the largest
// wait (about 292 years), never a wrapped, negative one (a float64 at or above
// 2^63 converts to a negative int64 on amd64).
func (b Backoff) wait(n int) time.Duration {
	f := b.Factor
	if f == 0 {
		f = 2
	}
	d := float64(b.Duration)
	// The loop stops once the wait can no longer change: saturated, zero, or
	// a factor of 1 (so a huge attempt number costs nothing).
	for i := 1; i < n && d > 0 && d < maxWait && f != 1; i++ {
		d *= f
	}
	var w time.Duration
	switch {
	case math.IsNaN(d) || d <= 0:
		w = 0
	case d >= maxWait:
		w = math.MaxInt64
	default:
		w = time.Duration(d)
	}
	if b.Cap > 0 && w > b.Cap {
		return b.Cap
	}
	return w
}

// maxWait is 2^63 as a float64: the first value time.Duration cannot hold.
const maxWait = float64(1 << 63)
