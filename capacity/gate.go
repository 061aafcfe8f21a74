package capacity

import (
	"github.com/plancore/plancore"

	"fmt"
	"slices"
	"strings"
)

// AcceptStatus is a node's answer to a dispatch.
type AcceptStatus string

const (
	// Accepted means the node counted the job and assigned it a seq; it now
	// commits the ACK to the store and starts the job only if the store agrees.
	Accepted AcceptStatus = "accepted"
	// AcceptDuplicate means the node already holds this rid; it is never
	// started twice.
	AcceptDuplicate AcceptStatus = "duplicate"
	// AcceptEpochMismatch means the dispatch was meant for another boot.
	AcceptEpochMismatch AcceptStatus = "epoch-mismatch"
	// AcceptFull means the node's own hard limit refused the job: running had
	// reached M. The scheduler's accounting let through a job the node could
	// not take; the scheduler should release and try elsewhere.
	AcceptFull AcceptStatus = "full"
)

// String returns the status's name.
func (s AcceptStatus) String() string { return string(s) }

type gateJob struct {
	rid     string
	seq     uint64
	started bool
}

// NodeGate is the pure value core of the worker node's side of the protocol,
// the last line of defence: a hard limit on the node's own M, a
// sequence counter shared by jobs and heartbeats, the boot epoch, and the ACK
// fence (a job starts only after the store confirmed its lease).
//
// The gate also measures: Oversold counts job starts that took the node above
// M, which can happen only with the hard limit disabled, and HardLimitRefusals
// counts dispatches the hard limit refused. Tests disable the hard limit to
// prove that the store's accounting alone never oversells.
//
// Methods return a new gate and never change the receiver.
type NodeGate struct {
	epoch     uint64
	max       int
	seq       uint64
	noLimit   bool
	jobs      []gateJob // sorted by rid
	oversold  int
	refusals  int
	peakStart int
}

// NewNodeGate returns an empty gate for a node of the given epoch and M. With
// hardLimit false the gate accepts beyond M and counts the overshoot instead.
func NewNodeGate(epoch uint64, max int, hardLimit bool) (NodeGate, error) {
	if max < 1 {
		return NodeGate{}, fmt.Errorf("%w: node Max %d is below 1", ErrInvalidInput, max)
	}
	return NodeGate{epoch: epoch, max: max, noLimit: !hardLimit}, nil
}

func (g NodeGate) clone() NodeGate {
	g.jobs = slices.Clone(g.jobs)
	return g
}

func (g NodeGate) find(rid string) (int, bool) {
	return slices.BinarySearchFunc(g.jobs, rid, func(j gateJob, rid string) int { return strings.Compare(j.rid, rid) })
}

// Epoch is the node's current boot epoch.
func (g NodeGate) Epoch() uint64 { return g.epoch }

// Max is the node's own M.
func (g NodeGate) Max() int { return g.max }

// Running counts the jobs the node holds, started or waiting for their ACK.
func (g NodeGate) Running() int { return len(g.jobs) }

// Started counts the jobs that have started.
func (g NodeGate) Started() int {
	n := 0
	for _, j := range g.jobs {
		if j.started {
			n++
		}
	}
	return n
}

// PeakStarted is the highest number of simultaneously started jobs seen.
func (g NodeGate) PeakStarted() int { return g.peakStart }

// Oversold counts job starts that took the node above M.
func (g NodeGate) Oversold() int { return g.oversold }

// HardLimitRefusals counts dispatches refused by the hard limit.
func (g NodeGate) HardLimitRefusals() int { return g.refusals }

// Jobs returns the rids the node holds, sorted.
func (g NodeGate) Jobs() []string {
	out := make([]string, len(g.jobs))
	for i, j := range g.jobs {
		out[i] = j.rid
	}
	return out
}

// StartedJobs returns the rids of started jobs, sorted.
func (g NodeGate) StartedJobs() []string {
	var out []string
	for _, j := range g.jobs {
		if j.started {
			out = append(out, j.rid)
		}
	}
	return out
}

// Accept takes a dispatch of rid carrying the epoch the store returned with
// the lease. On Accepted the job holds a place and seq is the value to send in
// the ACK.
func (g NodeGate) Accept(rid string, epoch uint64) (NodeGate, AcceptStatus, uint64, error) {
	if err := plancore.Invalid(ErrInvalidInput, validateRID(rid)); err != nil {
		return g, "", 0, err
	}
	if epoch != g.epoch {
		return g, AcceptEpochMismatch, 0, nil
	}
	i, ok := g.find(rid)
	if ok {
		return g, AcceptDuplicate, g.jobs[i].seq, nil
	}
	n := g.clone()
	if len(n.jobs) >= n.max && !n.noLimit {
		n.refusals++
		return n, AcceptFull, 0, nil
	}
	n.seq++
	n.jobs = slices.Insert(n.jobs, i, gateJob{rid: rid, seq: n.seq})
	return n, Accepted, n.seq, nil
}

// Commit applies the store's answer to the ACK of rid: the job starts on OK,
// Duplicate or Late, and is dropped otherwise (the fence: a lapsed lease never
// starts a job). It reports whether the job runs.
func (g NodeGate) Commit(rid string, st AckStatus) (NodeGate, bool, error) {
	i, ok := g.find(rid)
	if !ok {
		return g, false, fmt.Errorf("%w: rid %q is not held by the node", ErrUnknownJob, rid)
	}
	if g.jobs[i].started {
		return g, true, nil // a started job keeps running whatever a retried ACK says
	}
	n := g.clone()
	if !st.Start() {
		n.jobs = slices.Delete(n.jobs, i, i+1)
		return n, false, nil
	}
	n.jobs[i].started = true
	started := n.Started()
	if started > n.max {
		n.oversold++
	}
	n.peakStart = max(n.peakStart, started)
	return n, true, nil
}

// Abort drops a job whose ACK failed (an error counts as "do not start").
func (g NodeGate) Abort(rid string) (NodeGate, error) {
	n, _, err := g.Commit(rid, AckExpired)
	return n, err
}

// Finish drops a started job.
func (g NodeGate) Finish(rid string) (NodeGate, error) {
	i, ok := g.find(rid)
	if !ok || !g.jobs[i].started {
		return g, fmt.Errorf("%w: rid %q is not running", ErrUnknownJob, rid)
	}
	n := g.clone()
	n.jobs = slices.Delete(n.jobs, i, i+1)
	return n, nil
}

// Snapshot samples a heartbeat: it takes a new seq, above every job's, and
// counts every job the node holds (those waiting for their ACK too: the safe
// direction).
func (g NodeGate) Snapshot(u Usage) (NodeGate, Heartbeat) {
	n := g.clone()
	n.seq++
	return n, Heartbeat{Epoch: n.epoch, Seq: n.seq, Running: len(n.jobs), Max: n.max, Usage: u}
}

// Restart models a reboot: every job is gone and the node takes epoch, which
// must be above the current one.
func (g NodeGate) Restart(epoch uint64) (NodeGate, error) {
	if epoch <= g.epoch {
		return g, fmt.Errorf("%w: new epoch %d is not above %d", ErrEpochBackwards, epoch, g.epoch)
	}
	n := g.clone()
	n.epoch, n.seq, n.jobs = epoch, 0, nil
	return n, nil
}
