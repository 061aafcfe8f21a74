package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/plancore/plancore/capacity"
)

// NodeAgent is a fake worker node for the capacity core: it accepts
// dispatches, commits their ACKs to a capacity.SlotStore, runs jobs until told
// to finish them, restarts into a new epoch, and sends heartbeats with
// sequence numbers. Its accounting is a capacity.NodeGate under a mutex.
//
// The agent enforces its own running < M (unless built without the hard
// limit) and counts what the scheduler side got wrong instead of hiding it:
// Oversold counts job starts beyond M (possible only without the hard limit),
// HardLimitRefusals counts dispatches the hard limit had to refuse.
//
// Heartbeats are sampled and delivered while holding a send lock that ACK
// commits also hold, so a heartbeat never reaches the store after an ACK that
// was committed after it was sampled. The sequence numbers already make that
// reordering harmless while the store keeps its acked entries; the lock keeps
// it harmless when a store restart has lost them.
type NodeAgent struct {
	id    string
	store capacity.SlotStore

	send sync.Mutex // ACK commits and heartbeat delivery
	mu   sync.Mutex // gate and counters
	gate capacity.NodeGate
	acks map[capacity.AckStatus]int
	errs int
}

// NewNodeAgent returns a node of epoch 1 with the given M.
func NewNodeAgent(id string, max int, hardLimit bool, store capacity.SlotStore) (*NodeAgent, error) {
	if err := capacity.ValidateNodeID(id); err != nil {
		return nil, err
	}
	g, err := capacity.NewNodeGate(1, max, hardLimit)
	if err != nil {
		return nil, err
	}
	return &NodeAgent{id: id, store: store, gate: g, acks: map[capacity.AckStatus]int{}}, nil
}

// ID is the node id.
func (a *NodeAgent) ID() string { return a.id }

// DispatchOutcome is what happened to one dispatch at the node.
type DispatchOutcome struct {
	Accept capacity.AcceptStatus
	// Ack is the store's answer to the ACK (zero if none was sent or it failed).
	Ack capacity.AckStatus
	// Started reports whether the job runs.
	Started bool
}

// Dispatch delivers a job with its lease: accept under the node's mutex, commit
// the ACK to the store, start the job only if the store agrees. An ACK error is
// returned and the job is dropped (fenced: the node never starts a job whose
// ACK it could not commit).
func (a *NodeAgent) Dispatch(ctx context.Context, l capacity.Lease) (DispatchOutcome, error) {
	a.mu.Lock()
	g, st, seq, err := a.gate.Accept(l.RID, l.Epoch)
	if err != nil {
		a.mu.Unlock()
		return DispatchOutcome{}, err
	}
	a.gate = g
	epoch := a.gate.Epoch()
	a.mu.Unlock()
	out := DispatchOutcome{Accept: st}
	if st != capacity.Accepted {
		return out, nil
	}
	a.send.Lock()
	ack, ackErr := a.store.Ack(ctx, capacity.Ack{Node: a.id, RID: l.RID, Epoch: epoch, Seq: seq})
	a.send.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gate.Epoch() != epoch {
		return out, ackErr // the node restarted meanwhile: the job is gone
	}
	if ackErr != nil {
		a.errs++
		a.gate, err = a.gate.Abort(l.RID)
		if err != nil {
			return out, err
		}
		return out, fmt.Errorf("fake: node %s: ack %s: %w", a.id, l.RID, ackErr)
	}
	a.acks[ack]++
	out.Ack = ack
	a.gate, out.Started, err = a.gate.Commit(l.RID, ack)
	return out, err
}

// Heartbeat samples and delivers a heartbeat.
func (a *NodeAgent) Heartbeat(ctx context.Context, u capacity.Usage) (capacity.HeartbeatStatus, error) {
	a.send.Lock()
	defer a.send.Unlock()
	a.mu.Lock()
	g, hb := a.gate.Snapshot(u)
	a.gate = g
	a.mu.Unlock()
	return a.store.Heartbeat(ctx, a.id, hb)
}

// FinishOldest finishes the first started job in rid order and reports it.
func (a *NodeAgent) FinishOldest() (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	started := a.gate.StartedJobs()
	if len(started) == 0 {
		return "", false
	}
	g, err := a.gate.Finish(started[0])
	if err != nil {
		return "", false
	}
	a.gate = g
	return started[0], true
}

// Finish finishes a started job.
func (a *NodeAgent) Finish(rid string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, err := a.gate.Finish(rid)
	if err != nil {
		return err
	}
	a.gate = g
	return nil
}

// Restart reboots the node into the next epoch: every job is gone.
func (a *NodeAgent) Restart() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, err := a.gate.Restart(a.gate.Epoch() + 1)
	if err != nil {
		return err
	}
	a.gate = g
	return nil
}

// AgentStats are a node's counters.
type AgentStats struct {
	Running, Started, PeakStarted, Oversold, HardLimitRefusals int
	// Acks counts the store's ACK answers by status; AckErrors the failed ACKs.
	Acks      map[capacity.AckStatus]int
	AckErrors int
}

// Stats returns a copy of the node's counters.
func (a *NodeAgent) Stats() AgentStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	acks := make(map[capacity.AckStatus]int, len(a.acks))
	for k, v := range a.acks {
		acks[k] = v
	}
	return AgentStats{Running: a.gate.Running(), Started: a.gate.Started(), PeakStarted: a.gate.PeakStarted(),
		Oversold: a.gate.Oversold(), HardLimitRefusals: a.gate.HardLimitRefusals(), Acks: acks, AckErrors: a.errs}
}

// ClockFunc adapts a function that reads some clock to k8s.io/utils/clock's
// PassiveClock, for the stores whose tests drive time through a closure
// (capacity.MemoryStoreOptions.Clock).
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }

// Since returns f() - t.
func (f ClockFunc) Since(t time.Time) time.Duration { return f().Sub(t) }

// CheckOneLimit checks that store keeps a node's limit M in one place, the
// node's heartbeat: Loads reports the heartbeat's M, a reserve without Max
// enforces it, a reserve whose Max disagrees is refused with
// ReserveLimitMismatch (never silently granted under another limit), and a
// heartbeat that states no M leaves the store's default (defaultMax) in
// force. newStore gives each check a store empty for node, with its default
// options apart from MaxJobs = defaultMax.
func CheckOneLimit(ctx context.Context, newStore func(context.Context) (capacity.SlotStore, error), node string, defaultMax int) []Violation {
	return runChecks(ctx, oneLimitChecks(node, defaultMax), newStore)
}

func oneLimitChecks(node string, defaultMax int) []check[capacity.SlotStore] {
	heartbeat := func(ctx context.Context, store capacity.SlotStore, max int) (int, error) {
		if _, err := store.Heartbeat(ctx, node, capacity.Heartbeat{Epoch: 1, Seq: 1, Max: max}); err != nil {
			return 0, err
		}
		loads, err := store.Loads(ctx, []string{node})
		if err != nil {
			return 0, err
		}
		return loads[0].Max, nil
	}
	return []check[capacity.SlotStore]{
		{"loads report the heartbeat's M", func(ctx context.Context, store capacity.SlotStore) []string {
			if m, err := heartbeat(ctx, store, 2); err != nil || m != 2 {
				return []string{fmt.Sprintf("loads report M=%d (%v), the heartbeat stated 2", m, err)}
			}
			return nil
		}},
		{"a reserve without Max is held to the heartbeat's M, one with another Max refused", func(ctx context.Context, store capacity.SlotStore) []string {
			if _, err := heartbeat(ctx, store, 2); err != nil {
				return []string{err.Error()}
			}
			want := []capacity.ReserveStatus{capacity.ReserveOK, capacity.ReserveLimitMismatch, capacity.ReserveOK, capacity.ReserveFull}
			for i, max := range []int{0, 4, 2, 0} {
				r, err := store.Reserve(ctx, capacity.Reservation{Node: node, RID: fmt.Sprintf("one-limit-%d", i), Max: max})
				if err != nil {
					return []string{err.Error()}
				}
				if r.Status != want[i] {
					return []string{fmt.Sprintf("reserve %d with Max %d on a node stating M=2: %v, want %v", i, max, r.Status, want[i])}
				}
			}
			return nil
		}},
		{"a heartbeat stating no M leaves the store's default", func(ctx context.Context, store capacity.SlotStore) []string {
			if m, err := heartbeat(ctx, store, 0); err != nil || m != defaultMax {
				return []string{fmt.Sprintf("loads report M=%d (%v) for a node stating none, want the store's default %d", m, err, defaultMax)}
			}
			return nil
		}},
	}
}
