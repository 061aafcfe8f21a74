package capacity

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// hbState is the last applied heartbeat of a node.
type hbState struct {
	known   bool
	epoch   uint64
	seq     uint64
	running int
	max     int
	recv    time.Time
	usage   Usage
}

type lease struct {
	rid    string
	expiry time.Time
}

type ackEntry struct {
	rid string
	seq uint64
}

// nodeState is one node's accounting, the mutable form shared by NodeLedger
// (which clones before every change) and MemoryStore (which owns its states under
// a shard mutex). Every transition (reserve, ack, release, heartbeat) lives here once, so the
// ledger, the in-memory store and the Lua scripts describe the same machine.
//
// pending and acked are kept sorted by rid: lookups are binary searches and the
// rendering is deterministic. A node holds about M entries, so the slices stay
// small and, once grown, the hot path does not allocate.
type nodeState struct {
	hb       hbState
	hbExpiry time.Time // hb is gone once now is after it (Redis: PEXPIRE)
	pending  []lease
	acked    []ackEntry
	// ackedExpiry is the acked set's lifetime; it is only ever extended while
	// the set is non-empty, so acked never dies before hb.
	ackedExpiry time.Time
}

func (s *nodeState) empty() bool {
	return !s.hb.known && len(s.pending) == 0 && len(s.acked) == 0
}

// expireKeys drops what a Redis store would have dropped by now on its own:
// a heartbeat and an acked set past their lifetime.
func (s *nodeState) expireKeys(now time.Time) {
	if s.hb.known && now.After(s.hbExpiry) {
		s.hb = hbState{}
	}
	if len(s.acked) > 0 && now.After(s.ackedExpiry) {
		clear(s.acked)
		s.acked = s.acked[:0]
	}
}

// expire is expireKeys plus the purge of every pending lease whose expiry is
// at or before now. The TTL boundary is exclusive: a lease counts at
// expiry-1ns, not at expiry (the seed's ZREMRANGEBYSCORE 0 now is inclusive
// the same way). Every operation purges, reserve included (see reserve).
func (s *nodeState) expire(now time.Time) {
	s.expireKeys(now)
	n := 0
	for _, l := range s.pending {
		if l.expiry.After(now) {
			s.pending[n] = l
			n++
		}
	}
	clear(s.pending[n:])
	s.pending = s.pending[:n]
}

// live counts pending leases unexpired at now.
func (s *nodeState) live(now time.Time) int {
	n := 0
	for _, l := range s.pending {
		if l.expiry.After(now) {
			n++
		}
	}
	return n
}

func (s *nodeState) findPending(rid string) (int, bool) {
	return slices.BinarySearchFunc(s.pending, rid, func(l lease, rid string) int { return strings.Compare(l.rid, rid) })
}

func (s *nodeState) findAcked(rid string) (int, bool) {
	return slices.BinarySearchFunc(s.acked, rid, func(a ackEntry, rid string) int { return strings.Compare(a.rid, rid) })
}

// uncounted counts acked jobs that no applied heartbeat has counted yet.
func (s *nodeState) uncounted() int {
	n := 0
	for _, a := range s.acked {
		if a.seq > s.hb.seq {
			n++
		}
	}
	return n
}

// effective is the node's load under acct at now; running is the caller's
// copy, read only by SeedMax. The sum saturates instead of wrapping (counts
// are range-checked where they enter, this is the second guard).
func (s *nodeState) effective(acct Accounting, running int, now time.Time) int {
	if acct == SeedMax {
		return max(running, s.live(now))
	}
	return satAdd(satAdd(max(s.hb.running, 0), s.live(now)), s.uncounted())
}

// limit is the M a reserve asking max enforces here, or -1 when max
// disagrees with the M the heartbeat states.
func (s *nodeState) limit(max int, o Options) int {
	hbMax := 0
	if s.hb.known {
		hbMax = s.hb.max
	}
	return limit(hbMax, max, o)
}

// earliest is the earliest expiry among leases unexpired at now.
func (s *nodeState) earliest(now time.Time) time.Time {
	var e time.Time
	for _, l := range s.pending {
		if l.expiry.After(now) && (e.IsZero() || l.expiry.Before(e)) {
			e = l.expiry
		}
	}
	return e
}

// reserve applies the reserve transition to a validated, defaulted r.
func (s *nodeState) reserve(now time.Time, r Reservation, o Options) ReserveResult {
	// Reserve purges lapsed leases too. With scheduler clocks (the seed's
	// client-clock mode) that purge is what keeps the fence sound: a
	// scheduler whose clock runs ahead hands out a lapsed lease's slot only
	// after deleting the lease, so the late ACK of that lease answers Expired.
	// rapid found the oversell when reserve merely skipped lapsed leases.
	s.expire(now)
	res := ReserveResult{Epoch: s.hb.epoch}
	m := s.limit(r.Max, o)
	i, held := s.findPending(r.RID)
	if m < 0 {
		res.Status = ReserveLimitMismatch
	} else if held {
		// The seed moves an existing lease forward when the node has room and
		// refuses it on a full node although the job holds a slot. A
		// duplicate is answered with the existing lease, unextended, in every
		// mode, so a retry after an unknown outcome is safe.
		res.Status, res.Expiry = ReserveDuplicate, s.pending[i].expiry
	} else if _, ok := s.findAcked(r.RID); ok && o.Accounting != SeedMax {
		res.Status = ReserveDuplicate
	} else if o.Accounting != SeedMax && !s.hb.known {
		res.Status = ReserveUnknownNode
	} else if o.Accounting != SeedMax && now.Sub(s.hb.recv) > o.HeartbeatTimeout {
		res.Status = ReserveStaleHeartbeat
	} else if s.effective(o.Accounting, r.Running, now) >= m {
		res.Status = ReserveFull
		res.EarliestExpiry = s.earliest(now)
	} else {
		res.Status, res.Expiry = ReserveOK, now.Add(r.TTL)
		s.pending = slices.Insert(s.pending, i, lease{rid: r.RID, expiry: res.Expiry})
	}
	res.Load = s.effective(o.Accounting, r.Running, now)
	return res
}

func (s *nodeState) addAcked(now time.Time, rid string, seq uint64, o Options) {
	if len(s.acked) == 0 || s.ackedExpiry.Before(now.Add(o.Lifetime)) {
		// A fresh Redis key has no TTL and gets one; an existing key's TTL is
		// only ever extended.
		s.ackedExpiry = now.Add(o.Lifetime)
	}
	i, ok := s.findAcked(rid)
	if ok {
		s.acked[i].seq = seq
		return
	}
	s.acked = slices.Insert(s.acked, i, ackEntry{rid: rid, seq: seq})
}

// ack applies the ack transition.
func (s *nodeState) ack(now time.Time, a Ack, o Options) AckStatus {
	s.expire(now)
	if o.Accounting == SeedMax {
		// The seed releases the reservation on ACK (ZREM) and has no fence: the
		// node runs the job whether or not its lease was still there.
		if i, ok := s.findPending(a.RID); ok {
			s.pending = slices.Delete(s.pending, i, i+1)
			return AckOK
		}
		return AckLate
	}
	if !s.hb.known || a.Epoch != s.hb.epoch {
		return AckEpochMismatch
	}
	if i, ok := s.findAcked(a.RID); ok {
		if !o.Unfenced && s.acked[i].seq != a.Seq {
			// The rid was acknowledged for another acceptance (another Seq):
			// this acceptance's lease is gone with it, and a node that has
			// since finished the job must not start it again uncounted.
			return AckExpired
		}
		return AckDuplicate
	}
	if i, ok := s.findPending(a.RID); ok {
		s.pending = slices.Delete(s.pending, i, i+1)
		if o.Accounting != sumReleaseOnAck {
			s.addAcked(now, a.RID, a.Seq, o)
		}
		return AckOK
	}
	if !o.Unfenced {
		return AckExpired
	}
	s.addAcked(now, a.RID, a.Seq, o)
	return AckLate
}

// release drops rid's pending lease; acked jobs leave only through heartbeats.
func (s *nodeState) release(now time.Time, rid string) bool {
	s.expire(now)
	if i, ok := s.findPending(rid); ok {
		s.pending = slices.Delete(s.pending, i, i+1)
		return true
	}
	return false
}

// heartbeat applies the heartbeat transition.
func (s *nodeState) heartbeat(now time.Time, node string, h Heartbeat, o Options) (HeartbeatStatus, error) {
	s.expire(now)
	if s.hb.known {
		if h.Epoch < s.hb.epoch {
			return HeartbeatStale, nil // delayed from an earlier boot
		}
		if h.Epoch == s.hb.epoch && h.Seq <= s.hb.seq {
			if h.Seq < s.hb.seq {
				return HeartbeatStale, fmt.Errorf("%w: node %q epoch %d: Seq %d is below the stored %d",
					ErrSeqBackwards, node, h.Epoch, h.Seq, s.hb.seq)
			}
			return HeartbeatStale, nil // duplicate
		}
	}
	if !s.hb.known || h.Epoch > s.hb.epoch {
		// A new boot: whatever still runs is in Running, and the node refuses
		// dispatches and ACKs of the old epoch.
		clear(s.acked)
		s.acked = s.acked[:0]
	} else {
		// Same epoch: entries the previous heartbeat covered were kept one
		// interval as tombstones for ACK retries; now they go.
		prev := s.hb.seq
		n := 0
		for _, a := range s.acked {
			if a.seq > prev {
				s.acked[n] = a
				n++
			}
		}
		clear(s.acked[n:])
		s.acked = s.acked[:n]
	}
	s.hb = hbState{known: true, epoch: h.Epoch, seq: h.Seq, running: h.Running, max: h.Max, recv: now, usage: h.Usage}
	s.hbExpiry = now.Add(o.Lifetime)
	if len(s.acked) > 0 && s.ackedExpiry.Before(s.hbExpiry) {
		s.ackedExpiry = s.hbExpiry
	}
	return HeartbeatApplied, nil
}

// load reports the node at now without changing it (the read-only loads
// script counts what a purge would keep).
//
// Max is the M a reserve without Max enforces: the heartbeat's, else
// o.MaxJobs.
func (s *nodeState) load(now time.Time, id string, o Options) NodeLoad {
	l := NodeLoad{ID: id, Max: o.MaxJobs}
	hbSeq := uint64(0)
	if s.hb.known && !now.After(s.hbExpiry) {
		hb := s.hb
		l.Epoch, l.Seq, l.Running, l.HeartbeatAt, l.Usage = hb.epoch, hb.seq, hb.running, hb.recv, hb.usage
		if hb.max > 0 {
			l.Max = hb.max
		}
		hbSeq = hb.seq
	}
	for _, p := range s.pending {
		if p.expiry.After(now) {
			l.Pending++
		}
	}
	if !now.After(s.ackedExpiry) {
		for _, a := range s.acked {
			if a.seq > hbSeq {
				l.AckedUncounted++
			}
		}
	}
	return l
}

func (s *nodeState) clone() nodeState {
	c := *s
	c.pending = slices.Clone(s.pending)
	c.acked = slices.Clone(s.acked)
	return c
}

// NodeLedger is the pure value core of one node's accounting: the last applied
// heartbeat, the pending leases and the acknowledged jobs, sorted by rid. Each
// method takes the store time now and returns a new ledger and a result; it
// never changes its receiver. The zero NodeLedger is an empty node with the
// default Options.
//
// NodeLedger is the test oracle of the slot stores: for the same operations at
// the same times, MemoryStore and the Redis store answer exactly as it does.
type NodeLedger struct {
	opts Options
	st   nodeState
}

// NewNodeLedger returns an empty ledger with options o (zero fields default).
func NewNodeLedger(o Options) (NodeLedger, error) {
	if err := o.Validate(); err != nil {
		return NodeLedger{}, err
	}
	return NodeLedger{opts: o.WithDefaults()}, nil
}

func (l NodeLedger) options() Options { return l.opts.WithDefaults() }

// nowErrs refuses a zero now: every lease would expire at once and every
// heartbeat look decades old.
func nowErrs(now time.Time) field.ErrorList {
	if now.IsZero() {
		return field.ErrorList{field.Required(field.NewPath("now"), "the store time must be set")}
	}
	return nil
}

func (l NodeLedger) with(f func(s *nodeState)) NodeLedger {
	c := NodeLedger{opts: l.opts, st: l.st.clone()}
	f(&c.st)
	return c
}

// Reserve asks for a pending lease for r.RID (r.Node is not read). Bad input
// is an error naming the field; every other answer is a ReserveResult.
func (l NodeLedger) Reserve(now time.Time, r Reservation) (NodeLedger, ReserveResult, error) {
	o := l.options()
	r, errs := r.resolveNoNode(o)
	if err := plancore.Invalid(ErrInvalidInput, append(nowErrs(now), errs...)); err != nil {
		return l, ReserveResult{}, err
	}
	var res ReserveResult
	return l.with(func(s *nodeState) { res = s.reserve(now, r, o) }), res, nil
}

// Ack records the node's acknowledgement of a.RID (a.Node is not read).
func (l NodeLedger) Ack(now time.Time, a Ack) (NodeLedger, AckStatus, error) {
	if err := plancore.Invalid(ErrInvalidInput, append(nowErrs(now), validateRID(a.RID)...)); err != nil {
		return l, "", err
	}
	var st AckStatus
	return l.with(func(s *nodeState) { st = s.ack(now, a, l.options()) }), st, nil
}

// Release drops rid's pending lease and reports whether there was one. Twice
// equals once; an unknown, expired or acknowledged rid is a no-op.
func (l NodeLedger) Release(now time.Time, rid string) (NodeLedger, bool, error) {
	if err := plancore.Invalid(ErrInvalidInput, append(nowErrs(now), validateRID(rid)...)); err != nil {
		return l, false, err
	}
	var ok bool
	return l.with(func(s *nodeState) { ok = s.release(now, rid) }), ok, nil
}

// Heartbeat applies h. A heartbeat of an earlier epoch, or of the same epoch
// with a seq not above the stored one, changes nothing and answers
// HeartbeatStale; when its seq is below the stored one the error also wraps
// ErrSeqBackwards.
func (l NodeLedger) Heartbeat(now time.Time, h Heartbeat) (NodeLedger, HeartbeatStatus, error) {
	if err := plancore.Invalid(ErrInvalidInput, nowErrs(now)); err != nil {
		return l, "", err
	}
	if err := h.Validate(); err != nil {
		return l, "", err
	}
	var st HeartbeatStatus
	var err error
	// Even a refused heartbeat purges lapsed leases, as the store does; the
	// purge changes no answer at or after now.
	next := l.with(func(s *nodeState) { st, err = s.heartbeat(now, "", h, l.options()) })
	return next, st, err
}

// Effective returns the node's effective load at now (for SeedMax, with the
// stored heartbeat's running count standing in for the caller's copy).
func (l NodeLedger) Effective(now time.Time) int {
	return l.Load(now, "").Effective(l.options().Accounting)
}

// Load reports the node at now, as a store's Loads would.
func (l NodeLedger) Load(now time.Time, id string) NodeLoad {
	return l.st.load(now, id, l.options())
}

// String renders the ledger deterministically on one line.
func (l NodeLedger) String() string {
	var b strings.Builder
	hb := l.st.hb
	if hb.known {
		fmt.Fprintf(&b, "hb epoch=%d seq=%d running=%d recv=%s", hb.epoch, hb.seq, hb.running, fmtTime(hb.recv))
	} else {
		b.WriteString("hb none")
	}
	b.WriteString(" | pending")
	for _, p := range l.st.pending {
		fmt.Fprintf(&b, " %s@%s", p.rid, fmtTime(p.expiry))
	}
	b.WriteString(" | acked")
	for _, a := range l.st.acked {
		fmt.Fprintf(&b, " %s#%d", a.rid, a.seq)
	}
	return b.String()
}
