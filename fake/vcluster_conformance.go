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
	return runChecks(ctx, vclusterChecks, func(context.Context) (VClusterBackend, error) { return newBackend(), nil })
}

// vrec is a record of id at rev with n nodes whose ids and hostnames are
// awkward (quotes, non-ASCII, spaces, newlines).
func vrec(id string, rev uint64, n int) vcluster.Record {
	r := vcluster.Record{ID: id, Revision: rev, Nodes: map[string]vcluster.RecordNode{}}
	for i := range n {
		r.Nodes[fmt.Sprintf("node-%04d-\"ü\"", i)] = vcluster.RecordNode{Template: fmt.Sprintf("t%d", i%3), Hostname: fmt.Sprintf("host %d\n", i)}
	}
	return r
}

// vrecords loads b's records and says how they differ from want.
func vrecords(ctx context.Context, b VClusterBackend, want []vcluster.Record) []string {
	got, err := b.LoadRecords(ctx)
	if err != nil {
		return []string{fmt.Sprintf("LoadRecords: %v", err)}
	}
	if (len(got) != 0 || len(want) != 0) && !reflect.DeepEqual(got, want) {
		return []string{fmt.Sprintf("records %+v, want %+v", got, want)}
	}
	return nil
}

var vclusterChecks = []check[VClusterBackend]{
	{"flushed records read back in id order", func(ctx context.Context, b VClusterBackend) []string {
		a, j, big := vrec("a", 1, 3), vrec("a##job", 2, 1), vrec("big", 3, 1000)
		big.Divisible, big.ZeroTemplates = true, []string{"gpu"}
		for _, r := range []vcluster.Record{a, j, big} {
			if err := b.FlushRecord(ctx, r); err != nil {
				return []string{fmt.Sprintf("FlushRecord(%s): %v", r.ID, err)}
			}
		}
		return vrecords(ctx, b, []vcluster.Record{a, j, big})
	}},
	{"flush replaces and is idempotent", func(ctx context.Context, b VClusterBackend) []string {
		a, a2 := vrec("a", 1, 3), vrec("a", 9, 1)
		for _, r := range []vcluster.Record{a, a2, a2} {
			if err := b.FlushRecord(ctx, r); err != nil {
				return []string{fmt.Sprintf("FlushRecord: %v", err)}
			}
		}
		return vrecords(ctx, b, []vcluster.Record{a2})
	}},
	{"delete is idempotent and tolerates not found", func(ctx context.Context, b VClusterBackend) []string {
		if err := b.FlushRecord(ctx, vrec("a", 1, 3)); err != nil {
			return []string{fmt.Sprintf("FlushRecord: %v", err)}
		}
		for _, id := range []string{"a", "a", "never-stored"} {
			if err := b.DeleteRecord(ctx, id); err != nil {
				return []string{fmt.Sprintf("DeleteRecord(%s): %v", id, err)}
			}
		}
		return vrecords(ctx, b, nil)
	}},
	{"publishing, removals included, stores nothing", func(ctx context.Context, b VClusterBackend) []string {
		for _, r := range []vcluster.Record{vrec("a", 1, 3), vrec("a##job", 2, 1), {ID: "a##job", Removed: true, Nodes: map[string]vcluster.RecordNode{}}} {
			if err := b.PublishRecord(ctx, r); err != nil {
				return []string{fmt.Sprintf("PublishRecord(%s): %v", r.ID, err)}
			}
		}
		return vrecords(ctx, b, nil)
	}},
}
