package vcluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/vcluster"
	"github.com/plancore/plancore/vcluster/vclustertest"
)

// cutExecutor passes the first n writes (flushes and deletes) through and
// then fails: a control plane crashing between two flushes.
type cutExecutor struct {
	vcluster.Executor
	n int
}

var errCrash = errors.New("crash")

func (c *cutExecutor) FlushRecord(ctx context.Context, r vcluster.Record) error {
	if c.n == 0 {
		return errCrash
	}
	c.n--
	return c.Executor.FlushRecord(ctx, r)
}

func (c *cutExecutor) DeleteRecord(ctx context.Context, id string) error {
	if c.n == 0 {
		return errCrash
	}
	c.n--
	return c.Executor.DeleteRecord(ctx, id)
}

// withoutDeadPrimary is s as a restart sees it: replay never adds the dead
// nodes of the primary's undivided bucket.
func withoutDeadPrimary(t *testing.T, s vcluster.State) vcluster.State {
	var p vcluster.Plan
	for _, tpl := range sortedTemplates(s.Primary) {
		for _, id := range s.Primary.Buckets[tpl][vcluster.Undivided] {
			if !s.Nodes.Node(id).Alive {
				p.Purge = append(p.Purge, vcluster.PurgedNode{Node: id})
			}
		}
	}
	out, err := s.Next(p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sortedTemplates(c vcluster.Cluster) []string {
	var out []string
	for tpl := range c.Buckets {
		out = append(out, tpl)
	}
	slices.Sort(out)
	return out
}

// restore copies the caller-owned attributes recovery does not restore
// (detached counts, job liveness) from old to s.
func restore(s, old vcluster.State) vcluster.State {
	var err error
	for id, c := range old.Logical {
		if _, ok := s.Logical[id]; ok && c.Detached > 0 {
			s, err = s.SetDetached(id, c.Detached)
			if err != nil {
				panic(err)
			}
		}
	}
	for id, c := range old.Jobs {
		if _, ok := s.Jobs[id]; !ok {
			continue
		}
		if s, err = s.SetDetached(id, c.Detached); err != nil {
			panic(err)
		}
		if s, err = s.SetJobDead(id, c.JobDead); err != nil {
			panic(err)
		}
	}
	return s
}

// TestLongRandomRun drives one hierarchy through thousands of random
// operations — creates, resizes, job clusters, removals, node deaths, joins,
// replenishment, GC — writing every plan to the fake store and a subscribed
// worker, restarting the control plane from the store now and then, and
// crashing it between two flushes now and then. After every step it checks
// every invariant of the hierarchy and its plans, that storage holds exactly the state's records, and that the
// worker's view is exactly the indivisible and job clusters.
func TestLongRandomRun(t *testing.T) {
	const steps = 1500
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(2026, 8))
	c := vclustertest.SeededChooser(rng)
	w := &vclustertest.World{Templates: []string{"t0", "t1", "t2", "t3"}}
	var nodes []vcluster.Node
	for i := range 150 {
		nodes = append(nodes, vcluster.Node{ID: fmt.Sprintf("n%03d", i), Hostname: fmt.Sprint("h", i), Template: w.Templates[i%4], Alive: true})
	}
	s := mustState(t, nodes)
	world := fake.NewWorld(1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := fake.NewVClusterStore(world)
	worker := store.Subscribe()
	plans, refusals, restarts, crashes, swaps := 0, 0, 0, 0, 0

	checkStore := func(step int, s vcluster.State) {
		t.Helper()
		if diff := cmp.Diff(recordList(storedRecords(s)), store.Records(), equateEmpty); diff != "" {
			t.Fatalf("step %d: store differs from the state (-want +got):\n%s", step, diff)
		}
		want := vcluster.Records(s, vcluster.Filter{IncludeJobs: true, OnlyIndivisible: true})
		if diff := cmp.Diff(recordList(toMap(want)), worker.Clusters(), equateEmpty); diff != "" {
			t.Fatalf("step %d: worker view differs (-want +got):\n%s", step, diff)
		}
	}
	recover := func(step int, s vcluster.State) vcluster.State {
		t.Helper()
		records, err := store.LoadRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, p := recoverPlan(tableOf(s), records)
		if err := checkInvariants(got); err != nil {
			t.Fatalf("step %d: recovered state: %v", step, err)
		}
		if _, err := vcluster.Apply(ctx, p, store); err != nil {
			t.Fatal(err)
		}
		return restore(got, s)
	}

	for step := range steps {
		switch {
		case step%97 == 96:
			// Restart: recovery from a complete store gives the state back.
			restarts++
			want := withoutDeadPrimary(t, s)
			got := recover(step, s)
			if diff := cmp.Diff(normalize(want), normalize(got), equateEmpty); diff != "" {
				t.Fatalf("step %d: restart changed the state (-want +got):\n%s", step, diff)
			}
			s = got
			checkStore(step, s)
			continue
		}
		o := w.Op(c, s)
		switch step % 6 {
		case 2:
			// Extra churn: nodes die often in a long-lived cluster, and
			// new ones join.
			o = w.Op(forced{c, 15}, s) // kill
		case 5:
			o = w.Op(forced{c, 16}, s) // join
		}
		next, p, err := checkOp(s, o)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if o.Plan == nil {
			s = next
			continue
		}
		if !p.Acts() {
			if _, err := o.Plan(s); err != nil {
				refusals++
			}
			s = next
			continue
		}
		plans++
		if o.Replenish != nil {
			swaps += len(p.Moves) / 2
		}
		if len(p.Flush) >= 2 && rng.IntN(2) == 0 {
			// Crash between two writes, then restart from the store.
			crashes++
			cut := &cutExecutor{Executor: store, n: 1 + rng.IntN(len(p.Flush)-1)}
			if _, err := vcluster.Apply(ctx, p, cut); !errors.Is(err, errCrash) {
				t.Fatalf("step %d: cut apply: %v", step, err)
			}
			s = recover(step, next)
			checkStore(step, s)
			continue
		}
		if _, err := vcluster.Apply(ctx, p, store); err != nil {
			t.Fatalf("step %d: apply: %v", step, err)
		}
		s = next
		checkStore(step, s)
	}
	t.Logf("%d steps: %d plans applied, %d refusals, %d swaps, %d restarts, %d crashes between flushes; final state %d nodes, %d logical, %d job clusters",
		steps, plans, refusals, swaps, restarts, crashes, s.Nodes.Len(), len(s.Logical), len(s.Jobs))
	if plans < steps/10 || restarts == 0 || crashes == 0 || swaps == 0 {
		t.Fatal("the run exercised too little")
	}
}

func toMap(rs []vcluster.Record) map[string]vcluster.Record {
	out := map[string]vcluster.Record{}
	for _, r := range rs {
		out[r.ID] = r
	}
	return out
}

// forced makes the operation kind k and draws the rest from c.
type forced struct {
	c vclustertest.Chooser
	k int
}

func (f forced) IntN(n int, label string) int {
	if label == "op" {
		return f.k
	}
	return f.c.IntN(n, label)
}
