package lock

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"
)

// genRaw draws a lock value: extended, HAMi (named or not), legacy, or junk.
func genRaw(t *rapid.T, now time.Time) (string, Record) {
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
		r := Record{Time: tm, Namespace: ns, Name: name, UID: uid, Epoch: rapid.Uint64Range(1, 50).Draw(t, "epoch")}
		return Encode(r, FormatExtended), r
	case 1, 2:
		r := Record{Time: tm, Namespace: ns, Name: name}
		return Encode(r, FormatHAMi), r
	case 3:
		return Encode(Record{Time: tm}, FormatLegacy), Record{Time: tm}
	default:
		return rapid.String().Draw(t, "junk"), Record{}
	}
}

func genRequester(t *rapid.T) Requester {
	return Requester{
		Namespace: rapid.SampledFrom([]string{"default", "team-a"}).Draw(t, "reqNS"),
		Name:      rapid.SampledFrom([]string{"p1", "p2", "abc"}).Draw(t, "reqName"),
		UID:       rapid.SampledFrom([]string{"u1", "u2", ""}).Draw(t, "reqUID"),
	}
}

func genHolder(t *rapid.T) Holder {
	return Holder{
		State:      rapid.SampledFrom([]HolderState{HolderNotChecked, HolderExists, HolderNotFound, HolderTerminal, HolderUnknown}).Draw(t, "holder"),
		Allocating: rapid.Bool().Draw(t, "allocating"),
		Replaced:   rapid.Bool().Draw(t, "replaced"),
	}
}

func genPropOptions(t *rapid.T) Options {
	return Options{
		TTL:                       time.Duration(rapid.IntRange(1, 10).Draw(t, "ttlMin")) * time.Minute,
		ExpiryClock:               rapid.SampledFrom([]ExpiryClock{"", WriterClock, ObservationClock}).Draw(t, "clock"),
		Malformed:                 rapid.SampledFrom([]MalformedPolicy{"", StealAfterTTL, BlockForever}).Draw(t, "malformed"),
		Identity:                  rapid.SampledFrom([]Identity{"", UIDThenName, NameOnly}).Draw(t, "identity"),
		TerminalHolderAlive:       rapid.Bool().Draw(t, "terminalAlive"),
		StealFromAllocatingHolder: rapid.Bool().Draw(t, "stealAllocating"),
		LegacyReleasableByAnyone:  rapid.Bool().Draw(t, "legacyAnyone"),
	}
}

func genObservation(t *rapid.T, now time.Time) Observation {
	obs := Observation{Key: n1, Version: rapid.StringMatching(`[0-9]{1,4}`).Draw(t, "version"), EpochHigh: rapid.Uint64Range(0, 60).Draw(t, "high")}
	if rapid.IntRange(0, 5).Draw(t, "present") > 0 {
		obs.Present = true
		obs.Raw, _ = genRaw(t, now)
		obs.FirstObservedAt = now.Add(-time.Duration(rapid.Int64Range(0, int64(30*time.Minute)).Draw(t, "seen")))
	}
	return obs
}

// TestPropertyDecideContract checks the plan contract and the NeedsHolder
// contract over arbitrary inputs: PlanAcquire is deterministic; only grants
// write, always with exactly the observed version (and raw value for steals)
// and the next epoch; AlreadyHeld and refusals write nothing; an unchecked
// holder is refused as unknown exactly when NeedsHolder says one is needed.
func TestPropertyDecideContract(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := t10.Add(time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "now")))
		obs, req, opts, h := genObservation(t, now), genRequester(t), genPropOptions(t), genHolder(t)
		d, err := decide(obs, req, now, opts, h)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := decide(obs, req, now, opts, h)
		if again != d || again.String() != d.String() {
			t.Fatalf("PlanAcquire is not deterministic: %v then %v", d, again)
		}
		checkPlanWrites(t, d, obs, req, now)
		checkNeedsHolder(t, obs, req, now, opts)
		checkRequeueHonest(t, d, obs, req, now, opts, h)
	})
}

// checkPlanWrites: grants write exactly the observed precondition and the
// next epoch; the other kinds write nothing.
func checkPlanWrites(t *rapid.T, d Plan, obs Observation, req Requester, now time.Time) {
	switch {
	case d.Kind.Grants():
		if d.Precondition.Version != obs.Version || d.Precondition.Present != obs.Present || d.Precondition.Raw != obs.Raw {
			t.Fatalf("grant precondition %v does not match the observation %+v", d.Precondition, obs)
		}
		if d.Record.Epoch <= obs.EpochHigh || d.Record.Namespace != req.Namespace || d.Record.Name != req.Name || d.Record.UID != req.UID {
			t.Fatalf("grant record %+v for %v above %d", d.Record, req, obs.EpochHigh)
		}
		if !d.Record.Time.Equal(now.Truncate(time.Second)) {
			t.Fatalf("grant time %v, want now at whole seconds", d.Record.Time)
		}
	case d.Kind == AlreadyHeld || d.Kind == Refuse || d.Kind == Invalid:
		if d.Precondition != (Precondition{}) {
			t.Fatalf("%v carries a write precondition", d)
		}
	default:
		t.Fatalf("unexpected kind %v", d.Kind)
	}
	if d.Kind == Refuse && d.Reason.Code.Contention() && d.RequeueAfter == 0 && d.Reason.Code != ReasonHolderAllocating {
		t.Fatalf("contention without a requeue: %v", d)
	}
	if d.RequeueAfter < 0 {
		t.Fatalf("negative requeue %v", d.RequeueAfter)
	}
}

// checkNeedsHolder: an unchecked holder is refused as unknown exactly when
// NeedsHolder says one is needed, and a holder not needed changes nothing.
func checkNeedsHolder(t *rapid.T, obs Observation, req Requester, now time.Time, opts Options) {
	need, _ := NeedsHolder(AcquireInput{Observation: obs, Requester: req, Now: now}, opts)
	unchecked, _ := decide(obs, req, now, opts, Holder{})
	if refused := unchecked.Kind == Refuse && unchecked.Reason.Code == ReasonHolderUnknown; need != refused {
		t.Fatalf("NeedsHolder = %v, but PlanAcquire without a holder = %v", need, unchecked)
	}
	if !need {
		if other, _ := decide(obs, req, now, opts, genHolder(t)); other != unchecked {
			t.Fatalf("holder changed a plan that did not need one: %v vs %v", unchecked, other)
		}
	}
}

// checkRequeueHonest: RequeueAfter is honest: just before it the answer is
// the same, at it the answer changes (for the same holder). Breaking it (one
// nanosecond early in refuse) makes this fail.
func checkRequeueHonest(t *rapid.T, d Plan, obs Observation, req Requester, now time.Time, opts Options, h Holder) {
	if d.RequeueAfter == 0 {
		return
	}
	retryAt := now.Add(d.RequeueAfter)
	before, _ := decide(obs, req, retryAt.Add(-1), opts, h)
	after, _ := decide(obs, req, retryAt, opts, h)
	if before.Kind != d.Kind || before.Reason != d.Reason {
		t.Fatalf("plan changed before its requeue: %v then %v", d, before)
	}
	if after.Kind == d.Kind && after.Reason == d.Reason {
		t.Fatalf("plan unchanged at its requeue %v: %v", retryAt, after)
	}
}

// TestPropertyExpiredIsAcquirable is the expiry invariant: with age > TTL on the
// configured clock every decodable record is stolen, except from an
// allocating holder within the ceiling; age == TTL is never expired;
// a malformed value is stolen once seen unchanged for longer than TTL.
func TestPropertyExpiredIsAcquirable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := genPropOptions(t)
		opts.Malformed = StealAfterTTL
		ttl := opts.EffectiveTTL()
		now := t10
		raw, _ := genRaw(t, now)
		rec, format, err := Decode(raw)
		obs := Observation{Key: n1, Present: true, Raw: raw, Version: "9"}
		req, h := genRequester(t), genHolder(t)
		extra := time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "extra"))
		if err != nil {
			obs.FirstObservedAt = now.Add(-ttl - 1 - extra)
			if d, _ := decide(obs, req, now, opts, h); d.Kind != StealExpired || d.Reason.Code != ReasonMalformed {
				t.Fatalf("malformed %q seen for longer than TTL: %v", raw, d)
			}
			obs.FirstObservedAt = now.Add(-ttl)
			if d, _ := decide(obs, req, now, opts, h); d.Kind != Invalid {
				t.Fatalf("malformed %q seen for exactly TTL: %v", raw, d)
			}
			return
		}
		// Put the age on the configured clock just over TTL.
		age := ttl + 1 + extra
		if !opts.writerClock() {
			obs.FirstObservedAt = now.Add(-age)
		} else {
			now = rec.Time.Add(age)
		}
		d, _ := decide(obs, req, now, opts, h)
		ceiling, hasCeiling := opts.effectiveCeiling()
		protected := !opts.StealFromAllocatingHolder && rec.Named() && !sameOwner(rec, req, opts) &&
			(!hasCeiling || age <= ceiling)
		switch {
		case protected && h.State == HolderExists && h.Allocating:
			if d.Kind != Refuse || d.Reason.Code != ReasonHolderAllocating {
				t.Fatalf("allocating holder within the ceiling: %v", d)
			}
		case protected && (h.State == HolderNotChecked || h.State == HolderUnknown):
			if d.Kind != Refuse || d.Reason.Code != ReasonHolderUnknown {
				t.Fatalf("unknown holder within the ceiling: %v", d)
			}
		default:
			if d.Kind != StealExpired || d.Reason.Code != ReasonExpired {
				t.Fatalf("%v record %q aged %v > TTL %v: %v", format, raw, age, ttl, d)
			}
		}
		// Exactly TTL old is never expired.
		if !opts.writerClock() {
			obs.FirstObservedAt = now.Add(-ttl)
		} else {
			now = rec.Time.Add(ttl)
		}
		if d, _ := decide(obs, req, now, opts, h); d.Reason.Code == ReasonExpired {
			t.Fatalf("age == TTL expired: %v", d)
		}
	})
}

// TestPropertyExpiredTakesOneCAS is the executor half of the expiry invariant: with no
// concurrent writer, Locker takes an expired lock with one read and one CAS.
func TestPropertyExpiredTakesOneCAS(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := t10
		tm := now.Add(-DefaultTTL - time.Second - time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "extra")))
		r := Record{Time: tm, Namespace: "default", Name: rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "name"), UID: "u9", Epoch: 4}
		raw := Encode(r, rapid.SampledFrom([]Format{FormatLegacy, FormatHAMi, FormatExtended}).Draw(t, "format"))
		req := genRequester(t)
		req.UID = "u1"
		s := &countingStore{MemoryStore: NewMemoryStore()}
		if err := s.Put(n1, raw); err != nil {
			t.Fatal(err)
		}
		l := &Locker{Store: s, Clock: clocktesting.NewFakeClock(now), Options: Options{StealFromAllocatingHolder: true}}
		g, err := l.Acquire(context.Background(), n1, req)
		if err != nil {
			t.Fatal(err)
		}
		if g.Plan.Kind != StealExpired || g.Attempts != 1 || s.cas != 1 {
			t.Fatalf("took %q with %v after %d reads and %d CAS", raw, g.Plan, g.Attempts, s.cas)
		}
	})
}

type countingStore struct {
	*MemoryStore
	cas int
}

func (s *countingStore) CompareAndSwap(ctx context.Context, key Key, pre Precondition, rec Record) error {
	s.cas++
	return s.MemoryStore.CompareAndSwap(ctx, key, pre, rec)
}

// TestPropertyNonOwnersCannotRelease is the release invariant: a requester whose
// identity differs from the record's never gets Release under default
// options, legacy values included.
func TestPropertyNonOwnersCannotRelease(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw, rec := genRaw(t, t10)
		req := genRequester(t)
		obs := Observation{Key: n1, Present: true, Raw: raw, Version: "3"}
		d, err := PlanRelease(ReleaseInput{Observation: obs, Requester: req}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		owner := rec.Namespace == req.Namespace && rec.Name == req.Name && (rec.UID == "" || req.UID == "" || rec.UID == req.UID)
		if _, f, err := Decode(raw); err != nil || f == FormatLegacy {
			// Junk and legacy values name no owner, but a junk value may still
			// end with ",ns,name": HAMi's suffix rule then applies.
			owner = hasOwnerSuffix(raw, req.Namespace, req.Name) && rec.Named()
		}
		if d.Kind == Release && !owner {
			t.Fatalf("%v may release %q (record %+v): %v", req, raw, rec, d)
		}
		if d.Kind == Release && d.Precondition != obs.precondition() {
			t.Fatalf("release precondition %v, want the observed one", d.Precondition)
		}
		if owner && d.Kind != Release {
			t.Fatalf("owner %v may not release %q: %v", req, raw, d)
		}
	})
}
