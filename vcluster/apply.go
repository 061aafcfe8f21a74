package vcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/plancore/plancore"
)

// Executor writes plans out: records to storage and to every worker. Each
// method must be idempotent: flushing the same record twice leaves the same
// stored value, and deleting an absent record succeeds.
type Executor interface {
	// FlushRecord writes r as the stored record of r.ID, replacing any
	// previous one.
	FlushRecord(ctx context.Context, r Record) error
	// DeleteRecord deletes the stored record of id.
	DeleteRecord(ctx context.Context, id string) error
	// PublishRecord sends r to every worker. A record with Removed set
	// announces that the cluster is gone.
	PublishRecord(ctx context.Context, r Record) error
}

// WriteAction is what Apply did with one record.
type WriteAction string

const (
	// WriteFlush stored a record.
	WriteFlush WriteAction = "flush"
	// WriteDelete deleted a stored record.
	WriteDelete WriteAction = "delete"
	// WritePublish sent a record to every worker.
	WritePublish WriteAction = "publish"
)

// WriteResult is the outcome of one write: Err is nil when it succeeded.
type WriteResult struct {
	Cluster string
	Action  WriteAction
	Err     error
}

// Report says what Apply did, in call order: one result per write it
// attempted, and the ids of the writes that succeeded by kind.
type Report struct {
	Results   []WriteResult
	Flushed   []string
	Deleted   []string
	Published []string
}

func (r *Report) record(id string, a WriteAction, err error) error {
	r.Results = append(r.Results, WriteResult{Cluster: id, Action: a, Err: err})
	if err != nil {
		return fmt.Errorf("vcluster: %s %s: %w", a, id, err)
	}
	switch a {
	case WriteFlush:
		r.Flushed = append(r.Flushed, id)
	case WriteDelete:
		r.Deleted = append(r.Deleted, id)
	default:
		r.Published = append(r.Published, id)
	}
	return nil
}

// Apply writes plan p out through exec, reading the records from p.After.
//
// For each id of p.Flush in order, Apply writes RecordOf(p.After, id), or
// deletes the record when p.After has no such cluster, and then, only if
// that write succeeded and id is in p.Publish, publishes the record (a
// removal record for a deleted cluster). It stops at the first failure, so a
// job record is never published ahead of its write, and returns it (joined
// with the context's error when cancelled) with the report of what was
// attempted; every call is idempotent, so the caller retries by applying the
// same plan again. Apply never re-plans. An empty plan writes nothing; a
// refused plan writes nothing and is an error wrapping ErrRefusedPlan (the
// caller asked to write a plan that says it cannot act); a nil exec is an
// error wrapping ErrNilExecutor.
func Apply(ctx context.Context, p Plan, exec Executor) (Report, error) {
	var rep Report
	if plancore.IsNil(exec) {
		return rep, ErrNilExecutor
	}
	if p.Refusal != nil {
		return rep, fmt.Errorf("%w: %s", ErrRefusedPlan, p.Refusal)
	}
	if len(p.Flush) == 0 {
		return rep, nil
	}
	if p.After.Primary.ID != PrimaryID {
		return rep, fmt.Errorf("%w: the plan has no After state; plan it with a planning function", ErrPlanMismatch)
	}
	for _, id := range p.Flush {
		if err := ctx.Err(); err != nil {
			return rep, errors.Join(err)
		}
		if err := applyOne(ctx, &rep, p, id, exec); err != nil {
			return rep, errors.Join(err)
		}
	}
	return rep, nil
}

// applyOne writes (or deletes) the record of id and publishes it when asked.
func applyOne(ctx context.Context, rep *Report, p Plan, id string, exec Executor) error {
	if id == PrimaryID {
		return fmt.Errorf("%w: the primary is never flushed", ErrPlanMismatch)
	}
	rec, ok := RecordOf(p.After, id)
	if ok {
		if err := rep.record(id, WriteFlush, exec.FlushRecord(ctx, rec)); err != nil {
			return err
		}
	} else {
		rec = Record{ID: id, Removed: true, Nodes: map[string]RecordNode{}}
		if err := rep.record(id, WriteDelete, exec.DeleteRecord(ctx, id)); err != nil {
			return err
		}
	}
	if !slices.Contains(p.Publish, id) {
		return nil
	}
	if rec.Divisible {
		return fmt.Errorf("%w: divisible cluster %s is never published", ErrPlanMismatch, id)
	}
	return rep.record(id, WritePublish, exec.PublishRecord(ctx, rec))
}
