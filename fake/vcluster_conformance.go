package fake

import (
	"context"
	"fmt"
	"reflect"

	"github.com/plancore/plancore/vcluster"
)

// VClusterBackend is a vcluster.Executor that can read its records back: what
// a control plane needs across a restart.
type VClusterBackend interface {
	vcluster.Executor
	// LoadRecords returns every stored record, in id order.
	LoadRecords(ctx context.Context) ([]vcluster.Record, error)
}

// CheckVClusterBackend runs the vcluster executor contract against fresh
// backends from newBackend (one per check) and returns every violation: a
// flushed record reads back equal, a flush replaces, flushing twice and
// deleting twice are idempotent, deleting an absent record succeeds,
// publishing (removals included) succeeds, and records round-trip awkward
// ids, hostnames and large memberships.
func CheckVClusterBackend(ctx context.Context, newBackend func() VClusterBackend) []Violation {
	var out []Violation
	fail := func(check, format string, args ...any) {
		out = append(out, Violation{Check: check, Detail: fmt.Sprintf(format, args...)})
	}
	rec := func(id string, rev uint64, n int) vcluster.Record {
		r := vcluster.Record{ID: id, Revision: rev, Nodes: map[string]vcluster.RecordNode{}}
		for i := range n {
			r.Nodes[fmt.Sprintf("node-%04d-\"ü\"", i)] = vcluster.RecordNode{Template: fmt.Sprintf("t%d", i%3), Hostname: fmt.Sprintf("host %d\n", i)}
		}
		return r
	}
	load := func(check string, b VClusterBackend) []vcluster.Record {
		rs, err := b.LoadRecords(ctx)
		if err != nil {
			fail(check, "LoadRecords: %v", err)
		}
		return rs
	}
	equal := func(check string, got, want []vcluster.Record) {
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			fail(check, "records %+v, want %+v", got, want)
		}
	}

	b := newBackend()
	a := rec("a", 1, 3)
	j := rec("a##job", 2, 1)
	big := rec("big", 3, 1000)
	big.Divisible, big.ZeroTemplates = true, []string{"gpu"}
	for _, r := range []vcluster.Record{a, j, big} {
		if err := b.FlushRecord(ctx, r); err != nil {
			fail("flush", "FlushRecord(%s): %v", r.ID, err)
		}
	}
	equal("flushed records read back in id order", load("load", b), []vcluster.Record{a, j, big})

	b = newBackend()
	a2 := rec("a", 9, 1)
	for _, r := range []vcluster.Record{a, a2, a2} {
		if err := b.FlushRecord(ctx, r); err != nil {
			fail("flush replaces", "FlushRecord: %v", err)
		}
	}
	equal("flush replaces and is idempotent", load("load", b), []vcluster.Record{a2})

	for range 2 {
		if err := b.DeleteRecord(ctx, "a"); err != nil {
			fail("delete is idempotent", "DeleteRecord: %v", err)
		}
	}
	if err := b.DeleteRecord(ctx, "never-stored"); err != nil {
		fail("delete tolerates not found", "DeleteRecord: %v", err)
	}
	equal("deleted records are gone", load("load", b), nil)

	b = newBackend()
	for _, r := range []vcluster.Record{a, j, {ID: "a##job", Removed: true, Nodes: map[string]vcluster.RecordNode{}}} {
		if err := b.PublishRecord(ctx, r); err != nil {
			fail("publish", "PublishRecord(%s): %v", r.ID, err)
		}
	}
	equal("publishing stores nothing", load("load", b), nil)
	return out
}
