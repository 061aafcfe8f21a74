package lock_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/lock"
)

// fieldsOf returns the field paths an invalid-input error names, from every
// *plancore.InvalidError it joins.
func fieldsOf(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		var inv *plancore.InvalidError
		if errors.As(err, &inv) && err == error(inv) {
			out = append(out, inv.Fields()...)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if errors.As(err, &inv) {
			out = append(out, inv.Fields()...)
		}
	}
	walk(err)
	return out
}

// TestBadInput feeds bad input through PlanAcquire, PlanRelease, Apply and
// Locker: each row names the sentinel and the exact field paths, or (legal
// input) asserts a valid plan.
func TestBadInput(t *testing.T) {
	held := lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:59:00Z,default,b,ub,3", Version: "7", EpochHigh: 3}
	base := lock.AcquireInput{Observation: lock.Observation{Key: node1, Version: "1"}, Requester: podA, Now: t0}
	with := func(f func(*lock.AcquireInput)) lock.AcquireInput { in := base; f(&in); return in }
	cases := []struct {
		name   string
		in     lock.AcquireInput
		opts   lock.Options
		kind   error    // nil: legal input
		fields []string // exact, in order
	}{
		{"empty node", with(func(in *lock.AcquireInput) { in.Observation.Key.Node = "" }), lock.Options{}, lock.ErrInvalidInput, []string{"observation.key.node"}},
		{"empty lock name", with(func(in *lock.AcquireInput) { in.Observation.Key.Name = "" }), lock.Options{}, lock.ErrInvalidInput, []string{"observation.key.name"}},
		{"zero key", with(func(in *lock.AcquireInput) { in.Observation.Key = lock.Key{} }), lock.Options{}, lock.ErrInvalidInput, []string{"observation.key.name", "observation.key.node"}},
		{"no namespace", with(func(in *lock.AcquireInput) { in.Requester.Namespace = "" }), lock.Options{}, lock.ErrInvalidInput, []string{"requester.namespace"}},
		{"no name", with(func(in *lock.AcquireInput) { in.Requester.Name = "" }), lock.Options{}, lock.ErrInvalidInput, []string{"requester.name"}},
		{"comma in name", with(func(in *lock.AcquireInput) { in.Requester.Name = "a,b" }), lock.Options{}, lock.ErrInvalidInput, []string{"requester.name"}},
		{"comma in UID", with(func(in *lock.AcquireInput) { in.Requester.UID = "u,1" }), lock.Options{}, lock.ErrInvalidInput, []string{"requester.uid"}},
		{"zero Now", with(func(in *lock.AcquireInput) { in.Now = time.Time{} }), lock.Options{}, lock.ErrInvalidInput, []string{"now"}},
		{"unknown holder state", with(func(in *lock.AcquireInput) { in.Holder.State = "Zombie" }), lock.Options{}, lock.ErrInvalidInput, []string{"holder.state"}},
		{"exhausted epoch high-water mark", with(func(in *lock.AcquireInput) { in.Observation.EpochHigh = math.MaxUint64 }), lock.Options{}, lock.ErrInvalidInput, []string{"observation.epochHigh"}},
		{"record at the last epoch", with(func(in *lock.AcquireInput) {
			in.Observation = lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:59:00Z,default,b,ub,18446744073709551615"}
		}), lock.Options{}, lock.ErrInvalidInput, []string{"observation.raw"}},
		{"everything at once", lock.AcquireInput{Requester: lock.Requester{UID: ","}}, lock.Options{}, lock.ErrInvalidInput,
			[]string{"observation.key.name", "observation.key.node", "requester.namespace", "requester.name", "requester.uid", "now"}},
		{"negative TTL", base, lock.Options{TTL: -time.Second}, lock.ErrInvalidOptions, []string{"options.ttl"}},
		{"TTL of MaxInt64", base, lock.Options{TTL: math.MaxInt64}, lock.ErrInvalidOptions, []string{"options.ttl"}},
		{"TTL just above MaxTTL", base, lock.Options{TTL: lock.MaxTTL + 1}, lock.ErrInvalidOptions, []string{"options.ttl"}},
		{"ceiling of MaxInt64", base, lock.Options{AllocatingCeiling: math.MaxInt64}, lock.ErrInvalidOptions, []string{"options.allocatingCeiling"}},
		{"ceiling of MinInt64", base, lock.Options{AllocatingCeiling: math.MinInt64}, lock.ErrInvalidOptions, []string{"options.allocatingCeiling"}},
		{"ceiling of -2", base, lock.Options{AllocatingCeiling: -2}, lock.ErrInvalidOptions, []string{"options.allocatingCeiling"}},
		{"unknown enums", base, lock.Options{ExpiryClock: "Lamport", Malformed: "Ignore", Identity: "IP"}, lock.ErrInvalidOptions,
			[]string{"options.expiryClock", "options.malformed", "options.identity"}},
		{"bad options and bad input: both named", with(func(in *lock.AcquireInput) { in.Now = time.Time{} }), lock.Options{TTL: -1}, lock.ErrInvalidOptions, []string{"options.ttl", "now"}},
		{"legal: TTL of MaxTTL on a held lock", with(func(in *lock.AcquireInput) {
			in.Observation, in.Holder = held, lock.Holder{State: lock.HolderExists}
		}), lock.Options{TTL: lock.MaxTTL}, nil, nil},
		{"legal: ceiling of 3 × MaxTTL, allocating holder", with(func(in *lock.AcquireInput) {
			in.Observation, in.Holder, in.Now = held, lock.Holder{State: lock.HolderExists, Allocating: true}, t0.Add(time.Hour)
		}), lock.Options{TTL: time.Minute, AllocatingCeiling: 3 * lock.MaxTTL}, nil, nil},
		{"legal: HAMi preset", with(func(in *lock.AcquireInput) { in.Observation = held }), lock.HAMi(), nil, nil},
		{"legal: far future Now", with(func(in *lock.AcquireInput) {
			in.Observation, in.Holder, in.Now = held, lock.Holder{State: lock.HolderExists}, time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
		}), lock.Options{TTL: lock.MaxTTL}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := lock.PlanAcquire(tc.in, tc.opts)
			if tc.kind == nil {
				if err != nil {
					t.Fatalf("legal input refused: %v", err)
				}
				if p.Kind == "" || p.Reason.Code == "" || p.Reason.Message == "" || p.RequeueAfter < 0 {
					t.Fatalf("plan %+v: want a kind, a reason with a message and no negative requeue", p)
				}
				if p.Kind == lock.Refuse && p.Reason.Code.Contention() && p.RequeueAfter <= 0 {
					t.Fatalf("contention without a requeue: %v", p)
				}
				return
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want %v", err, tc.kind)
			}
			if diff := cmp.Diff(tc.fields, fieldsOf(err)); diff != "" {
				t.Errorf("fields (-want +got):\n%s\nerror: %v", diff, err)
			}
			if errors.Is(tc.kind, lock.ErrInvalidOptions) && !slices.Contains(tc.fields, "now") {
				if verr := tc.opts.Validate(); !errors.Is(verr, lock.ErrInvalidOptions) {
					t.Errorf("Options.Validate = %v: PlanAcquire refused what Validate accepts", verr)
				}
			} else if verr := tc.in.Validate(); errors.Is(tc.kind, lock.ErrInvalidInput) && tc.fields[0] != "observation.raw" && verr == nil {
				t.Errorf("AcquireInput.Validate accepted what PlanAcquire refused")
			}
			// NeedsHolder ignores the holder it is asked about.
			if _, err := lock.NeedsHolder(tc.in, tc.opts); tc.fields[0] != "holder.state" && !errors.Is(err, tc.kind) {
				t.Errorf("NeedsHolder err = %v, want %v", err, tc.kind)
			}
		})
	}
}

// TestBadReleaseInput: PlanRelease names the same paths; a forced release
// needs no requester.
func TestBadReleaseInput(t *testing.T) {
	obs := lock.Observation{Key: node1, Present: true, Raw: "lock", Version: "1"}
	_, err := lock.PlanRelease(lock.ReleaseInput{Observation: obs}, lock.Options{})
	if !errors.Is(err, lock.ErrInvalidInput) || !cmp.Equal(fieldsOf(err), []string{"requester.namespace", "requester.name"}) {
		t.Errorf("release without requester: %v", err)
	}
	_, err = lock.PlanRelease(lock.ReleaseInput{Observation: lock.Observation{}, Force: true}, lock.Options{TTL: math.MaxInt64})
	if !errors.Is(err, lock.ErrInvalidOptions) || !errors.Is(err, lock.ErrInvalidInput) ||
		!cmp.Equal(fieldsOf(err), []string{"options.ttl", "observation.key.name", "observation.key.node"}) {
		t.Errorf("forced release of a zero key with bad options: %v (fields %v)", err, fieldsOf(err))
	}
	if p, err := lock.PlanRelease(lock.ReleaseInput{Observation: obs, Force: true}, lock.Options{}); err != nil || p.Kind != lock.Release {
		t.Errorf("forced release without a requester = %v, %v", p, err)
	}
}

// TestNilStore: a nil or missing store is an error wrapping ErrNilStore and
// ErrInvalidInput, never a panic; a zero Locker says so too.
func TestNilStore(t *testing.T) {
	ctx := context.Background()
	p, err := lock.PlanAcquire(lock.AcquireInput{Observation: lock.Observation{Key: node1}, Requester: podA, Now: t0}, lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Apply(ctx, p, nil); !errors.Is(err, lock.ErrNilStore) || !errors.Is(err, lock.ErrInvalidInput) {
		t.Errorf("Apply with a nil store: %v", err)
	}
	var l lock.Locker
	if _, err := l.Acquire(ctx, node1, podA); !errors.Is(err, lock.ErrNilStore) {
		t.Errorf("zero Locker Acquire: %v", err)
	}
	if _, err := l.Release(ctx, node1, podA); !errors.Is(err, lock.ErrNilStore) {
		t.Errorf("zero Locker Release: %v", err)
	}
	if _, err := l.ForceRelease(ctx, node1); !errors.Is(err, lock.ErrNilStore) {
		t.Errorf("zero Locker ForceRelease: %v", err)
	}
	// Apply of a plan that writes nothing needs no store.
	if rep, err := lock.Apply(ctx, lock.Plan{Kind: lock.Refuse}, nil); err != nil || len(rep.Results) != 0 {
		t.Errorf("Apply(Refuse, nil) = %v, %v", rep, err)
	}
}

// TestLockerReturnsInvalidInputAtOnce: a store that refuses its input (a
// validation error wrapping ErrInvalidInput) is not retried with backoff; the
// caller's own bad options are refused before any read.
func TestLockerReturnsInvalidInputAtOnce(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(1, t0)
	store := fake.NewLockStore(w)
	var sleeps []time.Duration
	l := &lock.Locker{Store: store, Clock: stepClock{Clock: w.Clock, advance: true, sleeps: &sleeps}}
	bad := lock.Record{}.ValidateExtended()
	w.Faults.FailNext(fake.LockGet, 1, bad)
	g, err := l.Acquire(ctx, node1, podA)
	if !errors.Is(err, lock.ErrInvalidInput) || g.Attempts != 1 || len(sleeps) != 0 {
		t.Errorf("Get refused as invalid: %v after %d reads and sleeps %v, want it returned at once", err, g.Attempts, sleeps)
	}
	w.Faults.FailNext(fake.LockCAS, 1, bad)
	g, err = l.Acquire(ctx, node1, podA)
	if !errors.Is(err, lock.ErrInvalidInput) || g.Attempts != 1 || len(sleeps) != 0 {
		t.Errorf("CAS refused as invalid: %v after %d reads and sleeps %v", err, g.Attempts, sleeps)
	}
	w.Faults.FailNext(fake.LockGet, 1, bad)
	if _, err := l.Release(ctx, node1, podA); !errors.Is(err, lock.ErrInvalidInput) || len(sleeps) != 0 {
		t.Errorf("release refused as invalid: %v, sleeps %v", err, sleeps)
	}
	l.Options.TTL = math.MaxInt64
	if g, err := l.Acquire(ctx, node1, podA); !errors.Is(err, lock.ErrInvalidOptions) || g.Attempts != 0 {
		t.Errorf("TTL of MaxInt64: %v after %d reads, want ErrInvalidOptions before any read", err, g.Attempts)
	}
}

// extremeDurations are the probes of every duration option: zero, -1,
// MaxInt64, MinInt64 and the edges of the legal range.
var extremeDurations = []time.Duration{0, -1, 1, math.MaxInt64, math.MinInt64, lock.MaxTTL, lock.MaxTTL + 1, 3 * lock.MaxTTL, 3*lock.MaxTTL + 1, time.Minute}

// TestPropertyExtremeOptions: over extreme TTLs, ceilings, epochs and clocks,
// PlanAcquire either refuses naming the field or returns a plan whose
// RequeueAfter is honest (the answer is the same just before it and changes
// at it). Removing the MaxTTL range check in Options.validate makes it fail:
// TTL+1 wraps, the requeue lands in the past and the answer does not change.
func TestPropertyExtremeOptions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := lock.Options{
			TTL:               rapid.SampledFrom(extremeDurations).Draw(t, "ttl"),
			AllocatingCeiling: rapid.SampledFrom(append(extremeDurations, lock.AllocatingCeilingNever)).Draw(t, "ceiling"),
			ExpiryClock:       rapid.SampledFrom([]lock.ExpiryClock{"", lock.ObservationClock}).Draw(t, "clock"),
		}
		now := rapid.SampledFrom([]time.Time{t0, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, 1).UTC()}).Draw(t, "now")
		age := rapid.SampledFrom([]time.Duration{0, time.Second, time.Minute, lock.MaxTTL, 2 * lock.MaxTTL}).Draw(t, "age")
		at := now.Add(-age).UTC().Truncate(time.Second)
		obs := lock.Observation{Key: node1, Present: true, Version: "1", FirstObservedAt: now.Add(-age),
			Raw:       lock.Encode(lock.Record{Time: at, Namespace: "default", Name: "b", UID: "ub", Epoch: 1}, lock.FormatExtended),
			EpochHigh: rapid.SampledFrom([]uint64{0, 1, math.MaxUint64 - 1, math.MaxUint64}).Draw(t, "high")}
		h := lock.Holder{State: lock.HolderExists, Allocating: rapid.Bool().Draw(t, "allocating")}
		in := lock.AcquireInput{Observation: obs, Requester: podA, Now: now, Holder: h}
		p, err := lock.PlanAcquire(in, o)
		wantOptErr := o.TTL < 0 || o.TTL > lock.MaxTTL || (o.AllocatingCeiling < 0 && o.AllocatingCeiling != lock.AllocatingCeilingNever) || o.AllocatingCeiling > 3*lock.MaxTTL
		switch {
		case wantOptErr:
			if !errors.Is(err, lock.ErrInvalidOptions) {
				t.Fatalf("options %+v accepted: %v, %v", o, p, err)
			}
			return
		case obs.EpochHigh == math.MaxUint64:
			if !errors.Is(err, lock.ErrInvalidInput) || !slices.Contains(fieldsOf(err), "observation.epochHigh") {
				t.Fatalf("exhausted epoch: %v", err)
			}
			return
		case err != nil:
			t.Fatalf("legal input refused: %v", err)
		}
		if p.RequeueAfter < 0 {
			t.Fatalf("negative requeue: %v", p)
		}
		if p.Kind.Grants() && p.Record.Epoch != obs.EpochHigh+1 && p.Record.Epoch != 2 {
			t.Fatalf("grant epoch %d after %d", p.Record.Epoch, obs.EpochHigh)
		}
		if p.RequeueAfter > 0 {
			in.Now = now.Add(p.RequeueAfter - 1)
			before, _ := lock.PlanAcquire(in, o)
			in.Now = now.Add(p.RequeueAfter)
			after, _ := lock.PlanAcquire(in, o)
			if before.Kind != p.Kind || before.Reason != p.Reason {
				t.Fatalf("plan changed before its requeue: %v then %v", p, before)
			}
			if after.Kind == p.Kind && after.Reason == p.Reason {
				t.Fatalf("plan unchanged at its requeue after %v: %v", p.RequeueAfter, after)
			}
		}
	})
}

// TestPropertyLockerNeverSpins: whatever the backoff and options, a refused
// Acquire reads the store a bounded number of times per simulated second
// (never a busy loop) and never sleeps a negative time. Removing the
// saturation in Locker.delay makes it fail: a MaxInt64 backoff times the
// jitter converts to a negative sleep and the waiter spins.
func TestPropertyLockerNeverSpins(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		w := fake.NewWorld(1, t0)
		store := fake.NewLockStore(w)
		holder := &lock.Locker{Store: store, Clock: w.Clock}
		if _, err := holder.Acquire(ctx, node1, podB); err != nil {
			t.Fatal(err)
		}
		var sleeps []time.Duration
		b := lock.Backoff{
			Initial: rapid.SampledFrom(extremeDurations).Draw(t, "initial"),
			Max:     rapid.SampledFrom(extremeDurations).Draw(t, "max"),
			Wait:    rapid.SampledFrom([]time.Duration{time.Second, time.Minute, math.MaxInt64, -1}).Draw(t, "wait"),
			Factor:  rapid.SampledFrom([]float64{0, 1, 2, math.MaxFloat64, math.Inf(1), math.NaN()}).Draw(t, "factor"),
			Jitter:  rapid.SampledFrom([]float64{0, -1, 0.5, 1e300, math.Inf(1)}).Draw(t, "jitter"),
		}
		ttl := rapid.SampledFrom([]time.Duration{time.Second, time.Minute, lock.MaxTTL}).Draw(t, "ttl")
		if b.Wait == math.MaxInt64 {
			ttl = time.Second // waiting ten simulated years for a long TTL is legal, just slow to simulate
		}
		// The longest legal wait is one minute of one-millisecond sleeps, so a
		// waiter still sleeping after 200,000 sleeps is looping.
		const maxSleeps = 200_000
		dctx, cancel := context.WithCancel(ctx)
		defer cancel()
		l := &lock.Locker{Store: store, Options: lock.Options{TTL: ttl}, Backoff: b,
			Holder: func(context.Context, lock.Key, lock.Record) lock.Holder { return lock.Holder{State: lock.HolderExists} },
			Clock:  stepClock{Clock: w.Clock, advance: true, sleeps: &sleeps, stop: cancel, maxSleeps: maxSleeps}}
		start := w.Clock.Now()
		g, err := l.Acquire(dctx, node1, podA)
		if dctx.Err() != nil {
			t.Fatalf("Acquire still waiting after %d sleeps (%d reads, %v simulated): a busy loop", maxSleeps, g.Attempts, w.Clock.Now().Sub(start))
		}
		for _, d := range sleeps {
			if d < 0 {
				t.Fatalf("negative sleep %v in %v", d, sleeps)
			}
		}
		elapsed := w.Clock.Now().Sub(start)
		if limit := 2 + int(elapsed/time.Millisecond); g.Attempts > limit {
			t.Fatalf("%d reads in %v of simulated time: more than one per millisecond", g.Attempts, elapsed)
		}
		_ = err
	})
}

// TestZeroValues: every exported shell type's zero value is usable or says it
// is not: a zero MemoryStore stores, a zero Locker returns ErrNilStore (see
// TestNilStore), a Locker with a zero MemoryStore locks.
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	var s lock.MemoryStore
	l := &lock.Locker{Store: &s, Clock: fake.NewClock(t0)}
	g, err := l.Acquire(ctx, node1, podA)
	if err != nil || g.Record().Epoch != 1 {
		t.Fatalf("acquire on a zero MemoryStore = %v, %v", g.Plan, err)
	}
	if p, err := l.Release(ctx, node1, podA); err != nil || p.Kind != lock.Release {
		t.Fatalf("release on a zero MemoryStore = %v, %v", p, err)
	}
	var z lock.MemoryStore
	z.DeleteNode("n1")
	if z.Len() != 0 || z.Changes(node1) == nil {
		t.Errorf("zero MemoryStore: Len %d", z.Len())
	}
}

// TestHAMiPreset: lock.HAMi() is valid and restores HAMi's choices: a
// malformed value blocks forever, a re-created pod of the holder's name is the
// owner, a terminal holder is alive, an allocating holder is stolen from, and
// a comma-less value is released by anyone.
func TestHAMiPreset(t *testing.T) {
	o := lock.HAMi()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	junk := lock.Observation{Key: node1, Present: true, Raw: "lock", Version: "1", FirstObservedAt: t0.Add(-24 * time.Hour)}
	if p, _ := decide(junk, podA, t0, o, lock.Holder{}); p.Kind != lock.Invalid || p.RequeueAfter != 0 {
		t.Errorf("malformed under HAMi() = %v, want Invalid forever", p)
	}
	mine := lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:59:00Z,default,a,old-uid,3", Version: "1"}
	if p, _ := decide(mine, podA, t0, o, lock.Holder{}); p.Kind != lock.AlreadyHeld {
		t.Errorf("same name, other UID under HAMi() = %v, want AlreadyHeld", p)
	}
	other := lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:59:00Z,default,b", Version: "1"}
	if p, _ := decide(other, podA, t0, o, lock.Holder{State: lock.HolderTerminal}); p.Kind != lock.Refuse {
		t.Errorf("terminal holder under HAMi() = %v, want Refuse", p)
	}
	expired := lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:00:00Z,default,b", Version: "1"}
	if p, _ := decide(expired, podA, t0, o, lock.Holder{State: lock.HolderExists, Allocating: true}); p.Kind != lock.StealExpired {
		t.Errorf("allocating holder under HAMi() = %v, want StealExpired", p)
	}
	if p, _ := planRelease(junk, podA, o); p.Kind != lock.Release {
		t.Errorf("comma-less release under HAMi() = %v, want Release", p)
	}
}

// TestReleaseRefusalKeepsHAMiWording: a release HAMi refuses (its nil pod,
// here an empty requester) keeps HAMi's "cannot release node lock" prefix
// and still names every field in a *plancore.InvalidError.
func TestReleaseRefusalKeepsHAMiWording(t *testing.T) {
	in := lock.ReleaseInput{Observation: lock.Observation{Key: lock.Key{Name: lock.HAMiLockName, Node: "node-1"}}}
	_, err := lock.PlanRelease(in, lock.HAMi())
	var inv *plancore.InvalidError
	if err == nil || !strings.HasPrefix(err.Error(), "cannot release node lock: ") || !errors.As(err, &inv) || !errors.Is(err, lock.ErrInvalidInput) {
		t.Fatalf("release by an empty requester: %v", err)
	}
	if got := inv.Fields(); !slices.Equal(got, []string{"requester.namespace", "requester.name"}) {
		t.Errorf("fields = %v", got)
	}
}
