package redis_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/plancore/plancore/adapters/redis"
	"github.com/plancore/plancore/adapters/redis/internal/redistest"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/vcluster"
)

func newVClusterStore(t *testing.T, srv *redistest.Server, key string) *redis.VClusterStore {
	t.Helper()
	st, err := redis.NewVClusterStore(srv.Client(), redis.VClusterOptions{Key: key, ChannelPrefix: key + ":"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestVClusterStoreConformance holds the Redis store to the same contract as
// the in-memory fake, against a real redis-server.
func TestVClusterStoreConformance(t *testing.T) {
	srv := redistest.Start(t)
	n := 0
	violations := fake.CheckVClusterBackend(context.Background(), func() fake.VClusterBackend {
		n++
		return newVClusterStore(t, srv, fmt.Sprintf("conf%d", n))
	})
	for _, v := range violations {
		t.Error(v)
	}
}

func vclusterNodes(n int) []vcluster.Node {
	var out []vcluster.Node
	for i := range n {
		id := fmt.Sprintf("%056x", i)
		out = append(out, vcluster.Node{ID: id, Hostname: fmt.Sprintf("host-%d", i), Template: fmt.Sprintf("t%d", i%2), Alive: true})
	}
	return out
}

// TestVClusterStoreEndToEnd writes a hierarchy's plans through Apply to a
// real Redis, receives every publish on the right channel through a
// subscription, and recovers the same hierarchy from what Redis stored.
func TestVClusterStoreEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := redistest.Start(t)
	st := newVClusterStore(t, srv, "e2e")
	sub, err := st.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	s, err := vcluster.NewState(vclusterNodes(20))
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	run := func(p vcluster.Plan, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		next, err := s.Next(p)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := vcluster.Apply(ctx, p, st)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range rep.Published {
			r, ch, err := sub.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := vcluster.RecordOf(next, id)
			if !ok {
				want = vcluster.Record{ID: id, Removed: true, Nodes: map[string]vcluster.RecordNode{}}
			}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("published %+v, want %+v", r, want)
			}
			if wantCh := st.Channel(id, false); ch != wantCh {
				t.Fatalf("%s published on %s, want %s", id, ch, wantCh)
			}
			published++
		}
		s = next
	}
	run(vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "train", Divisible: true, ReplicaSets: vcluster.ReplicaSet{"t0": 4, "t1": 4}}, Revision: 1}))
	run(vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "serve", ReplicaSets: vcluster.ReplicaSet{"t0": 3}}, Revision: 2}))
	run(vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: vcluster.JobRequest{Parent: "train", Job: "job1", ReplicaSets: vcluster.ReplicaSet{"t0": 2, "t1": 1}}, Revision: 3}))
	run(vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: vcluster.JobRequest{Parent: vcluster.PrimaryID, Job: "job2", ReplicaSets: vcluster.ReplicaSet{"t1": 1}}, Revision: 4}))
	for _, id := range append(s.Members("train##job1")[:1], s.Members("serve")[:2]...) {
		if s, err = s.SetNode(id, false, false); err != nil {
			t.Fatal(err)
		}
	}
	run(vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{}))
	run(vcluster.PlanRemove(vcluster.RemoveInput{State: s, ID: "kPrimaryClusterID##job2"}))
	if published != 6 {
		t.Fatalf("%d records published, want 6", published)
	}

	// A control-plane restart: recover from what Redis holds.
	records, err := st.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table []vcluster.Node
	for _, n := range vclusterNodes(20) {
		table = append(table, s.Nodes.Node(n.ID))
	}
	plan, err := vcluster.PlanRecover(vcluster.RecoverInput{Nodes: table, Records: records})
	if err != nil {
		t.Fatal(err)
	}
	got := plan.After
	if !plan.Empty() {
		t.Fatalf("recovery from a consistent store planned:\n%s", plan)
	}
	if got.String() != s.String() {
		t.Fatalf("recovered\n%s\nwant\n%s", got, s)
	}
}

// TestVClusterStoreCorruptRecord: a field that does not decode is named in
// the error and left out; the other records still load.
func TestVClusterStoreCorruptRecord(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	st := newVClusterStore(t, srv, "corrupt")
	good := vcluster.Record{ID: "good", Revision: 1, Nodes: map[string]vcluster.RecordNode{"n": {Template: "t"}}}
	if err := st.FlushRecord(ctx, good); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client().HSet(ctx, "corrupt", "bad", "{not json", "moved", `{"id":"other","divisible":false,"revision":0,"nodes":{}}`).Err(); err != nil {
		t.Fatal(err)
	}
	records, err := st.LoadRecords(ctx)
	if !errors.Is(err, vcluster.ErrBadRecord) {
		t.Fatalf("err %v, want ErrBadRecord", err)
	}
	if !reflect.DeepEqual(records, []vcluster.Record{good}) {
		t.Fatalf("records %+v", records)
	}
}

// TestVClusterStoreFailsClosed: with Redis down, Apply reports the error and
// nothing is claimed written; after Redis is back (empty, as a cache-only
// Redis restarts), applying the same plan again writes it.
func TestVClusterStoreFailsClosed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := redistest.Start(t)
	st := newVClusterStore(t, srv, "down")
	s, err := vcluster.NewState(vclusterNodes(4))
	if err != nil {
		t.Fatal(err)
	}
	p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "serve", ReplicaSets: vcluster.ReplicaSet{"t0": 1}}, Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	next, err := s.Next(p)
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	rep, err := vcluster.Apply(ctx, p, st)
	if err == nil || len(rep.Flushed) != 0 {
		t.Fatalf("apply with Redis down: report %+v, err %v", rep, err)
	}
	srv.Restart()
	if _, err := vcluster.Apply(ctx, p, st); err != nil {
		t.Fatal(err)
	}
	records, err := st.LoadRecords(ctx)
	want, _ := vcluster.RecordOf(next, "serve")
	if err != nil || !reflect.DeepEqual(records, []vcluster.Record{want}) {
		t.Fatalf("records %+v err %v", records, err)
	}
}
