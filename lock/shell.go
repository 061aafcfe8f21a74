package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
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
	// contention when the lock itself is held (D11).
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

// Locker is the imperative shell around Decide and DecideRelease: it reads a
// Store, remembers when it first saw each value, looks up holders, applies
// decisions, and backs off. It is safe for concurrent use. Only Store is
// required.
type Locker struct {
	// Store holds the locks.
	Store Store
	// Options tune the decisions.
	Options Options
	// Backoff tunes retries and waiting.
	Backoff Backoff
	// Holder looks up the holder pod of rec when a decision needs it (see
	// NeedsHolder); ClassifyHolder maps a Pod Get to a Holder. Nil leaves
	// holders unchecked, so a lock held by someone else is refused with
	// ErrHolderUnknown rather than judged dangling.
	Holder func(ctx context.Context, key Key, rec Record) Holder
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits d, returning early when wake is closed (nil wake: never) and
	// with ctx's error when ctx ends. Nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration, wake <-chan struct{}) error
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
	// Decision is the decision that granted it: Acquire, a steal, or
	// AlreadyHeld. Decision.Record is the held record; its Epoch is the
	// fencing token to pass to whatever the lock protects.
	Decision Decision
	// Attempts counts store reads made.
	Attempts int
}

// Record returns the held record.
func (g Grant) Record() Record { return g.Decision.Record }

func (l *Locker) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

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

// delay returns the n-th (0-based) jittered backoff sleep.
func (l *Locker) delay(b Backoff, n int) time.Duration {
	d := float64(b.Initial)
	for range n {
		d *= b.Factor
		if d >= float64(b.Max) {
			d = float64(b.Max)
			break
		}
	}
	return time.Duration(d * (1 + b.Jitter*l.jitter()))
}

func (l *Locker) sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	if l.Sleep != nil {
		return l.Sleep(ctx, d, wake)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
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

// Acquire takes key for req: read, decide, compare-and-swap. A steal is always
// one compare-and-swap of exactly the observed value; on a failed
// precondition Acquire re-reads and decides again at once. After a write whose
// response was lost it re-reads and succeeds only if the store holds exactly
// the record it wrote. While the lock is refused it backs off (exponential,
// jittered, woken early by a release when the store is a Notifier, and never
// past the decision's RetryAt) until Backoff.Wait runs out, then returns the
// decision's error: wrapping ErrContention when the lock is held,
// ErrHolderUnknown or ErrInvalid otherwise.
func (l *Locker) Acquire(ctx context.Context, key Key, req Requester) (Grant, error) {
	b := l.Backoff.withDefaults()
	deadline := l.now().Add(b.Wait)
	var (
		attempts, conflicts, writeErrs, sleeps int
		written                                *Decision
		lastErr                                error
	)
	for {
		if err := ctx.Err(); err != nil {
			return Grant{Attempts: attempts}, errors.Join(err, lastErr)
		}
		wake := l.changes(key)
		attempts++
		obs, err := l.Store.Get(ctx, key)
		if err != nil {
			if writeErrs++; writeErrs >= b.WriteAttempts {
				return Grant{Attempts: attempts}, fmt.Errorf("lock %s: read: %w", key, err)
			}
			if err := l.sleep(ctx, l.delay(b, writeErrs-1), nil); err != nil {
				return Grant{Attempts: attempts}, errors.Join(err, lastErr)
			}
			continue
		}
		now := l.now()
		obs.FirstObservedAt = l.firstSeen(key, obs, now)
		d, err := Decide(obs, req, now, l.Options, Holder{})
		if err != nil {
			return Grant{Attempts: attempts}, err
		}
		if d.Kind == Refuse && d.Reason == ReasonHolderUnknown && l.Holder != nil {
			// With HolderNotChecked, Decide refuses with HolderUnknown exactly
			// when it needs the holder (NeedsHolder).
			h := l.Holder(ctx, key, d.Record)
			if d, err = Decide(obs, req, now, l.Options, h); err != nil {
				return Grant{Attempts: attempts}, err
			}
		}
		switch {
		case d.Kind == AlreadyHeld:
			if written != nil && d.Record.Equal(written.Record) {
				// Our earlier write took effect; its response was lost.
				return Grant{Decision: *written, Attempts: attempts}, nil
			}
			return Grant{Decision: d, Attempts: attempts}, nil
		case d.Kind.Grants():
			err := Apply(ctx, d, l.Store)
			if err == nil {
				return Grant{Decision: d, Attempts: attempts}, nil
			}
			lastErr = err
			if errors.Is(err, ErrBadInput) {
				return Grant{Attempts: attempts}, err
			}
			written = &d
			if errors.Is(err, ErrConflict) {
				if conflicts++; conflicts > b.ConflictRetries {
					return Grant{Attempts: attempts}, err
				}
				continue // re-read and re-decide at once (D1, D11)
			}
			if writeErrs++; writeErrs >= b.WriteAttempts {
				return Grant{Attempts: attempts}, err
			}
			if err := l.sleep(ctx, l.delay(b, writeErrs-1), nil); err != nil {
				return Grant{Attempts: attempts}, errors.Join(err, lastErr)
			}
			continue
		}
		// Refuse or Invalid: wait, or give up.
		conflicts = 0
		now = l.now()
		pause := l.delay(b, sleeps)
		if !d.RetryAt.IsZero() && d.RetryAt.Sub(now) < pause {
			pause = max(d.RetryAt.Sub(now), 0)
		}
		if left := deadline.Sub(now); left <= 0 {
			return Grant{Attempts: attempts}, d.Err()
		} else if pause > left {
			pause = left
		}
		sleeps++
		if err := l.sleep(ctx, pause, wake); err != nil {
			return Grant{Attempts: attempts}, errors.Join(err, d.Err())
		}
	}
}

// Release gives key back for req, owner-checked: read, DecideRelease,
// compare-and-delete of exactly the observed value. On a failed precondition
// it re-reads and decides again, so a lock re-stamped by the same owner is
// still released and a lock taken by someone else is kept. It returns the
// last decision: NoOp(NotLocked) after a release whose response was lost,
// NoOp(NotOwner) when the lock is someone else's (not an error, as in HAMi).
func (l *Locker) Release(ctx context.Context, key Key, req Requester) (ReleaseDecision, error) {
	return l.release(ctx, key, func(obs Observation) (ReleaseDecision, error) {
		return DecideRelease(obs, req, l.Options)
	})
}

// ForceRelease removes whatever key holds, owner or not, still as a
// compare-and-delete of exactly the value it read (see the function
// ForceRelease). It is for administrators, not for stealing.
func (l *Locker) ForceRelease(ctx context.Context, key Key) (ReleaseDecision, error) {
	var first *string
	return l.release(ctx, key, func(obs Observation) (ReleaseDecision, error) {
		if first == nil {
			first = &obs.Raw
		} else if !obs.Present || obs.Raw != *first {
			// Never remove a value written after the first read.
			return ReleaseDecision{Kind: NoOp, Reason: ReasonNotOwner, Key: key}, nil
		}
		return ForceRelease(obs)
	})
}

func (l *Locker) release(ctx context.Context, key Key, decide func(Observation) (ReleaseDecision, error)) (ReleaseDecision, error) {
	b := l.Backoff.withDefaults()
	var conflicts, writeErrs int
	for {
		if err := ctx.Err(); err != nil {
			return ReleaseDecision{}, err
		}
		obs, err := l.Store.Get(ctx, key)
		if err == nil {
			var d ReleaseDecision
			if d, err = decide(obs); err != nil {
				return ReleaseDecision{}, err
			}
			if err = ApplyRelease(ctx, d, l.Store); err == nil {
				return d, nil
			}
			if errors.Is(err, ErrConflict) {
				if conflicts++; conflicts > b.ConflictRetries {
					return ReleaseDecision{}, err
				}
				continue
			}
		}
		if writeErrs++; writeErrs >= b.WriteAttempts {
			return ReleaseDecision{}, fmt.Errorf("lock %s: release: %w", key, err)
		}
		if err := l.sleep(ctx, l.delay(b, writeErrs-1), nil); err != nil {
			return ReleaseDecision{}, err
		}
	}
}
