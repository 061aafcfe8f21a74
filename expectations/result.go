package expectations

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Reason says why an item is still pending.
type Reason uint8

const (
	// ReasonUnseen: a create whose pod the view has not shown yet, or a delete
	// whose pod is absent but was never seen (its absence proves nothing).
	ReasonUnseen Reason = iota + 1
	// ReasonPresent: a delete whose pod the view still shows.
	ReasonPresent
	// ReasonUnresolved: a create known only by its token, with no pod carrying it.
	ReasonUnresolved
	// ReasonExpired: the deadline passed unobserved and OnExpiry is Block.
	ReasonExpired
)

// String names the reason.
func (r Reason) String() string {
	switch r {
	case ReasonUnseen:
		return "unseen"
	case ReasonPresent:
		return "still present"
	case ReasonUnresolved:
		return "unresolved token"
	case ReasonExpired:
		return "expired"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Entry describes one item in a Result.
type Entry struct {
	// Pod is the pod's name; for a create settled by its token it is the name
	// the view showed.
	Pod    string
	Token  string
	PodUID types.UID
	// Deadline is when the item expires; zero if it never does.
	Deadline time.Time
	Action   Action
	Seen     bool
	// Resolution says how far the item's API call got.
	Resolution Resolution
	// Reason says why a Pending item waits; zero in the other lists.
	Reason Reason
	// View is what the view showed of the pod: set for Expired and Lingering
	// items (an expired create is usually absent, an expired delete present or
	// terminating), ViewAbsent elsewhere.
	View ViewState
}

// Result is the verdict of one check of one group.
type Result struct {
	Owner Owner
	Group string
	// Satisfied is true when nothing is pending: the group may be planned.
	Satisfied bool
	// Pending lists the items that keep the group unsatisfied, sorted by key
	// (pod name, then token).
	Pending []Entry
	// Observed lists the items this check settled because the view (or an
	// earlier event) showed what they expected.
	Observed []Entry
	// Expired lists the items this check settled because their deadline passed
	// unobserved. Expiry is never observation: the cache may still be stale, so
	// a caller should alert and, if it can, list the group from the API server
	// before creating.
	Expired []Entry
	// Overdue lists the items whose deadline passed under OnExpiry Block for the
	// first time: they stay in Pending, with reason ReasonExpired.
	Overdue []Entry
	// Lingering lists expired deletes whose pod is still in the view while the
	// planner counts terminating pods (an item that expires in this check is in
	// both Expired and Lingering). They do not block the group, but the
	// planner must neither count their pods nor pick them as victims.
	Lingering []Entry
	// NextChange is the earliest future deadline of a pending item, or zero: with
	// an unchanged view, the result changes at NextChange and not before.
	NextChange time.Time
}

// RequeueAfter returns how long after now the caller should check again if the
// view does not change first, or zero when no deadline is pending.
func (r Result) RequeueAfter(now time.Time) time.Duration {
	if r.NextChange.IsZero() {
		return 0
	}
	return r.NextChange.Sub(now)
}

// LingeringPods returns the names of the Lingering pods, in order.
func (r Result) LingeringPods() []string {
	return entryNames(r.Lingering)
}

// PendingPods returns the names of the Pending items' pods in order, with a
// create not yet named shown as its token in brackets.
func (r Result) PendingPods() []string {
	return entryNames(r.Pending)
}

func entryNames(es []Entry) []string {
	if len(es) == 0 {
		return nil
	}
	out := make([]string, len(es))
	for i, e := range es {
		if out[i] = e.Pod; e.Pod == "" {
			out[i] = "[" + e.Token + "]"
		}
	}
	return out
}

func (e Entry) label() string {
	switch {
	case e.Pod != "" && e.Token != "":
		return e.Pod + " [" + e.Token + "]"
	case e.Pod != "":
		return e.Pod
	}
	return "[" + e.Token + "]"
}

// String renders the result deterministically, one line per item.
func (r Result) String() string {
	var b strings.Builder
	verdict := "satisfied"
	if !r.Satisfied {
		verdict = "unsatisfied"
	}
	fmt.Fprintf(&b, "owner %s group %q: %s", r.Owner, r.Group, verdict)
	if !r.NextChange.IsZero() {
		fmt.Fprintf(&b, ", next change %s", r.NextChange.UTC().Format(time.RFC3339Nano))
	}
	b.WriteByte('\n')
	write := func(list string, es []Entry) {
		for _, e := range es {
			fmt.Fprintf(&b, "  %-9s %-6s %s", list, e.Action, e.label())
			if e.PodUID != "" {
				fmt.Fprintf(&b, " uid=%s", e.PodUID)
			}
			if e.Reason != 0 {
				fmt.Fprintf(&b, " (%s)", e.Reason)
			}
			if list == "expired" || list == "lingering" {
				fmt.Fprintf(&b, " view=%s", e.View)
			}
			if e.Deadline.IsZero() {
				b.WriteString(" deadline=never")
			} else {
				fmt.Fprintf(&b, " deadline=%s", e.Deadline.UTC().Format(time.RFC3339Nano))
			}
			fmt.Fprintf(&b, " seen=%t %s\n", e.Seen, e.Resolution)
		}
	}
	write("pending", r.Pending)
	write("overdue", r.Overdue)
	write("observed", r.Observed)
	write("expired", r.Expired)
	write("lingering", r.Lingering)
	return b.String()
}
