// Package locktest provides rapid generators of valid inputs and options for
// package lock, for property tests of locking code built on it, in the way
// net/http/httptest serves tests of net/http code. plancore's own properties
// draw from them and check each plan with lock.CheckPlan and
// lock.CheckRelease.
package locktest

import (
	"time"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/lock"
)

// Key is the lock of every generated observation.
var Key = lock.NodeKey("n1")

// Now is the time generated values are aged against.
var Now = time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)

// Raw draws a stored lock value written up to 20 minutes after or 30 minutes
// before now: HAMi's extended value (with a UID and an epoch), HAMi's
// "time,namespace,name" (names possibly empty), the legacy bare timestamp, or
// an arbitrary string. It returns the value and the record it encodes (the
// zero record for an arbitrary string).
func Raw(now time.Time) *rapid.Generator[Value] {
	return rapid.Custom(func(t *rapid.T) Value {
		age := time.Duration(rapid.Int64Range(-int64(20*time.Minute), int64(30*time.Minute)).Draw(t, "age"))
		tm := now.Add(-age).Truncate(time.Second)
		ns := rapid.SampledFrom([]string{"default", "team-a", "my-team-a", ""}).Draw(t, "ns")
		name := rapid.SampledFrom([]string{"p1", "p2", "abc", "abc-123", ""}).Draw(t, "name")
		uid := rapid.SampledFrom([]string{"u1", "u2", "u3"}).Draw(t, "uid")
		switch rapid.IntRange(0, 4).Draw(t, "format") {
		case 0:
			if ns == "" || name == "" {
				ns, name = "default", "p2"
			}
			r := lock.Record{Time: tm, Namespace: ns, Name: name, UID: uid, Epoch: rapid.Uint64Range(1, 50).Draw(t, "epoch")}
			return Value{lock.Encode(r, lock.FormatExtended), r}
		case 1, 2:
			r := lock.Record{Time: tm, Namespace: ns, Name: name}
			return Value{lock.Encode(r, lock.FormatHAMi), r}
		case 3:
			return Value{lock.Encode(lock.Record{Time: tm}, lock.FormatLegacy), lock.Record{Time: tm}}
		default:
			return Value{rapid.String().Draw(t, "junk"), lock.Record{}}
		}
	})
}

// Value is a stored lock value and the record it was encoded from.
type Value struct {
	Raw    string
	Record lock.Record
}

// Requester draws one of a few requesters, whose names overlap the records'
// (so some own the lock), with or without a UID.
func Requester() *rapid.Generator[lock.Requester] {
	return rapid.Custom(func(t *rapid.T) lock.Requester {
		return lock.Requester{
			Namespace: rapid.SampledFrom([]string{"default", "team-a"}).Draw(t, "reqNS"),
			Name:      rapid.SampledFrom([]string{"p1", "p2", "abc"}).Draw(t, "reqName"),
			UID:       rapid.SampledFrom([]string{"u1", "u2", ""}).Draw(t, "reqUID"),
		}
	})
}

// Holder draws what a holder lookup may answer.
func Holder() *rapid.Generator[lock.Holder] {
	return rapid.Custom(func(t *rapid.T) lock.Holder {
		return lock.Holder{
			State:      rapid.SampledFrom([]lock.HolderState{lock.HolderNotChecked, lock.HolderExists, lock.HolderNotFound, lock.HolderTerminal, lock.HolderUnknown}).Draw(t, "holder"),
			Allocating: rapid.Bool().Draw(t, "allocating"),
			Replaced:   rapid.Bool().Draw(t, "replaced"),
		}
	})
}

// Options draws a TTL of 1 to 10 minutes and every policy switch.
func Options() *rapid.Generator[lock.Options] {
	return rapid.Custom(func(t *rapid.T) lock.Options {
		return lock.Options{
			TTL:                       time.Duration(rapid.IntRange(1, 10).Draw(t, "ttlMin")) * time.Minute,
			ExpiryClock:               rapid.SampledFrom([]lock.ExpiryClock{"", lock.WriterClock, lock.ObservationClock}).Draw(t, "clock"),
			Malformed:                 rapid.SampledFrom([]lock.MalformedPolicy{"", lock.StealAfterTTL, lock.BlockForever}).Draw(t, "malformed"),
			Identity:                  rapid.SampledFrom([]lock.Identity{"", lock.UIDThenName, lock.NameOnly}).Draw(t, "identity"),
			TerminalHolderAlive:       rapid.Bool().Draw(t, "terminalAlive"),
			StealFromAllocatingHolder: rapid.Bool().Draw(t, "stealAllocating"),
			LegacyReleasableByAnyone:  rapid.Bool().Draw(t, "legacyAnyone"),
		}
	})
}

// Observation draws a read of Key at now: absent (one time in six) or a Raw
// value first seen up to 30 minutes ago, at some version, with an epoch
// high-water mark.
func Observation(now time.Time) *rapid.Generator[lock.Observation] {
	return rapid.Custom(func(t *rapid.T) lock.Observation {
		obs := lock.Observation{Key: Key, Version: rapid.StringMatching(`[0-9]{1,4}`).Draw(t, "version"), EpochHigh: rapid.Uint64Range(0, 60).Draw(t, "high")}
		if rapid.IntRange(0, 5).Draw(t, "present") > 0 {
			obs.Present = true
			obs.Raw = Raw(now).Draw(t, "raw").Raw
			obs.FirstObservedAt = now.Add(-time.Duration(rapid.Int64Range(0, int64(30*time.Minute)).Draw(t, "seen")))
		}
		return obs
	})
}

// AcquireInput draws an acquire at a time within the hour after Now, of an
// Observation by a Requester with a Holder answer.
func AcquireInput() *rapid.Generator[lock.AcquireInput] {
	return rapid.Custom(func(t *rapid.T) lock.AcquireInput {
		now := Now.Add(time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "now")))
		return lock.AcquireInput{Observation: Observation(now).Draw(t, "observation"), Requester: Requester().Draw(t, "requester"),
			Now: now, Holder: Holder().Draw(t, "holder")}
	})
}
