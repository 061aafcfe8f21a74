package capacity

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Input is everything Decide reads: the nodes' loads (from a store's Loads or
// the caller's own registry), the time, and the job's spread key.
type Input struct {
	// Now is the time heartbeat ages are measured against. Required.
	Now time.Time
	// Nodes are the candidate nodes, in any order; a repeated id is
	// excluded (DuplicateNode), only its first load is considered.
	Nodes []NodeLoad
	// SpreadKey, when set (a job id, say), breaks the final tie by a hash of
	// (SpreadKey, node id) before the id, so concurrent schedulers sharing one
	// snapshot spread their jobs instead of herding onto the same node.
	SpreadKey string
}

// ReasonCode names why a node is excluded or a reserve refused. The codes
// are part of the API: match on them, never on a message. The order of the
// constants from ReasonInvalidNode to ReasonUsageUnknown is the order in
// which an exclusion's primary reason is chosen; ReasonDuplicateNode stands
// alone (a repeated id is not looked at further).
type ReasonCode string

const (
	// ReasonInvalidNode: an empty or malformed id, M ≤ 0 after defaults, or
	// a count that is negative or above MaxCount.
	ReasonInvalidNode ReasonCode = "InvalidNode"
	// ReasonStaleHeartbeat: no heartbeat, or one older than the timeout.
	ReasonStaleHeartbeat ReasonCode = "StaleHeartbeat"
	// ReasonCapacityExceeded: effective load ≥ M (the seed's capacity_exceeded).
	ReasonCapacityExceeded ReasonCode = "CapacityExceeded"
	// ReasonCPUOverThreshold: CPU usage above the threshold.
	ReasonCPUOverThreshold ReasonCode = "CPUOverThreshold"
	// ReasonGPUOverThreshold: GPU usage above the threshold (nodes with a GPU only).
	ReasonGPUOverThreshold ReasonCode = "GPUOverThreshold"
	// ReasonMemoryOverThreshold: memory usage above the threshold.
	ReasonMemoryOverThreshold ReasonCode = "MemoryOverThreshold"
	// ReasonUsageUnknown: a usage figure is NaN or negative (fail closed).
	ReasonUsageUnknown ReasonCode = "UsageUnknown"
	// ReasonDuplicateNode: the id appeared earlier in the input; only its
	// first load is considered.
	ReasonDuplicateNode ReasonCode = "DuplicateNode"
	// ReasonReserveRefused: Dispatch's reserve on a candidate was refused
	// (the attempt's Result.Status says how).
	ReasonReserveRefused ReasonCode = "ReserveRefused"
	// ReasonReserved: Dispatch obtained a lease on the candidate.
	ReasonReserved ReasonCode = "Reserved"
)

// exclusionCodes lists the exclusion codes in Breakdown order.
var exclusionCodes = [...]ReasonCode{ReasonInvalidNode, ReasonStaleHeartbeat, ReasonCapacityExceeded, ReasonCPUOverThreshold,
	ReasonGPUOverThreshold, ReasonMemoryOverThreshold, ReasonUsageUnknown, ReasonDuplicateNode}

// Reason says why: Code for programs, Message (with the numbers) for people,
// and the numbers themselves as fields, so a program never parses Message.
// Every Message is rendered from the fields beside it.
type Reason = plancore.Reason[ReasonCode, ReasonFacts]

// ReasonFacts are the facts a Reason states; zero where its code states none.
type ReasonFacts struct {
	// Observed and Limit are the figures compared: the node's effective
	// jobs and its limit M (CapacityExceeded; for InvalidNode, Limit is the
	// node's M), or a usage percentage and the threshold (CPU-, GPU- and
	// MemoryOverThreshold). Zero for the other codes.
	Observed float64 `json:"observed,omitempty"`
	Limit    float64 `json:"limit,omitempty"`
	// HeartbeatAge and HeartbeatTimeout are set by StaleHeartbeat: how old
	// the node's heartbeat is (zero when it never sent one) and the bound it
	// passed.
	HeartbeatAge     time.Duration `json:"heartbeatAge,omitempty"`
	HeartbeatTimeout time.Duration `json:"heartbeatTimeout,omitempty"`
}

// overLimit is a reason comparing observed with limit; its message renders
// them (the jobs' as integers, a usage as a percentage).
func overLimit(code ReasonCode, observed, limit float64) Reason {
	r := Reason{Code: code, Facts: ReasonFacts{Observed: observed, Limit: limit}}
	switch code {
	case ReasonCapacityExceeded:
		r.Message = fmt.Sprintf("effective %g >= max %g", r.Facts.Observed, r.Facts.Limit)
	case ReasonCPUOverThreshold:
		r.Message = fmt.Sprintf("cpu %g%% > %g%%", r.Facts.Observed, r.Facts.Limit)
	case ReasonGPUOverThreshold:
		r.Message = fmt.Sprintf("gpu %g%% > %g%%", r.Facts.Observed, r.Facts.Limit)
	case ReasonMemoryOverThreshold:
		r.Message = fmt.Sprintf("memory %g%% > %g%%", r.Facts.Observed, r.Facts.Limit)
	}
	return r
}

// staleHeartbeat is a StaleHeartbeat reason; a zero age says no heartbeat
// was ever seen.
func staleHeartbeat(age, timeout time.Duration) Reason {
	r := Reason{Code: ReasonStaleHeartbeat, Message: "no heartbeat", Facts: ReasonFacts{HeartbeatAge: age, HeartbeatTimeout: timeout}}
	if age > 0 {
		r.Message = fmt.Sprintf("heartbeat %v old > %v", r.Facts.HeartbeatAge, r.Facts.HeartbeatTimeout)
	}
	return r
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
	// Reason is the primary reason: the first of Reasons in the code order.
	Reason Reason
	// Reasons lists every failing reason, primary first.
	Reasons []Reason
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

// counts returns pointers to the fields in exclusionCodes order.
func (b *Breakdown) counts() [len(exclusionCodes)]*int {
	return [...]*int{&b.InvalidNode, &b.StaleHeartbeat, &b.CapacityExceeded, &b.CPUOverThreshold,
		&b.GPUOverThreshold, &b.MemoryOverThreshold, &b.UsageUnknown, &b.DuplicateNode}
}

func (b *Breakdown) add(c ReasonCode) {
	if i := slices.Index(exclusionCodes[:], c); i >= 0 {
		*b.counts()[i]++
	}
}

// Total is the number of excluded nodes.
func (b Breakdown) Total() int {
	n := 0
	for _, c := range b.counts() {
		n += *c
	}
	return n
}

// Verdict is what a decision or a dispatch came to.
type Verdict string

const (
	// Selected: at least one candidate (Decide) or a lease was obtained
	// (Dispatch).
	Selected Verdict = "Selected"
	// NoCapacity: no node can take the job now; requeue after the hint. An
	// expected outcome, not an error.
	NoCapacity Verdict = "NoCapacity"
)

// Plan is Decide's answer: ranked candidates, and every other node with the
// reasons it was left out.
type Plan struct {
	Verdict    Verdict
	Candidates []Candidate
	Excluded   []Exclusion // in input order
	Breakdown  Breakdown
	// RequeueAfter is set when Verdict is NoCapacity: the earliest moment worth
	// another try is unknown to Decide, so it is Options.RetryAfter.
	RequeueAfter time.Duration
}

// Best returns the first candidate, if any.
func (p Plan) Best() (Candidate, bool) {
	if len(p.Candidates) == 0 {
		return Candidate{}, false
	}
	return p.Candidates[0], true
}

// Validate reports every problem of an input that Decide refuses, as a
// *plancore.InvalidError wrapping ErrInvalidInput: only a zero Now. A bad
// node (an empty id, a negative or huge count, a repeated id) is no input
// error but an exclusion with its reason, so that one node's bad heartbeat
// never blocks scheduling on the others. Bad options come first, as
// Options.Validate reports them (ErrInvalidOptions).
func Validate(in Input, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	var errs field.ErrorList
	if in.Now.IsZero() {
		errs = append(errs, field.Required(field.NewPath("now"), "the decision time must be set"))
	}
	return plancore.Invalid(ErrInvalidInput, errs)
}

// Decide filters nodes by heartbeat freshness, effective load against M and
// resource usage against the threshold, and ranks the rest, least loaded
// first, with deterministic tie-breaks. It is pure: it does not change its
// input, and the same input gives the same Plan.
//
// The seed checks the usage threshold after reserving, so a node failing it
// keeps a reservation until its TTL; Decide checks it first.
func Decide(in Input, o Options) (Plan, error) {
	if err := Validate(in, o); err != nil {
		return Plan{}, err
	}
	o = o.WithDefaults()
	var p Plan
	seen := make(map[string]bool, len(in.Nodes))
	var cands []ranked
	for _, n := range in.Nodes {
		reasons := excludeReasons(n, seen[n.ID], in.Now, o)
		seen[n.ID] = true
		if len(reasons) > 0 {
			p.Excluded = append(p.Excluded, Exclusion{ID: n.ID, Reason: reasons[0], Reasons: reasons})
			p.Breakdown.add(reasons[0].Code)
			continue
		}
		cands = append(cands, rank(n, in.SpreadKey, o))
	}
	sortCandidates(cands, o.RankBy)
	for _, r := range cands {
		p.Candidates = append(p.Candidates, r.c)
	}
	if len(p.Candidates) > 0 {
		p.Verdict = Selected
	} else {
		p.Verdict, p.RequeueAfter = NoCapacity, o.RetryAfter
	}
	return p, nil
}

// nodeLimit is the M Decide applies to n.
func nodeLimit(n NodeLoad, o Options) int {
	if n.Max == 0 {
		return o.MaxJobs
	}
	return n.Max
}

// excludeReasons lists every reason n fails, primary first; none for a
// candidate. A duplicate or invalid node is not looked at further.
func excludeReasons(n NodeLoad, dup bool, now time.Time, o Options) []Reason {
	if dup {
		return []Reason{{Code: ReasonDuplicateNode, Message: "node listed twice; the first snapshot is used"}}
	}
	if msg := invalidNode(n, o); msg != "" {
		return []Reason{{Code: ReasonInvalidNode, Message: msg, Facts: ReasonFacts{Limit: float64(nodeLimit(n, o))}}}
	}
	var reasons []Reason
	if r, stale := staleReason(n, now, o); stale {
		reasons = append(reasons, r)
	}
	if eff, m := n.Effective(o.Accounting), nodeLimit(n, o); eff >= m {
		reasons = append(reasons, overLimit(ReasonCapacityExceeded, float64(eff), float64(m)))
	}
	return append(reasons, usageReasons(n.Usage, o.Threshold)...)
}

// invalidNode explains why n is unusable, or returns "".
func invalidNode(n NodeLoad, o Options) string {
	m := nodeLimit(n, o)
	switch {
	case len(validateNodeID("id", n.ID)) > 0 || m <= 0:
		return fmt.Sprintf("invalid node (id %q, max %d)", n.ID, m)
	case m > MaxCount || n.Running > MaxCount || n.Pending > MaxCount || n.AckedUncounted > MaxCount:
		return fmt.Sprintf("invalid node (max %d, running %d, pending %d, acked %d: a count above %d)", m, n.Running, n.Pending, n.AckedUncounted, MaxCount)
	case n.Running < 0 || n.Pending < 0 || n.AckedUncounted < 0:
		return fmt.Sprintf("invalid node (running %d, pending %d, acked %d: a negative count)", n.Running, n.Pending, n.AckedUncounted)
	}
	return ""
}

// staleReason reports a missing or old heartbeat.
func staleReason(n NodeLoad, now time.Time, o Options) (Reason, bool) {
	switch {
	case o.IgnoreHeartbeatAge:
		return Reason{}, false
	case n.HeartbeatAt.IsZero():
		return staleHeartbeat(0, o.HeartbeatTimeout), true
	case now.Sub(n.HeartbeatAt) > o.HeartbeatTimeout:
		return staleHeartbeat(now.Sub(n.HeartbeatAt), o.HeartbeatTimeout), true
	}
	return Reason{}, false
}

// usageReasons lists the usage figures above the threshold, then unknown ones.
func usageReasons(u Usage, threshold float64) []Reason {
	var reasons []Reason
	if !bad(u.CPU) && u.CPU > threshold {
		reasons = append(reasons, overLimit(ReasonCPUOverThreshold, u.CPU, threshold))
	}
	if u.HasGPU && !bad(u.GPU) && u.GPU > threshold {
		reasons = append(reasons, overLimit(ReasonGPUOverThreshold, u.GPU, threshold))
	}
	if !bad(u.Memory) && u.Memory > threshold {
		reasons = append(reasons, overLimit(ReasonMemoryOverThreshold, u.Memory, threshold))
	}
	if bad(u.CPU) || bad(u.Memory) || (u.HasGPU && bad(u.GPU)) {
		reasons = append(reasons, Reason{Code: ReasonUsageUnknown, Message: "usage unknown (NaN or negative)"})
	}
	return reasons
}

// ranked is a candidate with its sort keys.
type ranked struct {
	c       Candidate
	topUse  float64
	spread  uint64
	hasHash bool
}

func rank(n NodeLoad, spreadKey string, o Options) ranked {
	m, eff := nodeLimit(n, o), n.Effective(o.Accounting)
	r := ranked{c: Candidate{ID: n.ID, Effective: eff, Max: m, Free: m - eff, Running: n.Running, Usage: n.Usage},
		topUse: topUsage(n.Usage)}
	if spreadKey != "" {
		h := fnv.New64a()
		h.Write([]byte(spreadKey))
		h.Write([]byte{0})
		h.Write([]byte(n.ID))
		r.spread, r.hasHash = h.Sum64(), true
	}
	return r
}

// sortCandidates orders candidates least loaded first, with explicit
// tie-breaks: utilisation (RankUtilisation), load, top usage
// (RankUtilisation), spread hash, id.
func sortCandidates(cands []ranked, by RankBy) {
	slices.SortFunc(cands, func(a, b ranked) int {
		if by == RankUtilisation {
			// a.eff/a.max vs b.eff/b.max by cross-multiplication: exact, no
			// floats, and no overflow (counts are at most MaxCount).
			if c := cmp.Compare(int64(a.c.Effective)*int64(b.c.Max), int64(b.c.Effective)*int64(a.c.Max)); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(a.c.Effective, b.c.Effective); c != 0 {
			return c
		}
		if by == RankUtilisation {
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
}

func bad(x float64) bool { return math.IsNaN(x) || x < 0 }

func topUsage(u Usage) float64 {
	t := max(u.CPU, u.Memory)
	if u.HasGPU {
		t = max(t, u.GPU)
	}
	return t
}
