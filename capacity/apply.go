package capacity

import (
	"context"
)

// SlotStore keeps the reservations of every node: MemoryStore in one process, the
// Redis store of github.com/plancore/plancore/adapters/redis across several
// scheduler instances. Every method is atomic per node and idempotent per rid.
//
// Errors are for bad input (wrapping ErrInvalidInput, naming the field) and
// for store failures (wrapping ErrStoreUnavailable). A store failure is NEVER
// reported as a refusal or as a grant: the caller must treat the outcome as
// unknown, and may retry the same rid safely.
type SlotStore interface {
	// Reserve asks for a pending lease of r.TTL for r.RID on r.Node.
	Reserve(ctx context.Context, r Reservation) (ReserveResult, error)
	// ReserveBatch reserves several items, several per node allowed, decided
	// in order, in one atomic step per store shard.
	ReserveBatch(ctx context.Context, items []Reservation, mode BatchMode) (BatchResult, error)
	// Ack commits the node's acknowledgement. The node starts the job only on
	// an answer whose Start() is true.
	Ack(ctx context.Context, a Ack) (AckStatus, error)
	// Release drops a pending lease; an unknown, expired or acknowledged rid
	// is a no-op. It reports whether a lease was dropped.
	Release(ctx context.Context, node, rid string) (bool, error)
	// Heartbeat applies a node's heartbeat.
	Heartbeat(ctx context.Context, node string, h Heartbeat) (HeartbeatStatus, error)
	// Loads reports nodes in the order asked, without changing anything:
	// advisory input to Decide (Reserve re-checks atomically).
	Loads(ctx context.Context, nodes []string) ([]NodeLoad, error)
}
