// Package lock decides per-node distributed lock operations: HAMi's node lock
// (the hami.io/mutex.lock Node annotation that serializes Bind and
// Allocate), kept wire-compatible and made safe.
//
// The core is pure. PlanAcquire takes an AcquireInput (the Observation a
// store returned: the raw value, the store's compare-and-swap version, the
// epoch high-water mark, when the caller first saw the value; the Requester;
// the holder pod's state; Now) and Options, and returns a Plan: Acquire,
// AlreadyHeld, StealExpired, StealDangling, Refuse or Invalid, with a
// Reason{Code, Message}, the exact Record to write, the Precondition the
// write must be conditioned on, and for refusals a RequeueAfter. PlanRelease
// is the owner-checked (or forced) release, with the kinds Release and NoOp.
// Apply performs a plan's one conditional write. Encode and Decode are the
// value codec. Locker is the imperative shell that reads a Store, plans,
// compare-and-swaps and backs off; MemoryStore is an in-memory Store, and the
// adapters module has Redis and Node-annotation ones. HAMi() is the preset
// that reproduces HAMi's behaviour.
//
// Invalid input is refused with every problem at once: an error wrapping
// ErrInvalidInput or ErrInvalidOptions, a *plancore.InvalidError naming each
// field path (observation.key.node, requester.name, now, options.ttl, ...) and
// its value. A zero Now is invalid; so is a TTL above MaxTTL, which keeps
// every instant the planner computes from wrapping. A nil Store is an error
// wrapping ErrNilStore, and a zero Locker says so instead of panicking.
//
// # Usage
//
// With the shell:
//
//	l := &lock.Locker{
//		Store:   lock.NewMemoryStore(),
//		Holder:  lookupPod, // e.g. a Pod Get mapped by lock.ClassifyHolder
//		Backoff: lock.Backoff{Wait: 2 * time.Second},
//		// Clock: nil means the real clock; tests pass a fake.Clock.
//	}
//	g, err := l.Acquire(ctx, lock.NodeKey("node-1"), lock.Requester{Namespace: "default", Name: "p1", UID: "u1"})
//	if errors.Is(err, lock.ErrContention) { /* someone else holds it */ }
//	// ... use g.Record().Epoch as the fencing token ...
//	_, err = l.Release(ctx, lock.NodeKey("node-1"), req)
//
// Or plan by hand:
//
//	obs, _ := store.Get(ctx, key)
//	p, err := lock.PlanAcquire(lock.AcquireInput{Observation: obs, Requester: req, Holder: holder, Now: now}, lock.Options{})
//	report, err := lock.Apply(ctx, p, store) // one compare-and-swap for grants, nothing otherwise
//	// a Refuse carries p.RequeueAfter: try again then (controller-runtime's Result.RequeueAfter)
//
// # Obligations
//
//  1. Read the lock (Store.Get) and, for a held one, whether its holder
//     still exists (Holder), before planning.
//  2. Write a grant as ONE compare-and-swap of exactly Plan.Record under
//     exactly Plan.Precondition, and a release as one compare-and-delete;
//     Apply does exactly this.
//  3. On a failed precondition (ErrConflict), read again and plan again:
//     never overwrite or delete a value read a second time.
//  4. Use the record's epoch as the fencing token on every write the lock
//     protects, and refuse any write carrying an older one.
//  5. Release what you acquired when done, and on a Refuse try again after
//     Plan.RequeueAfter.
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
// PlanAcquire, NeedsHolder, PlanRelease, Encode, Decode and ClassifyHolder
// read no clock, draw no randomness, do no IO and never mutate their inputs:
// the same inputs give the same output, byte for byte in String(). Time
// enters only as AcquireInput.Now and Observation.FirstObservedAt; a release
// reads no time, so ReleaseInput has no Now. Only Locker (shell.go) reads the
// clock (its Clock field, a k8s.io/utils/clock Clock), sleeps and draws
// jitter, from an injectable seeded *rand.Rand.
//
// # Compatibility
//
// Defaults follow HAMi v2.10's LockNode and ReleaseNodeLock, with these
// deliberate differences; HAMi() restores HAMi's choice wherever a user might
// depend on it:
//
//   - HAMi steals an expired or dangling lock by releasing a re-read value
//     and then setting it, so two stealers can both win. A steal here is one
//     compare-and-swap of exactly the observed value; on conflict the shell
//     re-reads and plans again. No option brings the race back.
//   - HAMi blocks a node with a malformed value until a human deletes it.
//     Here it becomes stealable once it has been seen unchanged for TTL
//     (Options.Malformed = BlockForever restores HAMi).
//   - Expiry is measured on the writer's clock, as HAMi does, but a timestamp
//     more than TTL in the future counts as malformed (HAMi would never expire
//     it). ObservationClock measures from local first observation instead, as
//     a Kubernetes Lease does.
//   - Ownership compares UIDs when both sides have one, so a re-created pod of
//     the same name does not inherit the lock (HAMi #2570; Options.Identity =
//     NameOnly restores HAMi's namespace/name).
//   - Every grant carries an epoch, strictly increasing per key and kept
//     across releases, for fencing (HAMi #3076, #3096).
//   - Succeeded and Failed holders are dangling and are stolen at once (HAMi
//     #1368 holds them until TTL: Options.TerminalHolderAlive).
//   - An expired lock whose holder is still allocating is not stolen until
//     3 × TTL (HAMi #3096 steals it: Options.StealFromAllocatingHolder,
//     AllocatingCeiling).
//   - Options.TTL is the only timeout; ResolveTTL applies HAMi's flag and
//     environment precedence correctly and refuses a bad environment value
//     (HAMi #2790 lets the flag default override the environment).
//   - A value without a comma is not released by just anyone (HAMi #2054:
//     Options.LegacyReleasableByAnyone).
//   - A conflict caused by an unrelated write is retried at once, not
//     reported as contention (HAMi counts any 409 as a failed attempt).
//   - A TTL above MaxTTL, an allocating ceiling above 3 × MaxTTL, and a
//     store's validation error are refused at once (HAMi has no range check).
//
// The expiry boundary is HAMi's: a lock is expired when its age is strictly
// greater than TTL. Re-entry by the same owner (HAMi #2255) writes nothing and
// does not refresh the timestamp (HAMi #2570). Refusals wrap ErrContention with
// HAMi's message "node <node> has been locked within <TTL>: node lock
// contention". Release uses HAMi's owner-suffix rule for 3-part values
// (",<ns>,<name>", leading comma included, HAMi #1433).
package lock
