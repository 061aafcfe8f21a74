package capacity

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// HistoryOpKind names the single-node operation a HistoryOp records.
type HistoryOpKind string

// The operations CheckLinearizable understands: the single-node SlotStore
// calls. ReserveBatch spans nodes and is checked by the differential tests
// instead.
const (
	OpReserve   HistoryOpKind = "reserve"
	OpAck       HistoryOpKind = "ack"
	OpRelease   HistoryOpKind = "release"
	OpHeartbeat HistoryOpKind = "heartbeat"
)

// String returns the operation's name.
func (k HistoryOpKind) String() string { return string(k) }

// HistoryOp is one completed call of a concurrent history: what was asked,
// what the store answered, the store time it ran at, and when it was invoked
// and when it returned on one logical clock shared by every client (any
// strictly increasing counter: Call < Return, and op a precedes op b in real
// time exactly when a.Return < b.Call).
//
// Node names the node for every kind (Reservation.Node and Ack.Node must
// equal it when set). Exactly the fields of the operation's kind are read:
// Reservation and Reserved; Ack and Acked; RID and Released; Heartbeat,
// HeartbeatStatus and SeqBackwards (whether the call's error wrapped
// ErrSeqBackwards).
type HistoryOp struct {
	Client       int
	Kind         HistoryOpKind
	Node         string
	Now          time.Time
	Call, Return int64

	Reservation Reservation
	Reserved    ReserveResult

	Ack   Ack
	Acked AckStatus

	RID      string
	Released bool

	Heartbeat       Heartbeat
	HeartbeatStatus HeartbeatStatus
	SeqBackwards    bool
}

// String renders the operation and its answer on one line.
func (op HistoryOp) String() string {
	var what, got string
	switch op.Kind {
	case OpReserve:
		what, got = "reserve "+op.Reservation.RID, op.Reserved.String()
	case OpAck:
		what, got = fmt.Sprintf("ack %s epoch=%d seq=%d", op.Ack.RID, op.Ack.Epoch, op.Ack.Seq), op.Acked.String()
	case OpRelease:
		what, got = "release "+op.RID, fmt.Sprint(op.Released)
	case OpHeartbeat:
		what = fmt.Sprintf("heartbeat epoch=%d seq=%d running=%d", op.Heartbeat.Epoch, op.Heartbeat.Seq, op.Heartbeat.Running)
		got = op.HeartbeatStatus.String()
		if op.SeqBackwards {
			got += " (seq backwards)"
		}
	default:
		what = op.Kind.String()
	}
	return fmt.Sprintf("[%d,%d] client %d %s on %s at %s: %s", op.Call, op.Return, op.Client, what, op.Node, fmtTime(op.Now), got)
}

// ErrNotLinearizable is wrapped by CheckLinearizable's error when a history
// has no linearization.
var ErrNotLinearizable = errors.New("capacity: history is not linearizable")

// maxHistoryPerNode bounds the ops of one node: the search is exponential in
// the number of overlapping operations.
const maxHistoryPerNode = 16

// CheckLinearizable reports whether a concurrent history of single-node slot
// store calls is linearizable against NodeLedger with options o:
// whether every node's operations can be put in one order that respects real
// time (an operation that returned before another was invoked comes first)
// and in which each operation, applied to the ledger at its recorded store
// time, gives exactly the recorded answer. A slot store is correct only if
// every history it produces passes.
//
// Operations on different nodes touch disjoint state, so each node is checked
// on its own (linearizability is local). The search is Wing and Gong's,
// with Lowe's memoisation of (operations done, ledger state); a node may have
// at most 16 operations. Bad input is an error wrapping ErrInvalidInput; a
// history without linearization is an error wrapping ErrNotLinearizable that
// lists the node's operations and the longest linearizable prefix found.
func CheckLinearizable(history []HistoryOp, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	byNode := map[string][]HistoryOp{}
	var errs field.ErrorList
	for i, op := range history {
		errs = append(errs, op.validate(func() *field.Path { return field.NewPath("history").Index(i) })...)
		byNode[op.Node] = append(byNode[op.Node], op)
	}
	nodes := make([]string, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		if k := len(byNode[n]); k > maxHistoryPerNode {
			errs = append(errs, field.Invalid(field.NewPath("history"), n,
				fmt.Sprintf("node has %d operations, at most %d are checked", k, maxHistoryPerNode)))
		}
	}
	if err := plancore.Invalid(ErrInvalidInput, errs); err != nil {
		return err
	}
	for _, n := range nodes {
		if err := checkNode(byNode[n], o); err != nil {
			return err
		}
	}
	return nil
}

// validate checks one operation; path builds its field path, only for a
// problem.
func (op HistoryOp) validate(path func() *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch op.Kind {
	case OpReserve, OpAck, OpRelease, OpHeartbeat:
	default:
		errs = append(errs, field.NotSupported(path().Child("kind"), string(op.Kind),
			[]string{string(OpReserve), string(OpAck), string(OpRelease), string(OpHeartbeat)}))
	}
	if op.Node == "" {
		errs = append(errs, field.Required(path().Child("node"), "every operation names its node"))
	}
	if op.Call >= op.Return {
		errs = append(errs, field.Invalid(path().Child("call"), op.Call, fmt.Sprintf("must be before return (%d)", op.Return)))
	}
	if op.Kind == OpReserve && op.Reservation.Node != "" && op.Reservation.Node != op.Node {
		errs = append(errs, field.Invalid(path().Child("reservation", "node"), op.Reservation.Node, "differs from node "+op.Node))
	}
	if op.Kind == OpAck && op.Ack.Node != "" && op.Ack.Node != op.Node {
		errs = append(errs, field.Invalid(path().Child("ack", "node"), op.Ack.Node, "differs from node "+op.Node))
	}
	return errs
}

// apply runs op on l and reports whether the ledger gives op's recorded
// answer.
func (op HistoryOp) apply(l NodeLedger) (NodeLedger, bool, error) {
	switch op.Kind {
	case OpReserve:
		next, res, err := l.Reserve(op.Now, op.Reservation)
		return next, err == nil && sameReserve(res, op.Reserved), err
	case OpAck:
		next, st, err := l.Ack(op.Now, op.Ack)
		return next, err == nil && st == op.Acked, err
	case OpRelease:
		next, ok, err := l.Release(op.Now, op.RID)
		return next, err == nil && ok == op.Released, err
	default:
		next, st, err := l.Heartbeat(op.Now, op.Heartbeat)
		back := errors.Is(err, ErrSeqBackwards)
		if err != nil && !back {
			return l, false, err
		}
		return next, st == op.HeartbeatStatus && back == op.SeqBackwards, nil
	}
}

// sameReserve compares answers at the stores' millisecond resolution.
func sameReserve(a, b ReserveResult) bool {
	return a.Status == b.Status && a.Epoch == b.Epoch && a.Load == b.Load &&
		a.Expiry.UnixMilli() == b.Expiry.UnixMilli() && a.EarliestExpiry.UnixMilli() == b.EarliestExpiry.UnixMilli()
}

func checkNode(ops []HistoryOp, o Options) error {
	slices.SortStableFunc(ops, func(a, b HistoryOp) int { return cmp.Compare(a.Call, b.Call) })
	start, err := NewNodeLedger(o)
	if err != nil {
		return err
	}
	full := uint32(1)<<len(ops) - 1
	seen := map[string]bool{}
	var best []int // the longest linearizable prefix, for the report
	var order []int
	var search func(done uint32, l NodeLedger) (bool, error)
	search = func(done uint32, l NodeLedger) (bool, error) {
		if done == full {
			return true, nil
		}
		key := fmt.Sprintf("%x|%s", done, l.st.key())
		if seen[key] {
			return false, nil
		}
		seen[key] = true
		// An operation may go next only if it was invoked before every
		// pending operation returned.
		first := int64(-1)
		for i, op := range ops {
			if done&(1<<i) == 0 && (first < 0 || op.Return < first) {
				first = op.Return
			}
		}
		for i, op := range ops {
			if done&(1<<i) != 0 || op.Call > first {
				continue
			}
			next, ok, err := op.apply(l)
			if err != nil {
				return false, fmt.Errorf("%w: history op %v: %w", ErrInvalidInput, op, err)
			}
			if !ok {
				continue
			}
			order = append(order, i)
			if len(order) > len(best) {
				best = slices.Clone(order)
			}
			if found, err := search(done|1<<i, next); found || err != nil {
				return found, err
			}
			order = order[:len(order)-1]
		}
		return false, nil
	}
	found, err := search(0, start)
	if err != nil || found {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v: node %q: no order of its %d operations explains every answer\noperations:", ErrNotLinearizable, ops[0].Node, len(ops))
	for _, op := range ops {
		b.WriteString("\n  " + op.String())
	}
	b.WriteString("\nlongest linearizable prefix:")
	l := start
	for _, i := range best {
		l, _, _ = ops[i].apply(l)
		b.WriteString("\n  " + ops[i].String())
	}
	fmt.Fprintf(&b, "\nledger after it: %v", l)
	return &linearizabilityError{msg: b.String()}
}

type linearizabilityError struct{ msg string }

func (e *linearizabilityError) Error() string { return e.msg }
func (e *linearizabilityError) Unwrap() error { return ErrNotLinearizable }

// key renders every field of the state, for the checker's memoisation.
func (s *nodeState) key() string { return fmt.Sprintf("%+v", *s) }
