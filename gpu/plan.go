package gpu

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// String renders the action on one line, map keys sorted, for logs and golden
// transcripts.
func (a Action) String() string {
	var b strings.Builder
	b.WriteString(string(a.Kind))
	switch a.Kind {
	case ActionGetPod:
		fmt.Fprintf(&b, " %s", a.Pod)
	case ActionGetNode, ActionBind:
		fmt.Fprintf(&b, " %s -> %s", a.Pod, a.Node)
	case ActionLock, ActionRelease:
		fmt.Fprintf(&b, " %s on %s for %s", a.Lock, a.Node, a.Pod)
	case ActionWait:
		fmt.Fprintf(&b, " up to %v for %v on %s", a.Wait, a.WaitLocks, a.Node)
	case ActionPatchPod:
		fmt.Fprintf(&b, " %s {", a.Pod)
		for i, k := range slices.Sorted(maps.Keys(a.Annotations)) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s=%s", k, a.Annotations[k])
		}
		b.WriteString("}")
	case ActionEvent:
		fmt.Fprintf(&b, " %s %s %s: %s", a.Pod, a.EventType, a.EventReason, a.Message)
	case ActionForgetAssumed:
		fmt.Fprintf(&b, " %s", a.Pod)
	}
	if a.Reason.Code != "" {
		fmt.Fprintf(&b, " (%s)", a.Reason.Code)
	}
	return b.String()
}

// String renders the result of one action.
func (r Result) String() string {
	var parts []string
	switch {
	case r.Err != nil && r.Contention:
		parts = append(parts, "contention: "+r.Err.Error())
	case r.Err != nil && r.OutcomeUnknown:
		parts = append(parts, "unknown: "+r.Err.Error())
	case r.Err != nil:
		parts = append(parts, "error: "+r.Err.Error())
	default:
		parts = append(parts, "ok")
	}
	if r.Epoch != 0 {
		parts = append(parts, fmt.Sprintf("epoch=%d", r.Epoch))
	}
	if r.Pod != nil {
		node := r.Pod.Spec.NodeName
		if node == "" {
			node = "<unbound>"
		}
		parts = append(parts, "pod on "+node)
	}
	if r.Woken {
		parts = append(parts, "woken")
	}
	return strings.Join(parts, " ")
}

// String renders the outcome on one line.
func (o Outcome) String() string {
	var b strings.Builder
	switch {
	case o.Bound:
		b.WriteString("bound")
	case o.Unknown:
		b.WriteString("unknown")
	default:
		b.WriteString("failed")
	}
	fmt.Fprintf(&b, " attempts=%d", o.Attempts)
	if len(o.Held) > 0 {
		fmt.Fprintf(&b, " held=%s", FormatLockEpochs(o.Held))
	}
	if len(o.Released) > 0 {
		fmt.Fprintf(&b, " released=%v", o.Released)
	}
	if o.Err != nil {
		fmt.Fprintf(&b, " error=%q", o.ExtenderError())
	}
	if o.ReturnGoError {
		b.WriteString(" go-error")
	}
	return b.String()
}

// String renders the fit on one line per node, nodes sorted by name, then the
// choice: a node that fits lists each container's devices as
// "<uuid>(<mem>MiB,<cores>%)", a refused one its first failing request and
// HAMi's reason string.
func (r Plan) String() string {
	var b strings.Builder
	for _, n := range r.Nodes {
		if !n.Fits {
			fmt.Fprintf(&b, "%s refused score=%.2f: %s %s: %s\n", n.Node, n.Score, n.FailedContainer, n.FailedType, n.Message())
			continue
		}
		fmt.Fprintf(&b, "%s fits score=%.2f:", n.Node, n.Score)
		for _, c := range n.Containers {
			fmt.Fprintf(&b, " %s", c.Container)
			if c.Init {
				b.WriteString("(init)")
			}
			b.WriteString("->")
			for i, a := range c.Devices {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%s(%dMiB,%d%%)", a.UUID, a.MemoryMiB, a.Cores)
			}
		}
		b.WriteByte('\n')
	}
	if r.Node == "" {
		b.WriteString("chosen: none\n")
	} else {
		fmt.Fprintf(&b, "chosen: %s\n", r.Node)
	}
	return b.String()
}
