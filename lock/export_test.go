package lock

import "time"

// Internals the external property tests (package lock_test) compare against.
var (
	SameOwner      = sameOwner
	HasOwnerSuffix = hasOwnerSuffix
)

func (o Options) WriterClockForTest() bool { return o.writerClock() }

func (o Options) EffectiveCeilingForTest() (d time.Duration, ok bool) { return o.effectiveCeiling() }
