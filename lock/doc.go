// Package lock decides per-node distributed lock operations: HAMi's node lock
// (the hami.io/mutex.lock Node annotation that serializes Bind and
// Allocate), kept wire-compatible and made safe.
//
// The core is pure. Decide takes what a store returned (an Observation: the
// raw value, the store's compare-and-swap version, the epoch high-water mark,
// when the caller first saw the value), the Requester, Now, Options and the
// holder pod's state, and returns a Decision: Acquire, AlreadyHeld,
// StealExpired, StealDangling, Refuse (with the time the answer may change) or
// Invalid, together with the exact Record to write and the Precondition the
// write must be conditioned on. DecideRelease is the owner-checked release.
// Encode and Decode are the value codec. Locker is the imperative shell that
// reads a Store, decides, compare-and-swaps and backs off; MemoryStore is an
// in-memory Store, and the adapters module has Redis and Node-annotation ones.
//
// # Usage
//
// With the shell:
//
//	l := &lock.Locker{
//		Store:  lock.NewMemoryStore(),
//		Holder: lookupPod, // e.g. a Pod Get mapped by lock.ClassifyHolder
//		Backoff: lock.Backoff{Wait: 2 * time.Second},
//	}
//	g, err := l.Acquire(ctx, lock.NodeKey("node-1"), lock.Requester{Namespace: "default", Name: "p1", UID: "u1"})
//	if errors.Is(err, lock.ErrContention) { /* someone else holds it */ }
//	// ... use g.Record().Epoch as the fencing token ...
//	_, err = l.Release(ctx, lock.NodeKey("node-1"), req)
//
// Or decide by hand:
//
//	obs, _ := store.Get(ctx, key)
//	d, err := lock.Decide(obs, req, now, lock.Options{}, holder)
//	err = lock.Apply(ctx, d, store) // one compare-and-swap for grants, nothing otherwise
//
// # Value formats
//
// Decode reads three formats and reports anything else as malformed (wrapping
// ErrInvalid), never panicking:
//
//	2026-06-14T15:05:03Z                          legacy (HAMi ≤ v2.3, nil pod): no owner
//	2026-06-14T15:05:03+08:00,default,gang-pod-1  HAMi (v2.4+): any zone offset is read
//	2026-06-14T15:05:03Z,,                        HAMi, unnamed owner: only expiry frees it
//	2026-06-14T15:05:03Z,default,p1,uid-1,7       plancore extended: UID and epoch
//	lock, "", a,b, a,b,c,d, 6+ parts              malformed (HAMi before v2.8 read 2/4/6+ parts as legacy)
//
// plancore writes UTC at whole seconds. Stores that share a key with HAMi keep
// the HAMi format in the main value and the extended record in a sidecar
// (EncodeNode, SidecarAnnotation).
//
// # Determinism
//
// Decide, NeedsHolder, DecideRelease, ForceRelease, Encode, Decode and
// ClassifyHolder read no clock, draw no randomness, do no IO and never mutate
// their inputs: the same inputs give the same output, byte for byte in
// String(). Decide does not allocate. Time enters only as Now and
// Observation.FirstObservedAt. Only Locker (shell.go) reads the clock, sleeps
// and draws jitter, from an injectable seeded *rand.Rand.
//
// # Compatibility
//
// Defaults follow HAMi v2.10's LockNode and ReleaseNodeLock with its defects
// fixed; each fix that a user might depend on has a compat option:
//
//   - D1: HAMi steals by releasing a re-read value and then setting, so two
//     stealers can both win. A steal here is one compare-and-swap of exactly
//     the observed value; on conflict the shell re-reads and re-decides. No
//     option brings the race back.
//   - D2: HAMi blocks a node with a malformed value forever. Here it becomes
//     stealable after it has been seen unchanged for TTL (Options.Malformed =
//     BlockForever restores HAMi).
//   - D3: expiry is measured on the writer's clock, as HAMi does; a timestamp
//     more than TTL in the future counts as malformed. ObservationClock
//     measures from local first observation instead, as a Kubernetes Lease does.
//   - D4: ownership compares UIDs when both sides have one (Options.Identity
//     = NameOnly restores HAMi's namespace/name).
//   - D5: every grant carries an epoch, strictly increasing per key and kept
//     across releases, for fencing.
//   - D6: Succeeded/Failed holders are dangling (Options.TerminalHolderAlive).
//   - D7: an expired lock whose holder is still allocating is not stolen
//     until 3 × TTL (Options.StealFromAllocatingHolder, AllocatingCeiling).
//   - D8: Options.TTL is the only timeout; ResolveTTL applies HAMi's flag and
//     environment precedence correctly.
//   - D10: a value without a comma is not released by just anyone
//     (Options.LegacyReleasableByAnyone).
//   - D11: a conflict caused by an unrelated write is retried at once, not
//     reported as contention.
//
// The expiry boundary is HAMi's: a lock is expired when its age is strictly
// greater than TTL. Re-entry by the same owner (HAMi #2255) writes nothing and
// does not refresh the timestamp (#2570). Refusals wrap ErrContention with
// HAMi's message "node <node> has been locked within <TTL>: node lock
// contention". Release uses HAMi's owner-suffix rule for 3-part values
// (",<ns>,<name>", leading comma included, #1433).
package lock
