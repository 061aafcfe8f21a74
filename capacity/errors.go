package capacity

import (
	"context"
	"errors"
	"fmt"

	"github.com/plancore/plancore"
)

// ErrInvalidInput is wrapped by every error about a bad argument: an empty node
// or job id, a negative TTL, a maximum below one, an unknown mode. The message
// names the field and the value.
var ErrInvalidInput = errors.New("capacity: invalid input")

// ErrInvalidOptions is wrapped by Options.Validate and the other Validate methods
// when a field is out of range. The message names the field and the value.
var ErrInvalidOptions = errors.New("capacity: invalid options")

// ErrSeqBackwards is wrapped by the error a heartbeat gets when its sequence
// number is below the stored one within the same epoch. The heartbeat is
// refused (HeartbeatStale) and nothing changes; a caller that expects reordered
// delivery may ignore it with errors.Is.
var ErrSeqBackwards = errors.New("capacity: heartbeat sequence went backwards")

// ErrEpochBackwards is wrapped by NodeGate.Restart when the new epoch is not
// above the current one: epochs must be totally ordered so that a delayed
// message from an earlier boot can never pass for the new one.
var ErrEpochBackwards = errors.New("capacity: epoch did not increase")

// ErrUnknownJob is wrapped by NodeGate methods given a job id the node does not
// hold in the state the method needs.
var ErrUnknownJob = errors.New("capacity: unknown job")

// ErrStoreUnavailable is wrapped by every SlotStore error caused by the store
// itself (Redis unreachable, timed out, or answering garbage). The store fails
// closed: such an error is never a lease and never a "yes". After an unknown
// outcome, retrying the same rid is safe.
var ErrStoreUnavailable = errors.New("capacity: slot store unavailable")

// ErrNilStore is wrapped (with ErrInvalidInput) by Dispatch given no store,
// and by every method of a zero MemoryStore (not made by NewMemoryStore) or
// of a CountingStore without a Store.
var ErrNilStore = plancore.SubError("capacity: nil or zero slot store", ErrInvalidInput)

// nilStore is the SlotStore of a CountingStore without one: every call is an
// error, never a panic.
type nilStore struct{}

func errNilStore() error { return fmt.Errorf("%w: %w", ErrInvalidInput, ErrNilStore) }

func (nilStore) Reserve(context.Context, Reservation) (ReserveResult, error) {
	return ReserveResult{}, errNilStore()
}

func (nilStore) ReserveBatch(context.Context, []Reservation, BatchMode) (BatchResult, error) {
	return BatchResult{}, errNilStore()
}
func (nilStore) Ack(context.Context, Ack) (AckStatus, error)           { return "", errNilStore() }
func (nilStore) Release(context.Context, string, string) (bool, error) { return false, errNilStore() }
func (nilStore) Loads(context.Context, []string) ([]NodeLoad, error)   { return nil, errNilStore() }
func (nilStore) Heartbeat(context.Context, string, Heartbeat) (HeartbeatStatus, error) {
	return "", errNilStore()
}
