package capacity

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"
)

// RankBy chooses how Select orders candidates.
type RankBy uint8

const (
	// RankUtilisation orders by effective/M (fair across nodes of different
	// M), then effective load, then the node's highest usage, then id.
	RankUtilisation RankBy = iota
	// RankJobs orders by effective load alone, then id, as the seed does.
	RankJobs
)

// String returns the ranking's name.
func (r RankBy) String() string {
	switch r {
	case RankUtilisation:
		return "utilisation"
	case RankJobs:
		return "jobs"
	}
	return fmt.Sprintf("RankBy(%d)", uint8(r))
}

// DefaultThreshold is the resource usage, in percent, above which Select skips
// a node: the seed's 90 (exactly 90 passes).
const DefaultThreshold = 90.0

// DefaultRetryAfter is the requeue hint of a NoCapacity outcome.
const DefaultRetryAfter = time.Second

// SelectOptions configure Select. The zero value means the defaults.
type SelectOptions struct {
	// MaxJobs is M for nodes whose NodeLoad.Max is zero. Default 4.
	MaxJobs int
	// Threshold is the CPU, GPU and memory usage in percent above which a node
	// is skipped. Default 90. It reads a lagging heartbeat: a soft filter, never
	// a safety mechanism.
	Threshold float64
	// HeartbeatTimeout excludes nodes whose last heartbeat is older (or absent).
	// Default 45 s; negative disables the check, as in the seed.
	HeartbeatTimeout time.Duration
	// Accounting picks the effective-load formula; SeedMax oversells.
	Accounting Accounting
	// RankBy picks the ranking; default RankUtilisation.
	RankBy RankBy
	// SpreadKey, when set (a job id, say), breaks the final tie by a hash of
	// (SpreadKey, node id) before the id, so concurrent schedulers sharing one
	// snapshot spread their jobs instead of herding onto the same node.
	SpreadKey string
	// RetryAfter is the requeue hint when no node qualifies. Default 1 s.
	RetryAfter time.Duration
}

// Validate reports the first field out of range, wrapping ErrInvalidOptions.
func (o SelectOptions) Validate() error {
	switch {
	case o.MaxJobs < 0:
		return fmt.Errorf("%w: MaxJobs %d is negative", ErrInvalidOptions, o.MaxJobs)
	case math.IsNaN(o.Threshold) || o.Threshold < 0:
		return fmt.Errorf("%w: Threshold %v is not a percentage", ErrInvalidOptions, o.Threshold)
	case o.Accounting > SeedMax:
		return fmt.Errorf("%w: Accounting %v is unknown", ErrInvalidOptions, o.Accounting)
	case o.RankBy > RankJobs:
		return fmt.Errorf("%w: RankBy %v is unknown", ErrInvalidOptions, o.RankBy)
	case o.RetryAfter < 0:
		return fmt.Errorf("%w: RetryAfter %v is negative", ErrInvalidOptions, o.RetryAfter)
	}
	return nil
}

func (o SelectOptions) withDefaults() SelectOptions {
	if o.MaxJobs == 0 {
		o.MaxJobs = DefaultMaxJobs
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.HeartbeatTimeout == 0 {
		o.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	return o
}

// Reason says why a node was excluded. The order of the constants from
// InvalidNode to UsageUnknown is the order in which the primary reason is
// chosen; DuplicateNode stands alone (a repeated id is not looked at further).
type Reason uint8

const (
	// InvalidNode: an empty or malformed id, or M ≤ 0 after defaults.
	InvalidNode Reason = iota + 1
	// StaleHeartbeat: no heartbeat, or one older than the timeout.
	StaleHeartbeat
	// CapacityExceeded: effective load ≥ M (the seed's capacity_exceeded).
	CapacityExceeded
	// CPUOverThreshold: CPU usage above the threshold.
	CPUOverThreshold
	// GPUOverThreshold: GPU usage above the threshold (nodes with a GPU only).
	GPUOverThreshold
	// MemoryOverThreshold: memory usage above the threshold.
	MemoryOverThreshold
	// UsageUnknown: a usage figure is NaN or negative (fail closed).
	UsageUnknown
	// DuplicateNode: the id appeared earlier in the input; only its first
	// snapshot is considered.
	DuplicateNode
)

var reasonNames = [...]string{"", "InvalidNode", "StaleHeartbeat", "CapacityExceeded", "CPUOverThreshold",
	"GPUOverThreshold", "MemoryOverThreshold", "UsageUnknown", "DuplicateNode"}

// String returns the reason's code.
func (r Reason) String() string {
	if int(r) < len(reasonNames) && r != 0 {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Candidate is a node that qualifies, with what ranked it.
type Candidate struct {
	ID        string
	Effective int
	Max       int
	Free      int
	// Running is the node's heartbeat count, passed to Reserve for SeedMax.
	Running int
	Usage   Usage
}

// Exclusion is a node that does not qualify, with every failing reason.
type Exclusion struct {
	ID string
	// Primary is the first of Reasons in the Reason order.
	Primary Reason
	Reasons []Reason
	// Message explains the primary reason with the numbers.
	Message string
}

// Breakdown counts excluded nodes by primary reason; its fields sum to the
// number of excluded nodes.
type Breakdown struct {
	InvalidNode         int
	StaleHeartbeat      int
	CapacityExceeded    int
	CPUOverThreshold    int
	GPUOverThreshold    int
	MemoryOverThreshold int
	UsageUnknown        int
	DuplicateNode       int
}

func (b *Breakdown) add(r Reason) {
	switch r {
	case InvalidNode:
		b.InvalidNode++
	case StaleHeartbeat:
		b.StaleHeartbeat++
	case CapacityExceeded:
		b.CapacityExceeded++
	case CPUOverThreshold:
		b.CPUOverThreshold++
	case GPUOverThreshold:
		b.GPUOverThreshold++
	case MemoryOverThreshold:
		b.MemoryOverThreshold++
	case UsageUnknown:
		b.UsageUnknown++
	case DuplicateNode:
		b.DuplicateNode++
	}
}

// Total is the number of excluded nodes.
func (b Breakdown) Total() int {
	return b.InvalidNode + b.StaleHeartbeat + b.CapacityExceeded + b.CPUOverThreshold +
		b.GPUOverThreshold + b.MemoryOverThreshold + b.UsageUnknown + b.DuplicateNode
}

// Outcome is what a selection or a dispatch came to.
type Outcome uint8

const (
	// Selected: at least one candidate (Select) or a lease was obtained
	// (Dispatch).
	Selected Outcome = iota + 1
	// NoCapacity: no node can take the job now; requeue after the hint. An
	// expected outcome, not an error.
	NoCapacity
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Selected:
		return "Selected"
	case NoCapacity:
		return "NoCapacity"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Selection is Select's plan: ranked candidates, and every other node with the
// reasons it was left out.
type Selection struct {
	Outcome    Outcome
	Candidates []Candidate
	Excluded   []Exclusion // in input order
	Breakdown  Breakdown
	// RequeueAfter is set when Outcome is NoCapacity: the earliest moment worth
	// another try is unknown to Select, so it is SelectOptions.RetryAfter.
	RequeueAfter time.Duration
}

// Best returns the first candidate, if any.
func (s Selection) Best() (Candidate, bool) {
	if len(s.Candidates) == 0 {
		return Candidate{}, false
	}
	return s.Candidates[0], true
}

// Select filters nodes by heartbeat freshness, effective load against M and
// resource usage against the threshold, and ranks the rest, least loaded
// first, with deterministic tie-breaks. It is pure: it does not change nodes,
// and the same input gives the same Selection.
//
// The seed checks the usage threshold after reserving (§4.1 of the seed), so a
// node failing it keeps a reservation until its TTL; Select checks it first.
func Select(nodes []NodeLoad, opts SelectOptions, now time.Time) (Selection, error) {
	if err := opts.Validate(); err != nil {
		return Selection{}, err
	}
	o := opts.withDefaults()
	sel := Selection{}
	seen := make(map[string]bool, len(nodes))
	type ranked struct {
		c       Candidate
		topUse  float64
		spread  uint64
		hasHash bool
	}
	var cands []ranked
	for _, n := range nodes {
		var reasons []Reason
		var msgs []string
		m := n.Max
		if m == 0 {
			m = o.MaxJobs
		}
		eff := n.Effective(o.Accounting)
		switch {
		case seen[n.ID]:
			reasons, msgs = append(reasons, DuplicateNode), append(msgs, "node listed twice; the first snapshot is used")
		case ValidateNodeID(n.ID) != nil || m <= 0:
			reasons, msgs = append(reasons, InvalidNode), append(msgs, fmt.Sprintf("invalid node (id %q, max %d)", n.ID, m))
		}
		seen[n.ID] = true
		if len(reasons) == 0 {
			if o.HeartbeatTimeout >= 0 && (n.HeartbeatAt.IsZero() || now.Sub(n.HeartbeatAt) > o.HeartbeatTimeout) {
				reasons = append(reasons, StaleHeartbeat)
				if n.HeartbeatAt.IsZero() {
					msgs = append(msgs, "no heartbeat")
				} else {
					msgs = append(msgs, fmt.Sprintf("heartbeat %v old > %v", now.Sub(n.HeartbeatAt), o.HeartbeatTimeout))
				}
			}
			if eff >= m {
				reasons = append(reasons, CapacityExceeded)
				msgs = append(msgs, fmt.Sprintf("effective %d >= max %d", eff, m))
			}
			u := n.Usage
			unknown := bad(u.CPU) || bad(u.Memory) || (u.HasGPU && bad(u.GPU))
			if !bad(u.CPU) && u.CPU > o.Threshold {
				reasons, msgs = append(reasons, CPUOverThreshold), append(msgs, fmt.Sprintf("cpu %g%% > %g%%", u.CPU, o.Threshold))
			}
			if u.HasGPU && !bad(u.GPU) && u.GPU > o.Threshold {
				reasons, msgs = append(reasons, GPUOverThreshold), append(msgs, fmt.Sprintf("gpu %g%% > %g%%", u.GPU, o.Threshold))
			}
			if !bad(u.Memory) && u.Memory > o.Threshold {
				reasons, msgs = append(reasons, MemoryOverThreshold), append(msgs, fmt.Sprintf("memory %g%% > %g%%", u.Memory, o.Threshold))
			}
			if unknown {
				reasons, msgs = append(reasons, UsageUnknown), append(msgs, "usage unknown (NaN or negative)")
			}
		}
		if len(reasons) > 0 {
			sel.Excluded = append(sel.Excluded, Exclusion{ID: n.ID, Primary: reasons[0], Reasons: reasons, Message: msgs[0]})
			sel.Breakdown.add(reasons[0])
			continue
		}
		r := ranked{c: Candidate{ID: n.ID, Effective: eff, Max: m, Free: m - eff, Running: n.Running, Usage: n.Usage},
			topUse: topUsage(n.Usage)}
		if o.SpreadKey != "" {
			h := fnv.New64a()
			h.Write([]byte(o.SpreadKey))
			h.Write([]byte{0})
			h.Write([]byte(n.ID))
			r.spread, r.hasHash = h.Sum64(), true
		}
		cands = append(cands, r)
	}
	slices.SortFunc(cands, func(a, b ranked) int {
		if o.RankBy == RankUtilisation {
			// a.eff/a.max vs b.eff/b.max by cross-multiplication: exact, no floats.
			if c := cmp.Compare(int64(a.c.Effective)*int64(b.c.Max), int64(b.c.Effective)*int64(a.c.Max)); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(a.c.Effective, b.c.Effective); c != 0 {
			return c
		}
		if o.RankBy == RankUtilisation {
			if c := cmp.Compare(a.topUse, b.topUse); c != 0 {
				return c
			}
		}
		if a.hasHash {
			if c := cmp.Compare(a.spread, b.spread); c != 0 {
				return c
			}
		}
		return strings.Compare(a.c.ID, b.c.ID)
	})
	for _, r := range cands {
		sel.Candidates = append(sel.Candidates, r.c)
	}
	if len(sel.Candidates) > 0 {
		sel.Outcome = Selected
	} else {
		sel.Outcome, sel.RequeueAfter = NoCapacity, o.RetryAfter
	}
	return sel, nil
}

func bad(x float64) bool { return math.IsNaN(x) || x < 0 }

func topUsage(u Usage) float64 {
	t := max(u.CPU, u.Memory)
	if u.HasGPU {
		t = max(t, u.GPU)
	}
	return t
}
