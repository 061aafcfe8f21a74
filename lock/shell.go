package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
)

// Backoff tunes Locker's waiting. The zero value means the defaults below.
type Backoff struct {
	// Initial is the first sleep (default 100 ms, HAMi's DefaultStrategy).
	Initial time.Duration
	// Factor multiplies the sleep after each attempt (default 2.0, HAMi v2.9+).
	Factor float64
	// Max caps one sleep (default 1 s).
	Max time.Duration
	// Jitter stretches each sleep by a random factor in [1, 1+Jitter)
	// (default 0.5, HAMi v2.9+). Negative means none.
	Jitter float64
	// Wait is how long Acquire keeps retrying while the lock is refused
	// (held, invalid, holder unknown). Zero means no waiting: one decision, as
	// HAMi's LockNode does; the context's deadline also bounds it.
	Wait time.Duration
	// WriteAttempts bounds attempts after store errors other than conflicts
	// (default 5, HAMi's DefaultStrategy.Steps).
	WriteAttempts int
	// ConflictRetries bounds immediate re-decisions after consecutive
	// precondition failures (default 10). HAMi counts a 409 from any Node
	// write as a failed attempt; plancore re-reads at once and only reports
	// contention when the lock itself is held.
	ConflictRetries int
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 100 * time.Millisecond
	}
	if b.Factor < 1 {
		b.Factor = 2
	}
	if b.Max <= 0 {
		b.Max = time.Second
	}
	if b.Jitter == 0 {
		b.Jitter = 0.5
	} else if b.Jitter < 0 {
		b.Jitter = 0
	}
	if b.WriteAttempts <= 0 {
		b.WriteAttempts = 5
	}
	if b.ConflictRetries <= 0 {
		b.ConflictRetries = 10
	}
	return b
}

// Locker is the imperative shell around PlanAcquire and PlanRelease, on the
// wall clock unless Clock is set: it reads a Store, remembers when it first saw each value, looks up holders, applies
// plans, and backs off. It is safe for concurrent use. Only Store is required;
// a Locker without one returns ErrNilStore.
type Locker struct {
	// Store holds the locks.
	Store Store
	// Options tune the plans.
	Options Options
	// Backoff tunes retries and waiting.
	Backoff Backoff
	// Holder looks up the holder pod of rec when a plan needs it (see
	// NeedsHolder); ClassifyHolder maps a Pod Get to a Holder. Nil leaves
	// holders unchecked, so a lock held by someone else is refused with
	// ErrHolderUnknown rather than judged dangling.
	Holder func(ctx context.Context, key Key, rec Record) Holder
	// Clock reads the time and runs the backoff timers; nil means the real
	// clock. Tests pass a fake.Clock.
	Clock clock.Clock
	// Rand draws the jitter. Nil means a generator seeded from the clock;
	// tests pass a seeded one so runs repeat.
	Rand *rand.Rand

	mu   sync.Mutex
	seen map[Key]sighting
}

// sighting is when a Locker first saw a key's current value.
type sighting struct {
	raw, sidecar string
	at           time.Time
}

// Grant is a lock the requester holds.
type Grant struct {
	// Plan is the plan that granted it: Acquire, a steal, or AlreadyHeld.
	// Plan.Record is the held record; its Epoch is the fencing token to pass
	// to whatever the lock protects.
	Plan Plan
	// Attempts counts store reads made.
	Attempts int
}

// Record returns the held record.
func (g Grant) Record() Record { return g.Plan.Record }

func (l *Locker) clock() clock.Clock {
	if l.Clock != nil {
		return l.Clock
	}
	return clock.RealClock{}
}

func (l *Locker) now() time.Time { return l.clock().Now() }

// firstSeen records obs and returns when its value was first seen by l.
func (l *Locker) firstSeen(key Key, obs Observation, now time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !obs.Present {
		delete(l.seen, key)
		return time.Time{}
	}
	if s, ok := l.seen[key]; ok && s.raw == obs.Raw && s.sidecar == obs.Sidecar {
		return s.at
	}
	if l.seen == nil {
		l.seen = map[Key]sighting{}
	}
	l.seen[key] = sighting{raw: obs.Raw, sidecar: obs.Sidecar, at: now}
	return now
}

// Forget drops what l remembers about node's locks, e.g. when the Node is
// deleted.
func (l *Locker) Forget(node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.seen {
		if k.Node == node {
			delete(l.seen, k)
		}
	}
}

func (l *Locker) jitter() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Rand == nil {
		seed := uint64(time.Now().UnixNano())
		l.Rand = rand.New(rand.NewPCG(seed, seed>>17|1))
	}
	return l.Rand.Float64()
}

// delay returns the n-th (0-based) jittered backoff sleep, saturated at
// maxSleep so hostile Backoff values can neither overflow into a negative
// sleep nor spin.
func (l *Locker) delay(b Backoff, n int) time.Duration {
	d := float64(b.Initial)
	for range n {
		d *= b.Factor
		if d >= float64(b.Max) {
			d = float64(b.Max)
			break
		}
	}
	d *= 1 + b.Jitter*l.jitter()
	if d >= float64(maxSleep) || d != d {
		return maxSleep
	}
	return max(time.Duration(d), time.Millisecond)
}

// maxSleep bounds one backoff sleep.
const maxSleep = time.Hour

// sleep waits d on the clock, returning early when wake is closed (nil wake:
// never) and with ctx's error when ctx ends.
func (l *Locker) sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	t := l.clock().NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
	case <-wake:
	}
	return nil
}

func (l *Locker) changes(key Key) <-chan struct{} {
	if n, ok := l.Store.(Notifier); ok {
		return n.Changes(key)
	}
	return nil
}

// acquireRun is the state of one Acquire call.
type acquireRun struct {
	l                                      *Locker
	b                                      Backoff
	key                                    Key
	req                                    Requester
	deadline                               time.Time
	attempts, conflicts, writeErrs, sleeps int
	written                                *Plan
	lastErr                                error
}

func (r *acquireRun) fail(err error) (Grant, error) { return Grant{Attempts: r.attempts}, err }

// Acquire takes key for req: read, plan, compare-and-swap. A steal is always
// one compare-and-swap of exactly the observed value; on a failed
// precondition Acquire re-reads and plans again at once. After a write whose
// response was lost it re-reads and succeeds only if the store holds exactly
// the record it wrote. While the lock is refused it backs off (exponential,
// jittered, woken early by a release when the store is a Notifier, and never
// past the plan's RequeueAfter) until Backoff.Wait runs out, then returns the
// plan's error: wrapping ErrContention when the lock is held,
// ErrHolderUnknown or ErrInvalid otherwise. Invalid input, from the caller or
// from the store, is returned at once, never retried.
func (l *Locker) Acquire(ctx context.Context, key Key, req Requester) (Grant, error) {
	if l.Store == nil {
		return Grant{}, ErrNilStore
	}
	if err := validateBoth(append(key.validate(func() *field.Path { return field.NewPath("key") }), req.validate(requesterPath)...), l.Options); err != nil {
		return Grant{}, err
	}
	b := l.Backoff.withDefaults()
	r := &acquireRun{l: l, b: b, key: key, req: req, deadline: l.now().Add(min(max(b.Wait, 0), MaxTTL))}
	for {
		if err := ctx.Err(); err != nil {
			return r.fail(errors.Join(err, r.lastErr))
		}
		g, done, err := r.attempt(ctx)
		if done {
			return g, err
		}
	}
}

// attempt is one read-plan-write round; done reports that Acquire returns.
func (r *acquireRun) attempt(ctx context.Context) (Grant, bool, error) {
	l := r.l
	wake := l.changes(r.key)
	r.attempts++
	obs, err := l.Store.Get(ctx, r.key)
	if err != nil {
		return r.afterError(ctx, fmt.Errorf("lock %s: read: %w", r.key, err))
	}
	now := l.now()
	obs.FirstObservedAt = l.firstSeen(r.key, obs, now)
	in := AcquireInput{Observation: obs, Requester: r.req, Now: now}
	p, err := PlanAcquire(in, l.Options)
	if err != nil {
		g, err := r.fail(err)
		return g, true, err
	}
	if p.Kind == Refuse && p.Reason.Code == ReasonHolderUnknown && l.Holder != nil {
		// With HolderNotChecked, PlanAcquire refuses with HolderUnknown
		// exactly when it needs the holder (NeedsHolder).
		in.Holder = l.Holder(ctx, r.key, p.Record)
		if p, err = PlanAcquire(in, l.Options); err != nil {
			g, err := r.fail(err)
			return g, true, err
		}
	}
	switch {
	case p.Kind == AlreadyHeld:
		if r.written != nil && p.Record.Equal(r.written.Record) {
			// Our earlier write took effect; its response was lost.
			return Grant{Plan: *r.written, Attempts: r.attempts}, true, nil
		}
		return Grant{Plan: p, Attempts: r.attempts}, true, nil
	case p.Kind.Grants():
		return r.write(ctx, p)
	}
	return r.wait(ctx, p, now, wake)
}

// write applies a grant.
func (r *acquireRun) write(ctx context.Context, p Plan) (Grant, bool, error) {
	_, err := Apply(ctx, p, r.l.Store)
	if err == nil {
		return Grant{Plan: p, Attempts: r.attempts}, true, nil
	}
	r.written = &p
	if errors.Is(err, ErrConflict) && !errors.Is(err, ErrInvalidInput) {
		r.lastErr = err
		if r.conflicts++; r.conflicts > r.b.ConflictRetries {
			g, err := r.fail(err)
			return g, true, err
		}
		return Grant{}, false, nil // re-read and re-plan at once
	}
	return r.afterError(ctx, err)
}

// afterError backs off after a store error other than a conflict, or gives up:
// at once for invalid input, after Backoff.WriteAttempts otherwise.
func (r *acquireRun) afterError(ctx context.Context, err error) (Grant, bool, error) {
	r.lastErr = err
	if errors.Is(err, ErrInvalidInput) {
		g, err := r.fail(err)
		return g, true, err
	}
	if r.writeErrs++; r.writeErrs >= r.b.WriteAttempts {
		g, err := r.fail(err)
		return g, true, err
	}
	if err := r.l.sleep(ctx, r.l.delay(r.b, r.writeErrs-1), nil); err != nil {
		g, err := r.fail(errors.Join(err, r.lastErr))
		return g, true, err
	}
	return Grant{}, false, nil
}

// wait sleeps after a Refuse or Invalid plan made at planned, or gives up once
// Backoff.Wait has run out.
func (r *acquireRun) wait(ctx context.Context, p Plan, planned time.Time, wake <-chan struct{}) (Grant, bool, error) {
	r.conflicts = 0
	now := r.l.now()
	pause := r.l.delay(r.b, r.sleeps)
	if p.RequeueAfter > 0 {
		pause = min(pause, max(p.RequeueAfter-now.Sub(planned), 0))
	}
	left := r.deadline.Sub(now)
	if left <= 0 {
		g, err := r.fail(p.Err())
		return g, true, err
	}
	pause = min(pause, left)
	r.sleeps++
	if err := r.l.sleep(ctx, pause, wake); err != nil {
		g, err := r.fail(errors.Join(err, p.Err()))
		return g, true, err
	}
	return Grant{}, false, nil
}

// Release gives key back for req, owner-checked: read, PlanRelease,
// compare-and-delete of exactly the observed value. On a failed precondition
// it re-reads and plans again, so a lock re-stamped by the same owner is
// still released and a lock taken by someone else is kept. It returns the
// last plan: NoOp(NotLocked) after a release whose response was lost,
// NoOp(NotOwner) when the lock is someone else's (not an error, as in HAMi).
func (l *Locker) Release(ctx context.Context, key Key, req Requester) (Plan, error) {
	return l.release(ctx, key, func(obs Observation, first *string) (Plan, error) {
		return PlanRelease(ReleaseInput{Observation: obs, Requester: req, FirstRead: first}, l.Options)
	})
}

// ForceRelease removes whatever key holds, owner or not, still as a
// compare-and-delete of exactly the value it read (ReleaseInput.Force). It is
// for administrators, not for stealing: after a conflict it never removes a
// value written after its first read.
func (l *Locker) ForceRelease(ctx context.Context, key Key) (Plan, error) {
	return l.release(ctx, key, func(obs Observation, first *string) (Plan, error) {
		return PlanRelease(ReleaseInput{Observation: obs, Force: true, FirstRead: first}, l.Options)
	})
}

// release reads, plans and compare-and-deletes until the plan is applied; the
// plan sees the first read's value on every re-read.
func (l *Locker) release(ctx context.Context, key Key, plan func(obs Observation, firstRead *string) (Plan, error)) (Plan, error) {
	if l.Store == nil {
		return Plan{}, ErrNilStore
	}
	if err := key.Validate(); err != nil {
		return Plan{}, err
	}
	b := l.Backoff.withDefaults()
	var conflicts, writeErrs int
	var firstRead *string
	for {
		if err := ctx.Err(); err != nil {
			return Plan{}, err
		}
		obs, err := l.Store.Get(ctx, key)
		if err == nil {
			var p Plan
			if p, err = plan(obs, firstRead); err != nil {
				return Plan{}, err
			}
			if _, err = Apply(ctx, p, l.Store); err == nil {
				return p, nil
			}
			if errors.Is(err, ErrConflict) {
				if conflicts++; conflicts > b.ConflictRetries {
					return Plan{}, err
				}
				if firstRead == nil {
					raw := obs.Raw
					firstRead = &raw
				}
				continue
			}
		}
		if errors.Is(err, ErrInvalidInput) {
			return Plan{}, fmt.Errorf("lock %s: release: %w", key, err)
		}
		if writeErrs++; writeErrs >= b.WriteAttempts {
			return Plan{}, fmt.Errorf("lock %s: release: %w", key, err)
		}
		if err := l.sleep(ctx, l.delay(b, writeErrs-1), nil); err != nil {
			return Plan{}, err
		}
	}
}
