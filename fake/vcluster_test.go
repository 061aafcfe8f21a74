package fake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/vcluster"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestVClusterStoreConformance(t *testing.T) {
	w := fake.NewWorld(1, start)
	for _, v := range fake.CheckVClusterBackend(context.Background(), func() fake.VClusterBackend { return fake.NewVClusterStore(w) }) {
		t.Error(v)
	}
}

// brokenStore forgets every flush: the conformance check must notice.
type brokenStore struct{ *fake.VClusterStore }

func (brokenStore) FlushRecord(context.Context, vcluster.Record) error { return nil }

func TestVClusterConformanceCatchesABrokenBackend(t *testing.T) {
	w := fake.NewWorld(1, start)
	got := fake.CheckVClusterBackend(context.Background(), func() fake.VClusterBackend { return brokenStore{fake.NewVClusterStore(w)} })
	if len(got) == 0 {
		t.Fatal("a backend that drops flushes passed the conformance check")
	}
}

func nodes(n int) []vcluster.Node {
	out := make([]vcluster.Node, n)
	for i := range out {
		id := string(rune('a' + i))
		out[i] = vcluster.Node{ID: id, Hostname: "host-" + id, Template: "t", Alive: true}
	}
	return out
}

// TestVClusterApplyRetriesAfterAFailedFlush injects a failed flush and a lost
// publish response: Apply stops at the first, and applying the same plan
// again converges storage and workers to the state.
func TestVClusterApplyRetriesAfterAFailedFlush(t *testing.T) {
	ctx := context.Background()
	w := fake.NewWorld(7, start)
	store := fake.NewVClusterStore(w)
	worker := store.Subscribe()
	s, err := vcluster.NewState(nodes(6))
	if err != nil {
		t.Fatal(err)
	}
	p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "serve", ReplicaSets: vcluster.ReplicaSet{"t": 3}}, Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	next := p.After
	if _, err := vcluster.Apply(ctx, p, nil); !errors.Is(err, vcluster.ErrNilExecutor) {
		t.Fatalf("nil executor: %v", err)
	}
	errDown := errors.New("redis down")
	w.Faults.FailNext(fake.VClusterFlushKind, 1, errDown)
	rep, err := vcluster.Apply(ctx, p, store)
	if !errors.Is(err, errDown) || len(rep.Flushed) != 0 || len(store.Published()) != 0 {
		t.Fatalf("first apply: report %+v err %v, published %d", rep, err, len(store.Published()))
	}
	w.Faults.LoseResponseNext(fake.VClusterPublishKind, 1, errors.New("timeout"))
	if _, err := vcluster.Apply(ctx, p, store); err == nil {
		t.Fatal("lost publish response not reported")
	}
	if _, err := vcluster.Apply(ctx, p, store); err != nil {
		t.Fatal(err)
	}
	want, _ := vcluster.RecordOf(next, "serve")
	if diff := cmp.Diff([]vcluster.Record{want}, store.Records()); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]vcluster.Record{want}, worker.Clusters()); diff != "" {
		t.Errorf("worker view (-want +got):\n%s", diff)
	}
	if got := w.Calls.Count(fake.VClusterFlushKind); got != 3 {
		t.Errorf("%d flush calls, want 3", got)
	}

	// Removal: the record is deleted and workers drop the cluster.
	p, err = vcluster.PlanRemove(vcluster.RemoveInput{State: next, ID: "serve"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err = vcluster.Apply(ctx, p, store)
	if err != nil || !cmp.Equal(rep.Deleted, []string{"serve"}) {
		t.Fatalf("report %+v err %v", rep, err)
	}
	if len(store.Records()) != 0 || len(worker.Clusters()) != 0 {
		t.Errorf("records %v, worker %v", store.Records(), worker.Clusters())
	}
}
