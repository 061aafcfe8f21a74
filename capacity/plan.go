package capacity

import (
	"fmt"
	"strings"
)

// String renders the plan deterministically: outcome, candidates in rank
// order, exclusions in input order, and the breakdown.
func (s Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "selection: %s", s.Verdict)
	if s.RequeueAfter > 0 {
		fmt.Fprintf(&b, " requeue=%v", s.RequeueAfter)
	}
	b.WriteByte('\n')
	for i, c := range s.Candidates {
		fmt.Fprintf(&b, "  %d. %s effective=%d/%d free=%d %s\n", i+1, c.ID, c.Effective, c.Max, c.Free, fmtUsage(c.Usage))
	}
	for _, e := range s.Excluded {
		fmt.Fprintf(&b, "  x %s %s", e.ID, e.Reason)
		if len(e.Reasons) > 1 {
			names := make([]string, len(e.Reasons))
			for i, r := range e.Reasons {
				names[i] = string(r.Code)
			}
			fmt.Fprintf(&b, " [%s]", strings.Join(names, ","))
		}
		b.WriteByte('\n')
	}
	b.WriteString("  breakdown: " + s.Breakdown.String() + "\n")
	return b.String()
}

// String renders the non-zero counts in reason code order.
func (b Breakdown) String() string {
	parts := []string{}
	for i, n := range b.counts() {
		if *n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", exclusionCodes[i], *n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// String renders the dispatch deterministically.
func (d DispatchResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dispatch: %s", d.Verdict)
	if d.Verdict == Selected {
		fmt.Fprintf(&b, " node=%s rid=%s epoch=%d", d.Lease.Node, d.Lease.RID, d.Lease.Epoch)
		if !d.Lease.Expiry.IsZero() {
			fmt.Fprintf(&b, " expiry=%s", fmtTime(d.Lease.Expiry))
		}
	}
	if d.RequeueAfter > 0 {
		fmt.Fprintf(&b, " requeue=%v", d.RequeueAfter)
	}
	b.WriteByte('\n')
	for i, a := range d.Attempts {
		fmt.Fprintf(&b, "  attempt %d: %s %s\n", i+1, a.Node, a.Result)
	}
	for _, e := range d.Excluded {
		fmt.Fprintf(&b, "  x %s %s\n", e.ID, e.Reason)
	}
	return b.String()
}

func fmtUsage(u Usage) string {
	s := fmt.Sprintf("cpu=%g%% mem=%g%%", u.CPU, u.Memory)
	if u.HasGPU {
		s += fmt.Sprintf(" gpu=%g%%", u.GPU)
	}
	return s
}
