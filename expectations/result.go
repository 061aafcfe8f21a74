package expectations

import (
	"fmt"
	"strings"
	"time"

	"github.com/plancore/plancore"
	"k8s.io/apimachinery/pkg/types"
)

// ReasonCode says, in one UpperCamelCase word, why an item is still pending.
// The codes are part of the API: match on them, never on Message.
type ReasonCode string

const (
	// ReasonUnseen: a create whose pod the view has not shown yet, or a delete
	// whose pod is absent but was never seen (its absence proves nothing).
	ReasonUnseen ReasonCode = "Unseen"
	// ReasonPresent: a delete whose pod the view still shows.
	ReasonPresent ReasonCode = "Present"
	// ReasonUnresolved: a create known only by its token, with no pod carrying it.
	ReasonUnresolved ReasonCode = "Unresolved"
	// ReasonExpired: the deadline passed unobserved and OnExpiry is Block.
	ReasonExpired ReasonCode = "Expired"
)

// Reason explains why an item is pending: a code to match on and a message
// for people.
type Reason = plancore.Reason[ReasonCode, plancore.NoFacts]

// reasons holds the one Reason of each code, so a check allocates nothing for it.
var reasons = map[ReasonCode]Reason{
	ReasonUnseen:     {Code: ReasonUnseen, Message: "unseen"},
	ReasonPresent:    {Code: ReasonPresent, Message: "still present"},
	ReasonUnresolved: {Code: ReasonUnresolved, Message: "unresolved token"},
	ReasonExpired:    {Code: ReasonExpired, Message: "expired"},
}

// Entry describes one item in a Verdict.
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
	Reason Reason `json:",omitzero"`
	// View is what the view showed of the pod: set for Expired and Lingering
	// items (an expired create is usually absent, an expired delete present or
	// terminating), ViewAbsent elsewhere.
	View ViewState
}

// Verdict is the verdict of one check of one group.
type Verdict struct {
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
	// RequeueAfter is how long after the check's now the earliest deadline of a
	// pending item falls, or zero when none is pending: with an unchanged view,
	// the result changes then and not before.
	RequeueAfter time.Duration
}

// LingeringPods returns the names of the Lingering pods, in order.
func (r Verdict) LingeringPods() []string {
	return entryNames(r.Lingering)
}

// PendingPods returns the names of the Pending items' pods in order, with a
// create not yet named shown as its token in brackets.
func (r Verdict) PendingPods() []string {
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
func (r Verdict) String() string {
	var b strings.Builder
	verdict := "satisfied"
	if !r.Satisfied {
		verdict = "unsatisfied"
	}
	fmt.Fprintf(&b, "owner %s group %q: %s", r.Owner, r.Group, verdict)
	if r.RequeueAfter > 0 {
		fmt.Fprintf(&b, ", requeue after %s", r.RequeueAfter)
	}
	b.WriteByte('\n')
	write := func(list string, es []Entry) {
		for _, e := range es {
			fmt.Fprintf(&b, "  %-9s %-6s %s", list, e.Action, e.label())
			if e.PodUID != "" {
				fmt.Fprintf(&b, " uid=%s", e.PodUID)
			}
			if e.Reason.Code != "" {
				fmt.Fprintf(&b, " (%s)", e.Reason.Code)
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
