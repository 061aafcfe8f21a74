package vcluster_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plancore/plancore/vcluster"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata")

// transcript records a scenario: each step's plan (or error) and the state
// it leads to.
type transcript struct {
	t *testing.T
	b strings.Builder
	s vcluster.State
}

func newTranscript(t *testing.T, s vcluster.State) *transcript {
	tr := &transcript{t: t, s: s}
	fmt.Fprintf(&tr.b, "== initial state\n%s", s)
	return tr
}

func (tr *transcript) plan(desc string, p vcluster.Plan, err error) {
	tr.t.Helper()
	fmt.Fprintf(&tr.b, "\n> %s\n", desc)
	if err != nil {
		fmt.Fprintf(&tr.b, "error: %v\n", err)
		if !p.Empty() {
			tr.t.Fatalf("%s: refused with a plan", desc)
		}
		return
	}
	fmt.Fprint(&tr.b, p)
	if p.Refused() {
		if p.Acts() {
			tr.t.Fatalf("%s: refused with a plan", desc)
		}
		return
	}
	tr.s = step(tr.t, tr.s, p, nil)
	fmt.Fprintf(&tr.b, "-- state\n%s", tr.s)
}

func (tr *transcript) event(desc string, f func(vcluster.State) (vcluster.State, error)) {
	tr.t.Helper()
	next, err := f(tr.s)
	if err != nil {
		tr.t.Fatalf("%s: %v", desc, err)
	}
	tr.s = next
	fmt.Fprintf(&tr.b, "\n> %s\n", desc)
}

func (tr *transcript) recover(desc string, table []vcluster.Node, records []vcluster.Record) {
	tr.t.Helper()
	s, p := recoverPlan(table, records)
	if err := checkInvariants(s); err != nil {
		tr.t.Fatalf("%s: %v", desc, err)
	}
	tr.s = s
	fmt.Fprintf(&tr.b, "\n> %s\n%s-- state\n%s", desc, p, s)
}

func (tr *transcript) replenish(opts vcluster.Options) {
	tr.t.Helper()
	p, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: tr.s}, opts)
	tr.plan("replenish "+opts.String(), p, err)
}

func (tr *transcript) check(name string) {
	tr.t.Helper()
	path := filepath.Join("testdata", name+".txt")
	got := tr.b.String()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tr.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tr.t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		tr.t.Errorf("transcript %s differs (-want +got):\n%s", path, diff)
	}
}

func req(id string, div bool, rev uint64, rs vcluster.ReplicaSet) vcluster.Request {
	return vcluster.Request{ID: id, Divisible: div, Revision: rev, ReplicaSets: rs}
}

func setNode(id string, alive, busy bool) func(vcluster.State) (vcluster.State, error) {
	return func(s vcluster.State) (vcluster.State, error) { return s.SetNode(id, alive, busy) }
}

func record(id string, div bool, rev uint64, tpl string, ids ...string) vcluster.Record {
	r := vcluster.Record{ID: id, Divisible: div, Revision: rev, Nodes: map[string]vcluster.RecordNode{}}
	for _, n := range ids {
		r.Nodes[n] = vcluster.RecordNode{Template: tpl, Hostname: "h-" + n}
	}
	return r
}

func aliveTable(tpl string, ids ...string) []vcluster.Node {
	var out []vcluster.Node
	for _, id := range ids {
		out = append(out, vcluster.Node{ID: id, Hostname: "h-" + id, Template: tpl, Alive: true})
	}
	return out
}

func TestGolden(t *testing.T) {
	scenarios := map[string]func(t *testing.T) *transcript{
		"01-create-and-divide": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("a", "t0", 6), nodesOf("b", "t1", 4)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("vc0", false, 0, vcluster.ReplicaSet{"t0": 2, "t1": 2}), Revision: 1})
			tr.plan("create vc0 indivisible {t0: 2, t1: 2}", p, err)
			p, err = vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: tr.s, Request: vcluster.JobRequest{Parent: vcluster.PrimaryID, Job: "job_0", ReplicaSets: vcluster.ReplicaSet{"t0": 2, "t1": 2}}, Revision: 2})
			tr.plan("create job kPrimaryClusterID##job_0 {t0: 2, t1: 2}", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("vc1", false, 0, vcluster.ReplicaSet{"t1": 1}), Revision: 3})
			tr.plan("create vc1 {t1: 1}: t1 is all divided", p, err)
			return tr
		},
		"02-recommendations-and-revisions": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("s", "4c8g", 1), nodesOf("l", "8c16g", 1)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("vc1", false, 0, vcluster.ReplicaSet{"4c8g": 2, "8c16g": 1}), Revision: 10})
			tr.plan("create vc1 {4c8g: 2, 8c16g: 1}", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("vc1", false, 0, vcluster.ReplicaSet{"4c8g": 1}), Revision: 10})
			tr.plan("create vc1 {4c8g: 1}", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("vc1", false, 0, vcluster.ReplicaSet{"4c8g": 1}), Revision: 11})
			tr.plan("update vc1 with revision 0", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("vc1", true, 10, vcluster.ReplicaSet{"4c8g": 1}), Revision: 11})
			tr.plan("update vc1 to divisible", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("vc1", false, 10, vcluster.ReplicaSet{"4c8g": 2, "8c16g": 2}), Revision: 12})
			tr.plan("update vc1 to {4c8g: 2, 8c16g: 2}", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("vc1", false, 10, vcluster.ReplicaSet{"8c16g": 1}), Revision: 5})
			tr.plan("update vc1 to {8c16g: 1} with a clock behind (rev 5)", p, err)
			return tr
		},
		"03-heal-in-one-round": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "8c16g", 13)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("serve", false, 0, vcluster.ReplicaSet{"8c16g": 8}), Revision: 1})
			tr.plan("create serve {8c16g: 8}", p, err)
			for _, id := range []string{"n01", "n03", "n05"} {
				tr.event("node "+id+" dies", setNode(id, false, false))
			}
			tr.replenish(vcluster.Options{})
			return tr
		},
		"04-heal-with-a-budget": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "8c16g", 13)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("serve", false, 0, vcluster.ReplicaSet{"8c16g": 8}), Revision: 1})
			tr.plan("create serve {8c16g: 8}", p, err)
			for _, id := range []string{"n01", "n03", "n05"} {
				tr.event("node "+id+" dies", setNode(id, false, false))
			}
			tr.replenish(vcluster.Options{MaxSwaps: 2})
			tr.replenish(vcluster.Options{MaxSwaps: 2})
			return tr
		},
		"05-anchor-pacing": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "t0", 8), nodesOf("m", "t1", 4)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("serve", false, 0, vcluster.ReplicaSet{"t0": 4, "t1": 2}), Revision: 1})
			tr.plan("create serve {t0: 4, t1: 2}", p, err)
			for _, id := range []string{"n00", "n01", "m00", "m01"} {
				tr.event("node "+id+" dies", setNode(id, false, false))
			}
			tr.replenish(vcluster.Options{OnePerTemplatePerCluster: true})
			tr.replenish(vcluster.Options{OnePerTemplatePerCluster: true})
			return tr
		},
		"06-job-fallback-swap": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "t0", 6)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("P", true, 0, vcluster.ReplicaSet{"t0": 6}), Revision: 1})
			tr.plan("create P divisible {t0: 6}", p, err)
			p, err = vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: tr.s, Request: vcluster.JobRequest{Parent: "P", Job: "J", ReplicaSets: vcluster.ReplicaSet{"t0": 4}, Prefer: []string{"n02", "n03", "n04", "n05"}}, Revision: 2})
			tr.plan("create job P##J {t0: 4} preferring n02..n05", p, err)
			tr.event("node n03 dies", setNode("n03", false, false))
			tr.replenish(vcluster.Options{})
			p, err = vcluster.PlanRemove(vcluster.RemoveInput{State: tr.s, ID: "P##J"})
			tr.plan("remove P##J", p, err)
			return tr
		},
		"07-four-scenarios": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "t0", 16)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("div", true, 0, vcluster.ReplicaSet{"t0": 4}), Revision: 1})
			tr.plan("create div divisible {t0: 4}", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("ind", false, 0, vcluster.ReplicaSet{"t0": 3}), Revision: 2})
			tr.plan("create ind {t0: 3}", p, err)
			p, err = vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: tr.s, Request: vcluster.JobRequest{Parent: "div", Job: "j", ReplicaSets: vcluster.ReplicaSet{"t0": 2}}, Revision: 3})
			tr.plan("create job div##j {t0: 2}", p, err)
			p, err = vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: tr.s, Request: vcluster.JobRequest{Parent: vcluster.PrimaryID, Job: "pj", ReplicaSets: vcluster.ReplicaSet{"t0": 2}}, Revision: 4})
			tr.plan("create job kPrimaryClusterID##pj {t0: 2}", p, err)
			// One dead node in each place: primary NIL, div NIL, ind, div##j, primary##pj.
			for _, id := range []string{"n15", "n02", "n04", "n00", "n07"} {
				tr.event("node "+id+" dies", setNode(id, false, false))
			}
			tr.replenish(vcluster.Options{})
			return tr
		},
		"08-unreplaced-and-busy-providers": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "t0", 5), nodesOf("g", "gpu", 2)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("ind", false, 0, vcluster.ReplicaSet{"t0": 3, "gpu": 2}), Revision: 1})
			tr.plan("create ind {t0: 3, gpu: 2}", p, err)
			tr.event("node n03 busy", setNode("n03", true, true))
			for _, id := range []string{"n00", "n01", "n02", "g00"} {
				tr.event("node "+id+" dies", setNode(id, false, false))
			}
			tr.replenish(vcluster.Options{})
			tr.event("a gpu node joins", func(s vcluster.State) (vcluster.State, error) {
				return s.Join(vcluster.Node{ID: "g99", Hostname: "h-g99", Template: "gpu", Alive: true})
			})
			tr.replenish(vcluster.Options{})
			return tr
		},
		"09-scale-down-and-remove-nodes": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "t0", 8)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("ind", false, 0, vcluster.ReplicaSet{"t0": 6}), Revision: 1})
			tr.plan("create ind {t0: 6}", p, err)
			tr.event("node n01 dies", setNode("n01", false, false))
			tr.event("nodes n00, n02, n03 busy", func(s vcluster.State) (vcluster.State, error) {
				for _, id := range []string{"n00", "n02", "n03"} {
					var err error
					if s, err = s.SetNode(id, true, true); err != nil {
						return s, err
					}
				}
				return s, nil
			})
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("ind", false, 1, vcluster.ReplicaSet{"t0": 2}), Revision: 2})
			tr.plan("scale ind to {t0: 2}: only 3 idle", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("ind", false, 1, vcluster.ReplicaSet{"t0": 3}), Revision: 2})
			tr.plan("scale ind to {t0: 3}: dead first", p, err)
			p, err = vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: tr.s, ID: "ind", Nodes: []string{"n02", "n00", "n99"}, Revision: 3})
			tr.plan("remove nodes n02, n00, n99 from ind", p, err)
			tr.event("node n02 idle", setNode("n02", true, false))
			p, err = vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: tr.s, ID: "ind", Nodes: []string{"n02"}, Revision: 3})
			tr.plan("remove node n02 from ind", p, err)
			return tr
		},
		"10-job-lifecycle-and-gc": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "t0", 6)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("div", true, 0, vcluster.ReplicaSet{"t0": 4}), Revision: 1})
			tr.plan("create div divisible {t0: 4}", p, err)
			for i, job := range []string{"a", "b"} {
				p, err = vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: tr.s, Request: vcluster.JobRequest{Parent: "div", Job: job, ReplicaSets: vcluster.ReplicaSet{"t0": 2}}, Revision: uint64(2 + i)})
				tr.plan("create job div##"+job+" {t0: 2}", p, err)
			}
			p, err = vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: tr.s, Request: vcluster.JobRequest{Parent: "div", Job: "c", ReplicaSets: vcluster.ReplicaSet{"t0": 1}}, Revision: 4})
			tr.plan("create job div##c {t0: 1}: div is fully divided", p, err)
			p, err = vcluster.PlanRemove(vcluster.RemoveInput{State: tr.s, ID: "div"})
			tr.plan("remove div while it has jobs", p, err)
			tr.event("job a finishes with a detached actor; job b finishes", func(s vcluster.State) (vcluster.State, error) {
				s, _ = s.SetJobDead("div##a", true)
				s, _ = s.SetDetached("div##a", 1)
				return s.SetJobDead("div##b", true)
			})
			p, err = vcluster.PlanGC(vcluster.GCInput{State: tr.s})
			tr.plan("gc", p, err)
			tr.event("the detached actor exits", func(s vcluster.State) (vcluster.State, error) { return s.SetDetached("div##a", 0) })
			p, err = vcluster.PlanGC(vcluster.GCInput{State: tr.s})
			tr.plan("gc", p, err)
			p, err = vcluster.PlanRemove(vcluster.RemoveInput{State: tr.s, ID: "div"})
			tr.plan("remove div", p, err)
			return tr
		},
		"11-recover-repair": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t))
			table := aliveTable("t0", "n1", "n2", "n3", "n5", "n6", "X", "Y")
			tr.recover("recover: job record ahead of its parent's (P lists dead n4, J lists its replacement X)", table, []vcluster.Record{
				record("P", true, 3, "t0", "n1", "n2", "n3", "n4", "n5", "n6"),
				record("P##J", false, 7, "t0", "n3", "X", "n5", "n6"),
			})
			tr.recover("recover: parent record ahead of the job's (P lists X, J still lists dead n4)", table, []vcluster.Record{
				record("P", true, 3, "t0", "n1", "n2", "n3", "X", "n5", "n6"),
				record("P##J", false, 7, "t0", "n3", "n4", "n5", "n6"),
			})
			return tr
		},
		"12-recover-anomalies": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t))
			table := append(aliveTable("t0", "a1", "a2", "b1", "c1", "c2", "free"), vcluster.Node{ID: "m1", Hostname: "h-m1", Template: "t1", Alive: true},
				vcluster.Node{ID: "d1", Hostname: "h-d1", Template: "t0"})
			tr.recover("recover a store with conflicts", table, []vcluster.Record{
				record("a", false, 4, "t0", "a1", "a2", "shared", "ghost"),
				record("b", false, 5, "t0", "b1", "shared", "a1"),
				record("b", false, 2, "t0", "b1"),
				record("c##j", false, 6, "t0", "c1"),
				record("ind##j", false, 6, "t0", "c2"),
				record("a##x", false, 6, "t0", "a2"),
				record("m", true, 1, "t0", "m1", "d1"),
				{ID: "gone", Removed: true},
				record(vcluster.PrimaryID, true, 1, "t0", "free"),
			})
			return tr
		},
		"13-ids-and-zero-templates": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "t0", 3)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("a##b", false, 0, vcluster.ReplicaSet{"t0": 1}), Revision: 1})
			tr.plan("create a##b", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("", false, 0, nil), Revision: 1})
			tr.plan("create with an empty id", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("x", false, 0, vcluster.ReplicaSet{"t0": -1}), Revision: 1})
			tr.plan("create x {t0: -1}", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("x", true, 0, vcluster.ReplicaSet{"t0": 1, "gpu": 0}), Revision: 1})
			tr.plan("create x divisible {t0: 1, gpu: 0}", p, err)
			p, err = vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: tr.s, ID: "x##j", Nodes: []string{"n00"}, Revision: 2})
			tr.plan("remove nodes from a job id", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("x", true, 1, vcluster.ReplicaSet{}), Revision: 3})
			tr.plan("update x to {}", p, err)
			return tr
		},
		"14-autoscale": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "t0", 10), nodesOf("g", "gpu", 2)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("web", false, 0, vcluster.ReplicaSet{"t0": 2}), Revision: 1})
			tr.plan("create web {t0: 2}", p, err)
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("ml", false, 0, vcluster.ReplicaSet{"gpu": 2}), Revision: 2})
			tr.plan("create ml {gpu: 2}", p, err)
			tr.event("node g00 dies", setNode("g00", false, false))
			limits := vcluster.Limits{
				Clusters: map[string]map[string]vcluster.Bounds{"web": {"t0": {Min: 1, Max: 6}}},
				MinFree:  vcluster.ReplicaSet{"t0": 1},
				MaxFree:  vcluster.ReplicaSet{"t0": 1},
			}
			for i, demand := range []map[string]vcluster.ReplicaSet{
				{"web": {"t0": 9}},
				{"web": {"t0": 0}, "ml": {"gpu": 4}},
			} {
				sp, err := vcluster.PlanScale(vcluster.ScaleInput{State: tr.s, Request: vcluster.ScaleRequest{Demand: demand, Limits: limits, MaxMoves: 3 * i}, Revision: uint64(5 + i)})
				fmt.Fprintf(&tr.b, "\n> scale to %v (web bounds [1, 6], MinFree 1, MaxFree 1, MaxMoves %d)\n%s", demand, 3*i, sp)
				if err != nil {
					t.Fatal(err)
				}
				tr.s = step(t, tr.s, sp, nil)
				fmt.Fprintf(&tr.b, "-- state\n%s", tr.s)
			}
			p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: vcluster.Request{ID: "web", Revision: 6, ReplicaSets: vcluster.ReplicaSet{"t0": 7}, Limits: limits}, Revision: 7})
			tr.plan("update web to {t0: 7} with its bounds", p, err)
			return tr
		},
		"15-percent-budget": func(t *testing.T) *transcript {
			tr := newTranscript(t, mustState(t, nodesOf("n", "t0", 16)))
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: tr.s, Request: req("big", false, 0, vcluster.ReplicaSet{"t0": 10}), Revision: 1})
			tr.plan("create big {t0: 10}", p, err)
			for _, id := range []string{"n00", "n01", "n02", "n03"} {
				tr.event("node "+id+" dies", setNode(id, false, false))
			}
			tr.replenish(vcluster.Options{MaxSwapsPercent: 20})
			tr.replenish(vcluster.Options{MaxSwapsPercent: 20})
			return tr
		},
	}
	for name, run := range scenarios {
		t.Run(name, func(t *testing.T) { run(t).check(name) })
	}
}
