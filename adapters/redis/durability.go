package redis

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Replication in Redis is asynchronous: a primary answers a write before its
// replicas have it, and a failover to a replica loses what the replica had
// not received. A store that acknowledged a grant the new primary never saw
// would grant the same slot, or the same lock and fencing epoch, twice.
//
// The capacity and lock stores therefore follow their granting writes with
// WAIT on the connection that wrote (in the same pipeline: one round trip),
// and answer only once every replica of the primary has the write. WAIT
// covers every write of the replication stream up to the connection's last
// one, since a replica applies the stream in order. What "every replica"
// means is learned from ROLE, which lists the replicas that finished their
// initial sync and are streamed to (one still syncing is not listed, so it
// does not make calls fail while it loads; it has no consistent data set to
// be promoted with until it is online):
//
//   - After a granting write the pipeline sends WAIT <n> <timeout> and then
//     ROLE, where n is the number of replicas last seen. The write is
//     acknowledged only if WAIT's count reaches the number ROLE lists at
//     that moment; otherwise the call fails with an unknown outcome (an
//     error, never a grant), and the next call waits for the new number.
//     So a replica that attaches while others are attached is waited for
//     from the first call that can see it; a replica that leaves costs one
//     call a WAIT timeout, not an error.
//   - A standalone or Sentinel primary seen without replicas costs nothing
//     per call: the store sends no WAIT and no ROLE, and looks again with
//     one ROLE round trip at most every replicaRecheck (by whichever call
//     comes first), and at once after a call failed (a failover makes the
//     client reconnect, maybe to another primary). Until that look, a
//     replica that came online meanwhile may miss a grant acknowledged
//     without waiting: the only window, at most replicaRecheck long and only
//     after a primary without replicas gains its first.
//   - On Redis Cluster every shard's pipeline sends WAIT and ROLE, with the
//     shard's own last-seen count (WAIT 0 answers at once), so there is no
//     such window there.
//
// An explicit WaitReplicas n sends WAIT n after every granting write and
// asks nothing of ROLE; AcceptLossOnFailover sends no WAIT at all.

// replicaRecheck is how long a store that saw no replicas trusts that.
const replicaRecheck = time.Second

// waitMode is what a store waits for after a granting write.
type waitMode uint8

const (
	waitAll   waitMode = iota // every replica ROLE lists (the default)
	waitFixed                 // exactly WaitReplicas replicas
	waitNone                  // AcceptLossOnFailover: no WAIT
)

// waitSpec is the WAIT a pipeline ends with: none when !on; else
// WAIT n ms, and with role set ROLE after it, whose replica count WAIT's
// must reach.
type waitSpec struct {
	on, role bool
	n, ms    int64
}

// replicaWait decides the WAIT of a store's granting writes and remembers the
// replicas it has seen: for a standalone or Sentinel client in known, for
// each Cluster shard (by address) in shards.
type replicaWait struct {
	mode  waitMode
	n, ms int64

	base  time.Time    // the monotonic origin of next
	known atomic.Int64 // replicas seen at the last look or call
	next  atomic.Int64 // ns since base: when a store without replicas looks again
	stale atomic.Bool  // a call failed: look before the next write

	shards sync.Map // shard address → *atomic.Int64
}

// validateReplicaWait checks the replica-waiting options both stores take,
// naming each bad field.
func validateReplicaWait(n int, timeout time.Duration, acceptLoss bool) field.ErrorList {
	var errs field.ErrorList
	if n < 0 {
		errs = append(errs, field.Invalid(field.NewPath("waitReplicas"), n, "must not be negative"))
	}
	if acceptLoss && n > 0 {
		errs = append(errs, field.Invalid(field.NewPath("waitReplicas"), n, "cannot be combined with acceptLossOnFailover, which sends no WAIT"))
	}
	if timeout != 0 && timeout < time.Millisecond {
		errs = append(errs, field.Invalid(field.NewPath("waitTimeout"), timeout, "must be at least 1ms (WAIT 0 would block forever)"))
	}
	return errs
}

// newReplicaWait returns the WAIT policy for the options: fixed n > 0, none
// when acceptLoss, else all replicas; timeout 0 means 100ms.
func newReplicaWait(n int, timeout time.Duration, acceptLoss bool) *replicaWait {
	w := &replicaWait{mode: waitAll, n: int64(n), ms: 100, base: time.Now()}
	if timeout != 0 {
		w.ms = timeout.Milliseconds()
	}
	switch {
	case acceptLoss:
		w.mode = waitNone
	case n > 0:
		w.mode = waitFixed
	}
	return w
}

// doer is a client that sends any command, as ROLE needs.
type doer interface {
	Do(ctx context.Context, args ...any) *goredis.Cmd
}

// standalone returns the WAIT of the next granting write through c, a client
// of one primary (standalone, Sentinel, or a proxy), looking at the
// primary's replicas with ROLE when due. A failed look is an error: the
// write has not been sent, and without knowing the replicas it must not be.
// The common case, a primary without replicas and a look not due, is two
// atomic loads and a clock read.
func (w *replicaWait) standalone(ctx context.Context, c any) (waitSpec, error) {
	switch w.mode {
	case waitNone:
		return waitSpec{}, nil
	case waitFixed:
		return waitSpec{on: true, n: w.n, ms: w.ms}, nil
	}
	if k := w.known.Load(); k > 0 {
		return waitSpec{on: true, role: true, n: k, ms: w.ms}, nil
	}
	now := int64(time.Since(w.base))
	next := w.next.Load()
	stale := w.stale.Load()
	if !stale && (now < next || !w.next.CompareAndSwap(next, now+int64(replicaRecheck))) {
		// Not due, or another call is looking right now.
		return waitSpec{}, nil
	}
	if err := w.look(ctx, c); err != nil {
		return waitSpec{}, err
	}
	if k := w.known.Load(); k > 0 {
		return waitSpec{on: true, role: true, n: k, ms: w.ms}, nil
	}
	return waitSpec{}, nil
}

// look asks the primary behind c for its replicas (ROLE) and records them.
func (w *replicaWait) look(ctx context.Context, c any) error {
	d, ok := c.(doer)
	if !ok {
		return fmt.Errorf("client %T cannot send ROLE", c)
	}
	n, err := replicasOf(d.Do(ctx, "ROLE"))
	if err != nil {
		w.stale.Store(true)
		return err
	}
	w.known.Store(n)
	w.next.Store(int64(time.Since(w.base)) + int64(replicaRecheck))
	w.stale.Store(false)
	return nil
}

// failed notes that a call through the standalone client failed: the next
// call looks at the replicas again before it writes.
func (w *replicaWait) failed() {
	if w.mode == waitAll {
		w.stale.Store(true)
	}
}

// shard returns the WAIT of a pipeline to the Cluster shard at addr, or with
// addr "" to the standalone client, with ROLE on every call.
func (w *replicaWait) shard(addr string) waitSpec {
	switch w.mode {
	case waitNone:
		return waitSpec{}
	case waitFixed:
		return waitSpec{on: true, n: w.n, ms: w.ms}
	}
	var k int64
	if addr == "" {
		k = w.known.Load()
	} else if v, ok := w.shards.Load(addr); ok {
		k = v.(*atomic.Int64).Load()
	}
	return waitSpec{on: true, role: true, n: k, ms: w.ms}
}

// saw records the replicas ROLE listed on the shard at addr ("" for the
// standalone client).
func (w *replicaWait) saw(addr string, n int64) {
	if addr == "" {
		w.known.Store(n)
		if n == 0 {
			w.next.Store(int64(time.Since(w.base)) + int64(replicaRecheck))
		}
		return
	}
	v, _ := w.shards.LoadOrStore(addr, new(atomic.Int64))
	v.(*atomic.Int64).Store(n)
}

// replicasOf reads a ROLE reply: the number of replicas a primary streams to,
// or an error if the server is not a primary.
func replicasOf(cmd *goredis.Cmd) (int64, error) {
	v, err := cmd.Slice()
	if err != nil {
		return 0, fmt.Errorf("ROLE: %w", err)
	}
	if len(v) < 3 || v[0] != "master" {
		return 0, fmt.Errorf("ROLE: the server is not a primary (%v)", v)
	}
	reps, ok := v[2].([]any)
	if !ok {
		return 0, fmt.Errorf("ROLE: malformed replica list %v", v[2])
	}
	return int64(len(reps)), nil
}

// sendWait appends the WAIT (and ROLE) of w to the pipeline p.
func sendWait(ctx context.Context, p goredis.Pipeliner, w waitSpec) (wait, role *goredis.Cmd) {
	if !w.on {
		return nil, nil
	}
	wait = p.Do(ctx, "WAIT", w.n, w.ms)
	if w.role {
		role = p.Do(ctx, "ROLE")
	}
	return wait, role
}

// waitResult reads the replies of sendWait after Exec: the replicas ROLE
// listed (-1 without ROLE) and an error when fewer replicas than required
// acknowledged the pipeline's writes in time.
func waitResult(w waitSpec, wait, role *goredis.Cmd) (int64, error) {
	if wait == nil {
		return -1, nil
	}
	acked, err := wait.Int64()
	if err != nil {
		return -1, fmt.Errorf("WAIT: %w", err)
	}
	if role == nil {
		if acked < w.n {
			return -1, fmt.Errorf("WAIT: %d of %d replicas acknowledged within %dms", acked, w.n, w.ms)
		}
		return -1, nil
	}
	n, err := replicasOf(role)
	if err != nil {
		return -1, err
	}
	if acked < n {
		return n, fmt.Errorf("WAIT: %d of %d replicas acknowledged within %dms", acked, n, w.ms)
	}
	return n, nil
}
