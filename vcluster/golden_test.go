package vcluster_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/plancore/plancore/internal/golden"
	"github.com/plancore/plancore/vcluster"
)

// goldenInput is one transcript's input: the nodes of the initial state
// and the steps run on it, in order.
type goldenInput struct {
	// Nodes are the initial nodes: Count alive nodes of Template each,
	// named Prefix00, Prefix01, ... with hostname h-<id>.
	Nodes []struct {
		Prefix   string `json:"prefix"`
		Template string `json:"template"`
		Count    int    `json:"count"`
	} `json:"nodes"`
	Steps []goldenStep `json:"steps"`
}

// goldenStep is one planning call, one event or one recovery; Say is the
// line the transcript shows for it (a replenish step writes its own).
// A plan that succeeds is applied to the state before the next step.
type goldenStep struct {
	Say    string `json:"say"`
	Create *struct {
		Request  vcluster.Request `json:"request"`
		Revision uint64           `json:"revision"`
	} `json:"create"`
	Job *struct {
		Request  vcluster.JobRequest `json:"request"`
		Revision uint64              `json:"revision"`
	} `json:"job"`
	Remove      *struct{ ID string } `json:"remove"`
	RemoveNodes *struct {
		ID       string   `json:"id"`
		Nodes    []string `json:"nodes"`
		Revision uint64   `json:"revision"`
	} `json:"removeNodes"`
	GC        *struct{}         `json:"gc"`
	Replenish *vcluster.Options `json:"replenish"`
	// Scale must succeed; the transcript shows its plan however it ends.
	Scale *struct {
		Request  vcluster.ScaleRequest `json:"request"`
		Revision uint64                `json:"revision"`
	} `json:"scale"`
	// Event changes the state, one change after the other.
	Event []goldenEvent `json:"event"`
	// Recover rebuilds the state from a node table and stored records.
	Recover *struct {
		Nodes   []vcluster.Node   `json:"nodes"`
		Records []vcluster.Record `json:"records"`
	} `json:"recover"`
}

// goldenEvent is one change of the state, exactly one of its fields.
type goldenEvent struct {
	SetNode *struct {
		ID          string `json:"id"`
		Alive, Busy bool
	} `json:"setNode"`
	Join    *vcluster.Node `json:"join"`
	JobDead *struct {
		ID   string `json:"id"`
		Dead bool   `json:"dead"`
	} `json:"jobDead"`
	Detached *struct {
		ID    string `json:"id"`
		Count int    `json:"count"`
	} `json:"detached"`
}

func (e goldenEvent) apply(s vcluster.State) (vcluster.State, error) {
	switch {
	case e.SetNode != nil:
		return s.SetNode(e.SetNode.ID, e.SetNode.Alive, e.SetNode.Busy)
	case e.Join != nil:
		return s.Join(*e.Join)
	case e.JobDead != nil:
		return s.SetJobDead(e.JobDead.ID, e.JobDead.Dead)
	case e.Detached != nil:
		return s.SetDetached(e.Detached.ID, e.Detached.Count)
	}
	return s, fmt.Errorf("an event needs one of setNode, join, jobDead and detached")
}

// TestGolden replays testdata/*.txt: each step's plan (or error) and the
// state it leads to (go test -run Golden -update rewrites the outputs).
func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", func(t *testing.T, input []byte) string {
		in := golden.Decode[goldenInput](t, input)
		var groups [][]vcluster.Node
		for _, g := range in.Nodes {
			groups = append(groups, nodesOf(g.Prefix, g.Template, g.Count))
		}
		tr := &transcript{t: t, s: mustState(t, groups...)}
		fmt.Fprintf(&tr.b, "== initial state\n%s", tr.s)
		for _, st := range in.Steps {
			tr.run(st)
		}
		return tr.b.String()
	})
}

// transcript records a scenario: each step's plan (or error) and the state
// it leads to.
type transcript struct {
	t *testing.T
	b strings.Builder
	s vcluster.State
}

func (tr *transcript) run(st goldenStep) {
	t, s := tr.t, tr.s
	switch {
	case st.Create != nil:
		p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: st.Create.Request, Revision: st.Create.Revision})
		tr.plan(st.Say, p, err)
	case st.Job != nil:
		p, err := vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: st.Job.Request, Revision: st.Job.Revision})
		tr.plan(st.Say, p, err)
	case st.Remove != nil:
		p, err := vcluster.PlanRemove(vcluster.RemoveInput{State: s, ID: st.Remove.ID})
		tr.plan(st.Say, p, err)
	case st.RemoveNodes != nil:
		p, err := vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: s, ID: st.RemoveNodes.ID, Nodes: st.RemoveNodes.Nodes, Revision: st.RemoveNodes.Revision})
		tr.plan(st.Say, p, err)
	case st.GC != nil:
		p, err := vcluster.PlanGC(vcluster.GCInput{State: s})
		tr.plan(st.Say, p, err)
	case st.Replenish != nil:
		p, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, *st.Replenish)
		tr.plan("replenish "+st.Replenish.String(), p, err)
	case st.Scale != nil:
		sp, err := vcluster.PlanScale(vcluster.ScaleInput{State: s, Request: st.Scale.Request, Revision: st.Scale.Revision})
		fmt.Fprintf(&tr.b, "\n> %s\n%s", st.Say, sp)
		if err != nil {
			t.Fatal(err)
		}
		tr.s = step(t, s, sp, nil)
		fmt.Fprintf(&tr.b, "-- state\n%s", tr.s)
	case st.Event != nil:
		for _, e := range st.Event {
			var err error
			if s, err = e.apply(s); err != nil {
				t.Fatalf("%s: %v", st.Say, err)
			}
		}
		tr.s = s
		fmt.Fprintf(&tr.b, "\n> %s\n", st.Say)
	case st.Recover != nil:
		s, p := recoverPlan(st.Recover.Nodes, st.Recover.Records)
		if err := checkInvariants(s); err != nil {
			t.Fatalf("%s: %v", st.Say, err)
		}
		tr.s = s
		fmt.Fprintf(&tr.b, "\n> %s\n%s-- state\n%s", st.Say, p, s)
	default:
		t.Fatalf("step %q does nothing", st.Say)
	}
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
