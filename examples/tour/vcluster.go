package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/vcluster"
)

func init() {
	register(7, "vcluster", "virtual clusters carved from one Ray cluster, healed and recovered", runVCluster)
}

// runVCluster walks one hierarchy through its life: carving logical clusters
// out of the primary, dividing a job cluster, a refused request with its
// recommendation, node deaths healed in one round, lazy GC of a finished job,
// and a control-plane crash between two flushes repaired at restart.
func runVCluster(w *page) error {
	ctx := context.Background()
	world := fake.NewWorld(7, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := fake.NewVClusterStore(world)
	worker := store.Subscribe()

	var nodes []vcluster.Node
	for i := range 12 {
		tpl := "8c16g"
		if i%3 == 2 {
			tpl = "gpu"
		}
		nodes = append(nodes, vcluster.Node{ID: fmt.Sprintf("n%02d", i), Hostname: fmt.Sprintf("host-%02d", i), Template: tpl, Alive: true})
	}
	s, err := vcluster.NewState(nodes)
	if err != nil {
		return err
	}
	w.term("replica set")
	fmt.Fprintln(w, "A virtual cluster is a named set of a physical Ray cluster's nodes that jobs are")
	fmt.Fprintln(w, "scheduled into; the rest stay in the primary cluster. Each step plans on the")
	fmt.Fprintln(w, "current state and applies the plan, which writes the changed clusters' records")
	fmt.Fprintln(w, "(flush) and tells the workers (publish):")
	w.calls(`s, err := vcluster.NewState(nodes)
return vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "train", Divisible: true, ReplicaSets: vcluster.ReplicaSet{"8c16g": 4, "gpu": 2}}, Revision: 1})
rep, err := vcluster.Apply(ctx, p, store)`)
	fmt.Fprintf(w, "A primary cluster of %d nodes: %s\n", len(nodes), s.ReplicaSet(vcluster.PrimaryID))

	// do plans, applies and writes one step, narrating it.
	do := func(what string, p vcluster.Plan, err error) error {
		fmt.Fprintf(w, "\n%s\n", what)
		if err != nil {
			return err
		}
		if e := p.Refusal; e != nil {
			fmt.Fprintf(w, "  refused: %s %q\n  recommend %s; nothing moved\n", e.Reason.Code, e.Reason.Message, e.Recommend)
			return nil
		}
		next := p.After
		rep, err := vcluster.Apply(ctx, p, store)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %d node moves; flushed %v, deleted %v, published %v\n", len(p.Moves), rep.Flushed, rep.Deleted, rep.Published)
		s = next
		return nil
	}

	steps := []struct {
		what string
		plan func() (vcluster.Plan, error)
	}{
		{"Carve a divisible cluster \"train\" (lends nodes to jobs) of {8c16g: 4, gpu: 2}.", func() (vcluster.Plan, error) {
			return vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "train", Divisible: true, ReplicaSets: vcluster.ReplicaSet{"8c16g": 4, "gpu": 2}}, Revision: 1})
		}},
		{"Carve an indivisible cluster \"serve\" of {8c16g: 2}: published to every worker.", func() (vcluster.Plan, error) {
			return vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "serve", ReplicaSets: vcluster.ReplicaSet{"8c16g": 2}}, Revision: 2})
		}},
		{"Ask \"serve\" for {8c16g: 2, gpu: 3}: only 2 gpu nodes are left.", func() (vcluster.Plan, error) {
			return vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "serve", Revision: 2, ReplicaSets: vcluster.ReplicaSet{"8c16g": 2, "gpu": 3}}, Revision: 3})
		}},
		{"Divide job cluster train##job1 of {8c16g: 3, gpu: 1} out of \"train\".", func() (vcluster.Plan, error) {
			return vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: vcluster.JobRequest{Parent: "train", Job: "job1", ReplicaSets: vcluster.ReplicaSet{"8c16g": 3, "gpu": 1}}, Revision: 4})
		}},
	}
	for _, st := range steps {
		p, err := st.plan()
		if err := do(st.what, p, err); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nThe hierarchy (dead nodes marked +, busy *):\n%s", s)

	// Three nodes die: two in the job cluster, one in "serve".
	for _, id := range []string{s.Members("train##job1")[0], s.Members("train##job1")[1], s.Members("serve")[0]} {
		if s, err = s.SetNode(id, false, false); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	w.term("replenish")
	w.calls(`p, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{})`)
	p, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{})
	if err := do("Three nodes die. One replenish plan heals all of them (ant-ray, the original, heals\none per node type per cluster every 30 s).", p, err); err != nil {
		return err
	}
	fmt.Fprintf(w, "  unreplaced: %v; replica sets unchanged: train %s, serve %s\n", p.Unreplaced, s.ReplicaSet("train"), s.ReplicaSet("serve"))

	// The job finishes while a detached actor still lives.
	s, _ = s.SetJobDead("train##job1", true)
	s, _ = s.SetDetached("train##job1", 1)
	p, err = vcluster.PlanGC(vcluster.GCInput{State: s})
	if err := do("job1 finishes, but a detached actor (a Ray process that outlives its job) lives on:\ngarbage collection (PlanGC) keeps its cluster.", p, err); err != nil {
		return err
	}
	s, _ = s.SetDetached("train##job1", 0)
	p, err = vcluster.PlanGC(vcluster.GCInput{State: s})
	if err := do("The detached actor exits: PlanGC returns the job's nodes to \"train\".", p, err); err != nil {
		return err
	}

	// A crash between the two flushes of a job-cluster heal.
	p, err = vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: vcluster.JobRequest{Parent: "train", Job: "job2", ReplicaSets: vcluster.ReplicaSet{"8c16g": 2}}, Revision: 5})
	if err := do("Divide train##job2 of {8c16g: 2}.", p, err); err != nil {
		return err
	}
	if s, err = s.Join(vcluster.Node{ID: "n12", Hostname: "host-12", Template: "8c16g", Alive: true}); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nA new 8c16g node n12 joins the primary.")
	victim := s.Members("train##job2")[0]
	if s, err = s.SetNode(victim, false, false); err != nil {
		return err
	}
	p, err = vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{})
	if err != nil {
		return err
	}
	next := p.After
	fmt.Fprintf(w, "\nNode %s of job2 dies; the heal must flush %v. The control plane crashes after the first write.\n", victim, p.Flush)
	if _, err := vcluster.Apply(ctx, p, &crashAfter{store, 1}); err == nil {
		return errors.New("the crash did not happen")
	}
	records, err := store.LoadRecords(ctx)
	if err != nil {
		return err
	}
	var table []vcluster.Node
	for _, id := range next.Nodes.IDs() {
		table = append(table, next.Nodes.Node(id))
	}
	rp, err := vcluster.PlanRecover(vcluster.RecoverInput{Nodes: table, Records: records})
	if err != nil {
		return err
	}
	recovered := rp.After
	fmt.Fprintf(w, "Restart: PlanRecover replays the node table and %d stored records.\n%s", len(records), indent(rp.String()))
	if _, err := vcluster.Apply(ctx, rp, store); err != nil {
		return err
	}
	fmt.Fprintf(w, "Recovered:\n%s", indent(recovered.String()))
	// Dead nodes of one template are interchangeable: repair drops one dead
	// undivided node of train per repaired node, not necessarily the one the
	// lost write would have dropped. Alive membership and counts must match.
	for _, id := range []string{vcluster.PrimaryID, "serve", "train", "train##job2"} {
		if !slices.Equal(aliveMembers(recovered, id), aliveMembers(next, id)) || !maps.Equal(recovered.ReplicaSet(id), next.ReplicaSet(id)) {
			return fmt.Errorf("%s recovered as %v, want %v", id, recovered.Members(id), next.Members(id))
		}
	}
	if records, err = store.LoadRecords(ctx); err != nil {
		return err
	}
	if again, err := vcluster.PlanRecover(vcluster.RecoverInput{Nodes: table, Records: records}); err != nil || !again.Empty() {
		return fmt.Errorf("a second restart still repairs:\n%s", again)
	}
	fmt.Fprintln(w, "Alive members and replica sets equal those before the crash; train was rewritten, so a second restart finds nothing to repair.")
	fmt.Fprintf(w, "Storage holds %d records; the worker schedules from %d clusters and got %d messages.\n",
		len(store.Records()), len(worker.Clusters()), worker.Received())
	return nil
}

// crashAfter lets n flushes through and then fails, as a control plane that
// dies between two writes of one plan.
type crashAfter struct {
	vcluster.Executor
	n int
}

var errCrashed = errors.New("control plane crashed")

func (c *crashAfter) FlushRecord(ctx context.Context, r vcluster.Record) error {
	if c.n == 0 {
		return errCrashed
	}
	c.n--
	return c.Executor.FlushRecord(ctx, r)
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("  " + line)
	}
	return b.String()
}

func aliveMembers(s vcluster.State, id string) []string {
	var out []string
	for _, n := range s.Members(id) {
		if s.Nodes.Node(n).Alive {
			out = append(out, n)
		}
	}
	return out
}
