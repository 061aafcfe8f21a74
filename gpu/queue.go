package gpu

import (
	"context"
	"sync"
)

// NodeQueue serves Binds of one node in arrival order: only the head of a
// node's line runs, the others wait their turn instead of all retrying the
// lock at once. HAMi fails the losers of a burst into the kube-scheduler's
// backoff, so 100 requests for one 8-GPU node fail without queuing (#1655)
// and 40 pods take minutes (#1367). The zero value is ready to use and safe
// for concurrent use.
type NodeQueue struct {
	mu    sync.Mutex
	lines map[string][]chan struct{}
}

// Enter waits until the caller is at the head of node's line and returns the
// function that leaves it (call it exactly once). If ctx ends first, the
// caller leaves the line and Enter returns ctx's error.
func (q *NodeQueue) Enter(ctx context.Context, node string) (leave func(), err error) {
	turn := make(chan struct{})
	q.mu.Lock()
	if q.lines == nil {
		q.lines = map[string][]chan struct{}{}
	}
	q.lines[node] = append(q.lines[node], turn)
	if len(q.lines[node]) == 1 {
		close(turn)
	}
	q.mu.Unlock()
	leave = func() { q.leave(node, turn) }
	select {
	case <-turn:
		return leave, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

// Len returns how many callers are in node's line, the running head included.
func (q *NodeQueue) Len(node string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.lines[node])
}

// leave removes turn from node's line and, if it was the head, opens the
// next caller's turn.
func (q *NodeQueue) leave(node string, turn chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	line := q.lines[node]
	for i, t := range line {
		if t != turn {
			continue
		}
		line = append(line[:i:i], line[i+1:]...)
		if i == 0 && len(line) > 0 {
			close(line[0])
		}
		break
	}
	if len(line) == 0 {
		delete(q.lines, node)
	} else {
		q.lines[node] = line
	}
}

// Binder runs Binds with optional per-node queueing. Exec and Waiter are
// required; Queue is optional.
type Binder struct {
	Exec   BindExecutor
	Waiter Waiter
	// Queue, when set, serves the Binds of each node one at a time in arrival
	// order.
	Queue *NodeQueue
}

// Bind runs ApplyBind for in, in its node's line when Queue is set.
func (b *Binder) Bind(ctx context.Context, in BindInput) (Outcome, error) {
	if b.Queue != nil {
		leave, err := b.Queue.Enter(ctx, in.Node)
		if err != nil {
			out := Outcome{Err: err, ReturnGoError: true}
			return out, err
		}
		defer leave()
	}
	return ApplyBind(ctx, in, b.Exec, b.Waiter)
}
