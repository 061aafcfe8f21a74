package capacity

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
)

// Metrics holds the counters a scheduler should export, for a scheduler to export (as
// Prometheus counters, expvar, logs):
//
//	capacity_excluded_nodes{reason}  ObservePlan: Decide's exclusions by primary reason
//	reserve_total{result}            CountingStore: every Reserve and every batch item
//	ack_total{result}                CountingStore: every Ack
//	dispatch_attempts                ObserveDispatch: the reserve calls of each Dispatch
//
// and the Redis store counts script_reloads_total itself. Cores return data
// and wrappers count: Decide, Dispatch and the stores only return results,
// and Metrics is the state of the counting wrapper. Late and expired ACKs
// deserve an alert: the TTL is too short or a node too slow.
//
// Metrics is safe for concurrent use; its zero value is ready, and it must
// not be copied after first use.
type Metrics struct {
	reserve    [1 + len(reserveStatuses)]atomic.Uint64 // index 0: store error, then reserveStatuses
	rolledBack atomic.Uint64
	ack        [1 + len(ackStatuses)]atomic.Uint64 // index 0: store error, then ackStatuses
	excluded   [len(exclusionCodes)]atomic.Uint64
	dispatches atomic.Uint64
	attempts   atomic.Uint64
}

// MetricsSnapshot is a copy of Metrics' counters. Result and reason labels
// are the String() of ReserveStatus, AckStatus and Reason; "error" counts
// calls that failed (ErrStoreUnavailable and the like: an unknown outcome),
// and Reserve's "rolled-back" counts batch items granted and then taken back
// because an all-or-nothing batch was refused. Labels with a zero count are
// left out.
type MetricsSnapshot struct {
	Reserve          map[string]uint64
	Ack              map[string]uint64
	Excluded         map[string]uint64
	Dispatches       uint64
	DispatchAttempts uint64
}

// Snapshot copies the counters.
func (m *Metrics) Snapshot() MetricsSnapshot {
	s := MetricsSnapshot{Reserve: map[string]uint64{}, Ack: map[string]uint64{}, Excluded: map[string]uint64{},
		Dispatches: m.dispatches.Load(), DispatchAttempts: m.attempts.Load()}
	put := func(to map[string]uint64, label string, n uint64) {
		if n > 0 {
			to[label] = n
		}
	}
	for i := range m.reserve {
		label := "error"
		if i > 0 {
			label = reserveStatuses[i-1].String()
		}
		put(s.Reserve, label, m.reserve[i].Load())
	}
	put(s.Reserve, "rolled-back", m.rolledBack.Load())
	for i := range m.ack {
		label := "error"
		if i > 0 {
			label = ackStatuses[i-1].String()
		}
		put(s.Ack, label, m.ack[i].Load())
	}
	for i := range m.excluded {
		put(s.Excluded, string(exclusionCodes[i]), m.excluded[i].Load())
	}
	return s
}

// ObservePlan counts p's excluded nodes by primary reason code.
func (m *Metrics) ObservePlan(p Plan) {
	for _, e := range p.Excluded {
		if i := slices.Index(exclusionCodes[:], e.Reason.Code); i >= 0 {
			m.excluded[i].Add(1)
		}
	}
}

// ObserveDispatch counts one Dispatch and its reserve calls. (Its
// exclusions are its selection's: count them once, with ObservePlan.)
func (m *Metrics) ObserveDispatch(r DispatchResult) {
	m.dispatches.Add(1)
	m.attempts.Add(uint64(len(r.Attempts)))
}

func (m *Metrics) countReserve(st ReserveStatus, err error) {
	switch {
	case m == nil:
	case err != nil:
		m.reserve[0].Add(1)
	default:
		if i := slices.Index(reserveStatuses[:], st); i >= 0 {
			m.reserve[1+i].Add(1)
		}
	}
}

func (m *Metrics) countAck(st AckStatus, err error) {
	switch {
	case m == nil:
	case err != nil:
		m.ack[0].Add(1)
	default:
		if i := slices.Index(ackStatuses[:], st); i >= 0 {
			m.ack[1+i].Add(1)
		}
	}
}

// CountingStore is a SlotStore that passes every call to Store and counts
// the answers of Reserve, ReserveBatch and Ack in Metrics. Invalid input
// (ErrInvalidInput) is the caller's bug, not a store outcome, and is not
// counted.
//
// The zero CountingStore is safe: without a Store every call is an error
// wrapping ErrNilStore, and without Metrics nothing is counted.
type CountingStore struct {
	Store   SlotStore
	Metrics *Metrics
}

func (c CountingStore) store() SlotStore {
	if c.Store == nil {
		return nilStore{}
	}
	return c.Store
}

var _ SlotStore = CountingStore{}

func invalid(err error) bool { return errors.Is(err, ErrInvalidInput) }

// Reserve implements SlotStore.
func (c CountingStore) Reserve(ctx context.Context, r Reservation) (ReserveResult, error) {
	res, err := c.store().Reserve(ctx, r)
	if !invalid(err) {
		c.Metrics.countReserve(res.Status, err)
	}
	return res, err
}

// ReserveBatch implements SlotStore; each item counts as one reservation.
func (c CountingStore) ReserveBatch(ctx context.Context, items []Reservation, mode BatchMode) (BatchResult, error) {
	res, err := c.store().ReserveBatch(ctx, items, mode)
	switch {
	case invalid(err):
	case c.Metrics == nil:
	case err != nil:
		c.Metrics.reserve[0].Add(uint64(len(items)))
	default:
		for _, it := range res.Items {
			if it.Status == ReserveOK && !res.Committed {
				c.Metrics.rolledBack.Add(1)
			} else {
				c.Metrics.countReserve(it.Status, nil)
			}
		}
	}
	return res, err
}

// Ack implements SlotStore.
func (c CountingStore) Ack(ctx context.Context, a Ack) (AckStatus, error) {
	st, err := c.store().Ack(ctx, a)
	if !invalid(err) {
		c.Metrics.countAck(st, err)
	}
	return st, err
}

// Release implements SlotStore.
func (c CountingStore) Release(ctx context.Context, node, rid string) (bool, error) {
	return c.store().Release(ctx, node, rid)
}

// Heartbeat implements SlotStore.
func (c CountingStore) Heartbeat(ctx context.Context, node string, h Heartbeat) (HeartbeatStatus, error) {
	return c.store().Heartbeat(ctx, node, h)
}

// Loads implements SlotStore.
func (c CountingStore) Loads(ctx context.Context, nodes []string) ([]NodeLoad, error) {
	return c.store().Loads(ctx, nodes)
}
