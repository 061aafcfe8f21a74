package vcluster_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/internal/invalidtest"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/vcluster"
)

// badInputState: 4 t0 nodes; indivisible "vc" {t0: 1} at revision 1;
// indivisible "max" {t0: 1} at the largest revision.
func badInputState(t testing.TB) vcluster.State {
	t.Helper()
	s := mustState(t, nodesOf("n", "t0", 4))
	s = create(t, s, "vc", false, vcluster.ReplicaSet{"t0": 1}, 1)
	return create(t, s, "max", false, vcluster.ReplicaSet{"t0": 1}, math.MaxUint64)
}

// TestBadInput feeds bad input through the public API. Each row names the
// sentinel the error must wrap and the exact field paths, in order; a row
// without a sentinel is legal input that must give a valid plan.
func TestBadInput(t *testing.T) {
	s := badInputState(t)
	twoBuckets := s.Clone()
	twoBuckets.Primary.Buckets["t0"]["NIL"] = append([]string{"n00"}, twoBuckets.Primary.Buckets["t0"]["NIL"]...)
	badKey := s.Clone()
	badKey.Nodes = badKey.Nodes.Set("zz", vcluster.Node{ID: "n01", Template: "t0", Alive: true})
	// Faulty nodes that stay listed where they were: only the node check
	// can find them (not the bucket walk).
	deadBusy, listedBadKey := s.Clone(), s.Clone()
	deadBusy.Nodes = deadBusy.Nodes.Set("n02", vcluster.Node{ID: "n02", Template: "t0", Busy: true})
	listedBadKey.Nodes = listedBadKey.Nodes.Set("n02", vcluster.Node{ID: "n03", Template: "t0", Alive: true})
	o := vcluster.Options{}
	create := func(req vcluster.Request, rev uint64) func() (vcluster.Plan, error) {
		return func() (vcluster.Plan, error) {
			return vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: req, Revision: rev})
		}
	}
	tests := []struct {
		name   string
		call   func() (vcluster.Plan, error)
		kind   error // nil: legal input
		fields []string
	}{
		{"empty id", create(vcluster.Request{}, 1), vcluster.ErrInvalidInput, []string{"request.id"}},
		{"primary id", create(vcluster.Request{ID: vcluster.PrimaryID}, 1), vcluster.ErrInvalidInput, []string{"request.id"}},
		{"job id and negative replicas, both named", create(vcluster.Request{ID: "a##b", ReplicaSets: vcluster.ReplicaSet{"t0": -1}}, 1),
			vcluster.ErrInvalidInput, []string{"request.id", "request.replicaSets[t0]"}},
		{"replicas MaxInt32+1", create(vcluster.Request{ID: "x", ReplicaSets: vcluster.ReplicaSet{"t0": math.MaxInt32 + 1}}, 1),
			vcluster.ErrInvalidInput, []string{"request.replicaSets[t0]"}},
		{"replicas MinInt", create(vcluster.Request{ID: "x", ReplicaSets: vcluster.ReplicaSet{"t0": math.MinInt}}, 1),
			vcluster.ErrInvalidInput, []string{"request.replicaSets[t0]"}},
		{"replicas MaxInt32 is legal: out of resource", create(vcluster.Request{ID: "x", ReplicaSets: vcluster.ReplicaSet{"t0": math.MaxInt32}}, 1), nil, nil},
		{"empty template", create(vcluster.Request{ID: "x", ReplicaSets: vcluster.ReplicaSet{"": 1}}, 1),
			vcluster.ErrInvalidInput, []string{"request.replicaSets"}},
		{"nil replica sets is legal: empty cluster", create(vcluster.Request{ID: "x"}, 1), nil, nil},
		{"stale revision and kind flip, both named", create(vcluster.Request{ID: "vc", Revision: 9, Divisible: true}, 2),
			vcluster.ErrInvalidInput, []string{"request.revision", "request.divisible"}},
		{"revision exhausted", create(vcluster.Request{ID: "max", Revision: math.MaxUint64, ReplicaSets: vcluster.ReplicaSet{"t0": 0}}, 5),
			vcluster.ErrInvalidInput, []string{"request.revision"}},
		{"revision MaxUint64 on create is legal", create(vcluster.Request{ID: "x"}, math.MaxUint64), nil, nil},
		{"negative reserve and crossed bounds", create(vcluster.Request{ID: "vc", Revision: 1, Limits: vcluster.Limits{
			MinFree:  vcluster.ReplicaSet{"t0": -1},
			Clusters: map[string]map[string]vcluster.Bounds{"vc": {"t0": {Min: 2, Max: 1}}},
		}}, 2), vcluster.ErrInvalidInput, []string{"request.limits.clusters[vc][t0]", "request.limits.minFree[t0]"}},
		{"job: empty name and missing parent", func() (vcluster.Plan, error) {
			return vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: vcluster.JobRequest{Parent: "nope"}})
		}, vcluster.ErrInvalidInput, []string{"request.job", "request.parent"}},
		{"job: MaxInt replicas", func() (vcluster.Plan, error) {
			return vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: vcluster.JobRequest{Parent: vcluster.PrimaryID, Job: "j", ReplicaSets: vcluster.ReplicaSet{"t0": math.MaxInt}}})
		}, vcluster.ErrInvalidInput, []string{"request.replicaSets[t0]"}},
		{"remove: empty id", func() (vcluster.Plan, error) { return vcluster.PlanRemove(vcluster.RemoveInput{State: s}) },
			vcluster.ErrInvalidInput, []string{"id"}},
		{"remove: missing cluster", func() (vcluster.Plan, error) {
			return vcluster.PlanRemove(vcluster.RemoveInput{State: s, ID: "nope"})
		},
			vcluster.ErrNotFound, []string{"id"}},
		{"remove nodes: empty id and nil nodes", func() (vcluster.Plan, error) {
			return vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: s})
		}, vcluster.ErrInvalidInput, []string{"id", "nodes"}},
		{"remove nodes: revision exhausted", func() (vcluster.Plan, error) {
			return vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: s, ID: "max", Nodes: s.Members("max")})
		}, vcluster.ErrInvalidInput, []string{"revision"}},
		{"replenish: unknown scope", func() (vcluster.Plan, error) {
			return vcluster.PlanReplenish(vcluster.ReplenishInput{State: s, Cluster: "nope"}, o)
		}, vcluster.ErrNotFound, []string{"cluster"}},
		{"scale: negative budget and unknown cluster", func() (vcluster.Plan, error) {
			return vcluster.PlanScale(vcluster.ScaleInput{State: s, Request: vcluster.ScaleRequest{MaxMoves: -1, Demand: map[string]vcluster.ReplicaSet{"nope": {}}}})
		}, vcluster.ErrInvalidInput, []string{"request.maxMoves", "request.demand[nope]"}},
		{"scale: MaxInt demand", func() (vcluster.Plan, error) {
			return vcluster.PlanScale(vcluster.ScaleInput{State: s, Request: vcluster.ScaleRequest{Demand: map[string]vcluster.ReplicaSet{"vc": {"t0": math.MaxInt}}}})
		}, vcluster.ErrInvalidInput, []string{"request.demand[vc][t0]"}},
		{"scale: MaxInt MaxMoves is legal", func() (vcluster.Plan, error) {
			return vcluster.PlanScale(vcluster.ScaleInput{State: s, Request: vcluster.ScaleRequest{MaxMoves: math.MaxInt, Demand: map[string]vcluster.ReplicaSet{"vc": {"t0": 3}}}})
		}, nil, nil},
		{"options: negative swaps and percent above 100", func() (vcluster.Plan, error) {
			return vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{MaxSwaps: -1, MaxSwapsPercent: 101})
		}, vcluster.ErrInvalidOptions, []string{"maxSwaps", "maxSwapsPercent"}},
		{"options: MinInt percent", func() (vcluster.Plan, error) {
			return vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{MaxSwapsPercent: math.MinInt})
		}, vcluster.ErrInvalidOptions, []string{"maxSwapsPercent"}},
		{"options: MaxInt swaps is legal", func() (vcluster.Plan, error) {
			return vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{MaxSwaps: math.MaxInt})
		}, nil, nil},
		{"zero state", func() (vcluster.Plan, error) { return vcluster.PlanGC(vcluster.GCInput{}) },
			vcluster.ErrInvalidInput, []string{"state.primary"}},
		{"node in two buckets", func() (vcluster.Plan, error) { return vcluster.PlanGC(vcluster.GCInput{State: twoBuckets}) },
			vcluster.ErrInvalidInput, []string{"state.logical[vc].buckets[t0][NIL][0]"}},
		{"node key holds another node", func() (vcluster.Plan, error) { return vcluster.PlanGC(vcluster.GCInput{State: badKey}) },
			vcluster.ErrInvalidInput, []string{"state.nodes[zz].id", "state.nodes[zz]"}},
		{"listed node dead and busy", func() (vcluster.Plan, error) { return vcluster.PlanGC(vcluster.GCInput{State: deadBusy}) },
			vcluster.ErrInvalidInput, []string{"state.nodes[n02].busy"}},
		{"replenish: listed node dead and busy", func() (vcluster.Plan, error) {
			return vcluster.PlanReplenish(vcluster.ReplenishInput{State: deadBusy}, o)
		}, vcluster.ErrInvalidInput, []string{"state.nodes[n02].busy"}},
		{"listed node key holds another node", func() (vcluster.Plan, error) {
			return vcluster.PlanReplenish(vcluster.ReplenishInput{State: listedBadKey}, o)
		}, vcluster.ErrInvalidInput, []string{"state.nodes[n02].id"}},
		{"recover: garbage is legal", func() (vcluster.Plan, error) {
			return vcluster.PlanRecover(vcluster.RecoverInput{
				Nodes:   []vcluster.Node{{}, {ID: "a", Template: "t", Alive: true}, {ID: "a", Template: "u"}},
				Records: []vcluster.Record{{}, {ID: "x", Revision: math.MaxUint64, Nodes: map[string]vcluster.RecordNode{"": {}, "a": {}}}, {ID: "y##"}},
			})

		}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.call()
			if tc.kind == nil {
				if err != nil {
					t.Fatalf("legal input refused: %v", err)
				}
				if err := p.After.Validate(); err != nil {
					t.Fatalf("plan leads to an invalid state: %v", err)
				}
				return
			}
			invalidtest.Check(t, err, tc.kind, tc.fields)
			if !p.Empty() || p.Refused() {
				t.Errorf("invalid input returned a plan:\n%s", p)
			}
		})
	}
}

// TestBadEvents feeds bad input to the state's constructors and events.
func TestBadEvents(t *testing.T) {
	s := badInputState(t)
	tests := []struct {
		name   string
		call   func() (vcluster.State, error)
		kind   error
		fields []string
	}{
		{"new state: empty id, empty template, duplicate", func() (vcluster.State, error) {
			return vcluster.NewState([]vcluster.Node{{ID: "a", Template: "t"}, {Template: "t"}, {ID: "b"}, {ID: "a", Template: "t"}})
		}, vcluster.ErrInvalidInput, []string{"nodes[1].id", "nodes[2].template", "nodes[3].id"}},
		{"join: dead and busy, duplicate id", func() (vcluster.State, error) {
			return s.Join(vcluster.Node{ID: "n00", Template: "t0", Busy: true})
		}, vcluster.ErrInvalidInput, []string{"node.busy", "node.id"}},
		{"set node: unknown", func() (vcluster.State, error) { return s.SetNode("zz", true, false) }, vcluster.ErrNotFound, []string{"id"}},
		{"set nodes: unknown ids", func() (vcluster.State, error) {
			return s.SetNodes([]vcluster.NodeChange{{ID: "zz"}, {ID: "n00"}, {ID: ""}})
		}, vcluster.ErrNotFound, []string{"changes[0].id", "changes[2].id"}},
		{"set nodes: unknown, dead back alive, changed twice", func() (vcluster.State, error) {
			d, err := s.SetNode("n01", false, false)
			if err != nil {
				return vcluster.State{}, err
			}
			return d.SetNodes([]vcluster.NodeChange{{ID: "n00"}, {ID: "zz", Alive: true}, {ID: "n01", Alive: true}, {ID: "n00", Alive: true}})
		}, vcluster.ErrInvalidInput, []string{"changes[1].id", "changes[2].alive", "changes[3].id"}},
		{"detached: MinInt", func() (vcluster.State, error) { return s.SetDetached("vc", math.MinInt) }, vcluster.ErrInvalidInput, []string{"count"}},
		{"job dead: unknown", func() (vcluster.State, error) { return s.SetJobDead("vc##j", true) }, vcluster.ErrNotFound, []string{"id"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.call()
			invalidtest.Check(t, err, tc.kind, tc.fields)
		})
	}
}

// TestApplyNilExecutor: a nil executor is an error, never a panic.
func TestApplyNilExecutor(t *testing.T) {
	s := mustState(t, nodesOf("n", "t0", 2))
	p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "vc", ReplicaSets: vcluster.ReplicaSet{"t0": 1}}, Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vcluster.Apply(context.Background(), p, nil); !errors.Is(err, vcluster.ErrNilExecutor) {
		t.Fatalf("nil executor: %v", err)
	}
	// A hand-made plan without After is refused, never written as deletes.
	if _, err := vcluster.Apply(context.Background(), vcluster.Plan{Flush: []string{"vc"}}, nopExecutor{}); !errors.Is(err, vcluster.ErrPlanMismatch) {
		t.Fatalf("plan without After: %v", err)
	}
}

type nopExecutor struct{}

func (nopExecutor) FlushRecord(context.Context, vcluster.Record) error   { return nil }
func (nopExecutor) DeleteRecord(context.Context, string) error           { return nil }
func (nopExecutor) PublishRecord(context.Context, vcluster.Record) error { return nil }

// extremeInts are the hostile counts the properties draw from.
var extremeInts = []int{0, -1, 1, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt, math.MinInt, math.MinInt32}

// extremeRevs are the hostile revisions the properties draw from.
var extremeRevs = []uint64{0, 1, math.MaxUint64 - 1, math.MaxUint64}

// TestPropertyExtremeValues: counts and revisions drawn from the extremes of
// their types either give an error wrapping the sentinel that names the
// field, or a valid plan whose revisions only grow and whose counts are not
// negative; never a panic, never a wrapped value. Removing the exhausted-
// revision check (checkRevisionLeft) makes it fail: an update of a cluster
// at MaxUint64 then gets a revision that is not above the old one.
func TestPropertyExtremeValues(t *testing.T) {
	base := mustState(t, nodesOf("n", "t0", 6), nodesOf("g", "t1", 3))
	rapid.Check(t, func(t *rapid.T) {
		s := base
		// Two rounds so that a cluster created at an extreme revision is
		// then updated.
		for round := range 2 {
			count := rapid.SampledFrom(extremeInts).Draw(t, "count")
			rev := rapid.SampledFrom(extremeRevs).Draw(t, "rev")
			req := vcluster.Request{ID: "vc", ReplicaSets: vcluster.ReplicaSet{"t0": count}}
			if c, ok := s.Logical["vc"]; ok {
				req.Revision = c.Revision
			}
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: req, Revision: rev})
			s = checkExtreme(t, s, p, err, round, "request.replicaSets[t0]", "request.revision")

			budget := rapid.SampledFrom(extremeInts).Draw(t, "maxMoves")
			demand := rapid.SampledFrom(extremeInts).Draw(t, "demand")
			var sp vcluster.Plan
			if _, ok := s.Logical["vc"]; ok {
				sp, err = vcluster.PlanScale(vcluster.ScaleInput{State: s, Revision: rev, Request: vcluster.ScaleRequest{
					MaxMoves: budget, Demand: map[string]vcluster.ReplicaSet{"vc": {"t0": demand}},
					Limits: vcluster.Limits{MinFree: vcluster.ReplicaSet{"t0": rapid.SampledFrom(extremeInts).Draw(t, "minFree")}},
				}})

				s = checkExtreme(t, s, sp, err, round, "request.maxMoves", "request.demand[vc][t0]", "request.demand[vc]", "request.limits.minFree[t0]")
				for tpl, n := range sp.Launch {
					if n < 0 {
						t.Fatalf("launch %s = %d", tpl, n)
					}
				}
			}

			swaps := rapid.SampledFrom(extremeInts).Draw(t, "maxSwaps")
			pct := rapid.SampledFrom(extremeInts).Draw(t, "maxSwapsPercent")
			p, err = vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{MaxSwaps: swaps, MaxSwapsPercent: pct})
			if err != nil {
				checkNamed(t, err, vcluster.ErrInvalidOptions, "maxSwaps", "maxSwapsPercent")
			} else if err := p.After.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// checkExtreme checks one planning call of the extreme-values property and
// returns the state to continue from.
func checkExtreme(t *rapid.T, s vcluster.State, p vcluster.Plan, err error, round int, fields ...string) vcluster.State {
	if err != nil {
		checkNamed(t, err, vcluster.ErrInvalidInput, fields...)
		return s
	}
	if p.Refused() {
		return s
	}
	if err := p.After.Validate(); err != nil {
		t.Fatalf("round %d: plan leads to an invalid state: %v", round, err)
	}
	for _, r := range p.Revisions {
		if old := s.Logical[r.Cluster].Revision; r.Revision <= old {
			t.Fatalf("round %d: revision of %s went %d -> %d", round, r.Cluster, old, r.Revision)
		}
	}
	return p.After
}

// checkNamed checks that err wraps kind and names only fields among allowed.
func checkNamed(t *rapid.T, err, kind error, allowed ...string) {
	var inv *plancore.InvalidError
	if !errors.Is(err, kind) || !errors.As(err, &inv) {
		t.Fatalf("error %v does not wrap %v", err, kind)
	}
	for _, f := range inv.Fields() {
		ok := false
		for _, a := range allowed {
			ok = ok || f == a
		}
		if !ok {
			t.Fatalf("error names %s, not one of %v: %v", f, allowed, err)
		}
	}
}

// TestReplenishScoped (making inScope always true fails it: the scoped
// plans then flush every cluster): a plan scoped to one logical cluster heals that
// cluster and its job clusters only, as the anchor's failover replenishes
// one virtual cluster at a time; the primary's scope purges its own dead
// nodes and heals its job clusters.
func TestReplenishScoped(t *testing.T) {
	s := mustState(t, nodesOf("n", "t0", 12))
	s = create(t, s, "a", true, vcluster.ReplicaSet{"t0": 3}, 1)
	s = createJob(t, s, "a", "j", vcluster.ReplicaSet{"t0": 1}, 2)
	s = create(t, s, "b", false, vcluster.ReplicaSet{"t0": 2}, 3)
	s = createJob(t, s, vcluster.PrimaryID, "pj", vcluster.ReplicaSet{"t0": 1}, 4)
	victims := []string{s.Members("a##j")[0], s.Members("b")[0], s.Members(vcluster.PrimaryID + "##pj")[0], bucketOf(s, vcluster.PrimaryID, "t0", vcluster.Undivided)[0]}
	s = kill(t, s, victims...)
	for _, tc := range []struct {
		scope string
		flush []string
		purge []string
	}{
		{"a", []string{"a##j", "a"}, []string{victims[0]}},
		{"b", []string{"b"}, []string{victims[1]}},
		{vcluster.PrimaryID, []string{vcluster.PrimaryID + "##pj"}, []string{victims[2], victims[3]}},
		{"", []string{"a##j", vcluster.PrimaryID + "##pj", "a", "b"}, nil},
	} {
		p, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: s, Cluster: tc.scope}, vcluster.Options{})
		next := step(t, s, p, err)
		if !cmp.Equal(p.Flush, tc.flush) {
			t.Errorf("scope %q: flush %v, want %v", tc.scope, p.Flush, tc.flush)
		}
		if tc.purge != nil && !cmp.Equal(purgedIDs(p), sorted(tc.purge)) {
			t.Errorf("scope %q: purge %v, want %v", tc.scope, p.Purge, tc.purge)
		}
		for _, m := range p.Moves {
			if m.Reason.Code != vcluster.ReasonReplaceDeadNode && m.Reason.Code != vcluster.ReasonReturnDeadNode {
				t.Errorf("scope %q: move %v has reason %v", tc.scope, m, m.Reason)
			}
		}
		if tc.scope == "" {
			if err := replaceableDead(next); err != nil {
				t.Errorf("unscoped plan left %v", err)
			}
		}
	}
}

func sorted(ids []string) []string {
	out := append([]string(nil), ids...)
	slices.Sort(out)
	return out
}

// TestApplyRefusesARefusal: a refused plan is not Empty, and Apply refuses
// to write it (ErrRefusedPlan) instead of returning nil as for "nothing to
// do"; a plan with nothing to do is Empty and writes nothing without error.
func TestApplyRefusesARefusal(t *testing.T) {
	s, err := vcluster.NewState(exampleNodes())
	if err != nil {
		t.Fatal(err)
	}
	refused, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "big", ReplicaSets: vcluster.ReplicaSet{"8c16g": 99}}, Revision: 1})
	if err != nil || !refused.Refused() || refused.Empty() || refused.Acts() {
		t.Fatalf("refused = %v (empty %t, acts %t), %v", refused.Refusal, refused.Empty(), refused.Acts(), err)
	}
	store := fake.NewVClusterStore(fake.NewWorld(1, time.Unix(0, 0)))
	if _, err := vcluster.Apply(context.Background(), refused, store); !errors.Is(err, vcluster.ErrRefusedPlan) {
		t.Errorf("Apply(refused) = %v, want ErrRefusedPlan", err)
	}
	idle, err := vcluster.PlanGC(vcluster.GCInput{State: s})
	if err != nil || !idle.Empty() {
		t.Fatalf("GC of a fresh state = %s, %v; want an empty plan", idle, err)
	}
	if rep, err := vcluster.Apply(context.Background(), idle, store); err != nil || len(rep.Flushed) != 0 {
		t.Errorf("Apply(empty) = %+v, %v", rep, err)
	}
}

// TestMoveReasonFacts: the facts a move's or creation's message states are
// fields of its Reason, the message rendered from them.
func TestMoveReasonFacts(t *testing.T) {
	s, err := vcluster.NewState(exampleNodes())
	if err != nil {
		t.Fatal(err)
	}
	p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "vc", ReplicaSets: vcluster.ReplicaSet{"8c16g": 2}}, Revision: 1})
	if err != nil || len(p.Moves) != 2 || len(p.Creates) != 1 {
		t.Fatalf("plan = %s, %v", p, err)
	}
	if r := p.Moves[0].Reason; r.Facts.Cluster != "vc" || r.Facts.Template != "8c16g" || r.Facts.Count != 2 || r.Message != "vc grows to 2 8c16g node(s)" {
		t.Errorf("move reason = %+v", r)
	}
	if r := p.Creates[0].Reason; r.Facts.Cluster != "vc" || r.Facts.ReplicaSets["8c16g"] != 2 || r.Message != "virtual cluster vc created with {8c16g: 2}" {
		t.Errorf("create reason = %+v", r)
	}
}
