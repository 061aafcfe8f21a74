package lock_test

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"

	// These properties were internal tests; the dot import keeps them as
	// they read, while they draw from locktest (which imports lock).
	. "github.com/plancore/plancore/lock"
	"github.com/plancore/plancore/lock/locktest"
)

var (
	n1  = locktest.Key
	t10 = locktest.Now
)

// TestPropertyDecideContract checks the plan contract and the NeedsHolder
// contract over arbitrary inputs: PlanAcquire is deterministic; only grants
// write, always with exactly the observed version (and raw value for steals)
// and the next epoch; AlreadyHeld and refusals write nothing; an unchecked
// holder is refused as unknown exactly when NeedsHolder says one is needed.
// The write contract is lock.CheckPlan; a grant written at the high-water mark
// (Epoch: a.v.next - 1 in acquirePlanner.grant) makes it fail.
func TestPropertyDecideContract(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := locktest.AcquireInput().Draw(t, "input")
		opts := locktest.Options().Draw(t, "options")
		obs, req, now, h := in.Observation, in.Requester, in.Now, in.Holder
		d, err := PlanAcquire(in, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckPlan(in, opts, d); err != nil {
			t.Fatalf("%v\n%v", err, d)
		}
		again, _ := decide(obs, req, now, opts, h)
		if again != d || again.String() != d.String() {
			t.Fatalf("PlanAcquire is not deterministic: %v then %v", d, again)
		}
		checkNeedsHolder(t, obs, req, now, opts)
		checkRequeueHonest(t, d, obs, req, now, opts, h)
	})
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
		if other, _ := decide(obs, req, now, opts, locktest.Holder().Draw(t, "other holder")); other != unchecked {
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
		opts := locktest.Options().Draw(t, "options")
		opts.Malformed = StealAfterTTL
		ttl := opts.EffectiveTTL()
		now := t10
		raw := locktest.Raw(now).Draw(t, "raw").Raw
		rec, format, err := Decode(raw)
		obs := Observation{Key: n1, Present: true, Raw: raw, Version: "9"}
		req, h := locktest.Requester().Draw(t, "requester"), locktest.Holder().Draw(t, "other holder")
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
		if !opts.WriterClockForTest() {
			obs.FirstObservedAt = now.Add(-age)
		} else {
			now = rec.Time.Add(age)
		}
		d, _ := decide(obs, req, now, opts, h)
		ceiling, hasCeiling := opts.EffectiveCeilingForTest()
		protected := !opts.StealFromAllocatingHolder && rec.Named() && !SameOwner(rec, req, opts) &&
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
		if !opts.WriterClockForTest() {
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
		req := locktest.Requester().Draw(t, "requester")
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
// options, legacy values included, and every plan keeps lock.CheckRelease (a
// release precondition without the observed version makes it fail).
func TestPropertyNonOwnersCannotRelease(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := locktest.Raw(t10).Draw(t, "raw")
		raw, rec := v.Raw, v.Record
		req := locktest.Requester().Draw(t, "requester")
		obs := Observation{Key: n1, Present: true, Raw: raw, Version: "3"}
		in := ReleaseInput{Observation: obs, Requester: req}
		d, err := PlanRelease(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckRelease(in, Options{}, d); err != nil {
			t.Fatalf("%v\n%v", err, d)
		}
		owner := rec.Namespace == req.Namespace && rec.Name == req.Name && (rec.UID == "" || req.UID == "" || rec.UID == req.UID)
		if _, f, err := Decode(raw); err != nil || f == FormatLegacy {
			// Junk and legacy values name no owner, but a junk value may still
			// end with ",ns,name": HAMi's suffix rule then applies.
			owner = HasOwnerSuffix(raw, req.Namespace, req.Name) && rec.Named()
		}
		if d.Kind == Release && !owner {
			t.Fatalf("%v may release %q (record %+v): %v", req, raw, rec, d)
		}
		if owner && d.Kind != Release {
			t.Fatalf("owner %v may not release %q: %v", req, raw, d)
		}
	})
}
