package vcluster_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/vcluster"
	"github.com/plancore/plancore/vcluster/vclustertest"
)

func TestLimitsRefusals(t *testing.T) {
	s := mustState(t, nodesOf("n", "t0", 5))
	s = create(t, s, "vc", false, vcluster.ReplicaSet{"t0": 1}, 1)
	bounded := vcluster.Limits{Clusters: map[string]map[string]vcluster.Bounds{"vc": {"t0": {Min: 1, Max: 3}}}}
	tests := []struct {
		name string
		req  vcluster.Request
		want wantErr
	}{
		{"above max", vcluster.Request{ID: "vc", Revision: 1, ReplicaSets: vcluster.ReplicaSet{"t0": 4}, Limits: bounded},
			wantErr{code: invalidArg, field: "request.replicaSets[t0]", msg: "Invalid request, replicas(4) of template t0 is outside the bounds [1, 3] of virtual cluster vc"}},
		{"below min", vcluster.Request{ID: "vc", Revision: 1, ReplicaSets: vcluster.ReplicaSet{}, Limits: bounded},
			wantErr{code: invalidArg, field: "request.replicaSets[t0]", msg: "Invalid request, replicas(0) of template t0 is outside the bounds [1, 3] of virtual cluster vc"}},
		{"crossed bounds", vcluster.Request{ID: "vc", Revision: 1, Limits: vcluster.Limits{Clusters: map[string]map[string]vcluster.Bounds{"vc": {"t0": {Min: 3, Max: 2}}}}},
			wantErr{code: invalidArg, field: "request.limits.clusters[vc][t0]", msg: "Invalid limits, bounds [3, 2] of template t0 of virtual cluster vc are negative or crossed"}},
		{"negative reserve", vcluster.Request{ID: "vc", Revision: 1, Limits: vcluster.Limits{MinFree: vcluster.ReplicaSet{"t0": -1}}},
			wantErr{code: invalidArg, field: "request.limits.minFree[t0]", msg: "Invalid limits, MinFree(-1) of template t0 must >= 0"}},
		{"MaxFree below MinFree", vcluster.Request{ID: "vc", Revision: 1, Limits: vcluster.Limits{MinFree: vcluster.ReplicaSet{"t0": 2}, MaxFree: vcluster.ReplicaSet{"t0": 1}}},
			wantErr{code: invalidArg, field: "request.limits.maxFree[t0]", msg: "Invalid limits, MaxFree(1) of template t0 is below MinFree(2)"}},
		{"addition into the reserve", vcluster.Request{ID: "vc", Revision: 1, ReplicaSets: vcluster.ReplicaSet{"t0": 4}, Limits: vcluster.Limits{MinFree: vcluster.ReplicaSet{"t0": 2}}},
			wantErr{code: outOfResource, field: "request.replicaSets", msg: "No enough nodes to add to the virtual cluster. The replica sets that gcs can add at most are shown below. Use it as a suggestion to adjust your request or cluster.", recommend: vcluster.ReplicaSet{"t0": 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: tc.req, Revision: 2})
			checkErr(t, p, err, tc.want)
		})
	}
	// The recommendation respects the reserve: asking for it succeeds.
	p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "vc", Revision: 1, ReplicaSets: vcluster.ReplicaSet{"t0": 3}, Limits: vcluster.Limits{MinFree: vcluster.ReplicaSet{"t0": 2}}}, Revision: 2})
	s = step(t, s, p, err)
	if got := len(bucketOf(s, vcluster.PrimaryID, "t0", vcluster.Undivided)); got != 2 {
		t.Fatalf("primary keeps %d, want the reserve of 2", got)
	}
}

func TestPlanScale(t *testing.T) {
	s := mustState(t, nodesOf("n", "t0", 10), nodesOf("g", "gpu", 2))
	s = create(t, s, "web", false, vcluster.ReplicaSet{"t0": 2}, 1)
	s = create(t, s, "ml", false, vcluster.ReplicaSet{"gpu": 2}, 2)
	s = kill(t, s, "g00")
	limits := vcluster.Limits{
		Clusters: map[string]map[string]vcluster.Bounds{"web": {"t0": {Min: 1, Max: 6}}},
		MinFree:  vcluster.ReplicaSet{"t0": 1},
		MaxFree:  vcluster.ReplicaSet{"t0": 1},
	}
	// web wants 9: clamped to 6, so 4 more, from 8 free minus the reserve.
	sp, err := vcluster.PlanScale(vcluster.ScaleInput{State: s, Request: vcluster.ScaleRequest{Demand: map[string]vcluster.ReplicaSet{"web": {"t0": 9}}, Limits: limits}, Revision: 5})
	if err != nil {
		t.Fatal(err)
	}
	next := step(t, s, sp, nil)
	if got := next.ReplicaSet("web"); !cmp.Equal(got, vcluster.ReplicaSet{"t0": 6}) {
		t.Errorf("web %v, want {t0: 6}", got)
	}
	// The dead gpu node of ml has no replacement: launch one.
	if diff := cmp.Diff(vcluster.ReplicaSet{"gpu": 1}, sp.Launch); diff != "" {
		t.Errorf("launch (-want +got):\n%s", diff)
	}
	// 4 idle t0 left in the primary, MaxFree 1: release 3.
	if diff := cmp.Diff([]string{"n06", "n07", "n08"}, sp.Release); diff != "" {
		t.Errorf("release (-want +got):\n%s", diff)
	}
	if next.Logical["web"].Revision != 5 || next.Logical["ml"].Revision != 2 {
		t.Errorf("revisions web %d ml %d", next.Logical["web"].Revision, next.Logical["ml"].Revision)
	}
	// Demand beyond what the primary holds: take what is there above the
	// reserve and launch the rest.
	sp, err = vcluster.PlanScale(vcluster.ScaleInput{State: next, Request: vcluster.ScaleRequest{Demand: map[string]vcluster.ReplicaSet{"ml": {"gpu": 4}, "web": {"t0": 0}}, Limits: limits, MaxMoves: 3}, Revision: 6})
	if err != nil {
		t.Fatal(err)
	}
	after := step(t, next, sp, nil)
	if diff := cmp.Diff(vcluster.ReplicaSet{"gpu": 2 + 1}, sp.Launch); diff != "" {
		t.Errorf("launch (-want +got):\n%s", diff)
	}
	// web shrinks to its Min of 1, cut to 3 moves by MaxMoves.
	if got := after.ReplicaSet("web"); !cmp.Equal(got, vcluster.ReplicaSet{"t0": 3}) || !sp.Truncated {
		t.Errorf("web %v truncated %v", got, sp.Truncated)
	}
	if _, err := vcluster.PlanScale(vcluster.ScaleInput{State: s, Request: vcluster.ScaleRequest{Demand: map[string]vcluster.ReplicaSet{"nope": {}}}, Revision: 1}); err == nil {
		t.Error("unknown cluster accepted")
	}
}

// TestPropertyScale: PlanScale keeps the invariants and the budget, and is a
// fixed point: scaling again to the same demand moves nothing when the first
// plan was not cut.
func TestPropertyScale(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, w := genState(t, 80, 12)
		s = killSome(t, s)
		req := vcluster.ScaleRequest{Demand: map[string]vcluster.ReplicaSet{}, Limits: vcluster.Limits{Clusters: map[string]map[string]vcluster.Bounds{}, MinFree: vcluster.ReplicaSet{}, MaxFree: vcluster.ReplicaSet{}}}
		for _, id := range sortedLogical(s) {
			if !rapid.Bool().Draw(t, "scale") {
				continue
			}
			req.Demand[id] = vcluster.ReplicaSet{}
			req.Limits.Clusters[id] = map[string]vcluster.Bounds{}
			for _, tpl := range w.Templates {
				req.Demand[id][tpl] = rapid.IntRange(0, 30).Draw(t, "demand")
				lo := rapid.IntRange(0, 5).Draw(t, "min")
				req.Limits.Clusters[id][tpl] = vcluster.Bounds{Min: lo, Max: lo + rapid.IntRange(0, 20).Draw(t, "span")}
			}
		}
		for _, tpl := range w.Templates {
			req.Limits.MinFree[tpl] = rapid.IntRange(0, 3).Draw(t, "minfree")
			req.Limits.MaxFree[tpl] = req.Limits.MinFree[tpl] + rapid.IntRange(0, 10).Draw(t, "maxfree")
		}
		req.MaxMoves = rapid.IntRange(0, 10).Draw(t, "maxmoves")
		sp, _, err := func() (vcluster.Plan, vcluster.State, error) {
			var sp vcluster.Plan
			_, _, err := checkOp(s, vclustertest.Op{Desc: "scale", Plan: func(s vcluster.State) (vcluster.Plan, error) {
				var err error
				sp, err = vcluster.PlanScale(vcluster.ScaleInput{State: s, Request: req, Revision: 1000})
				return sp, err
			}, Target: "*"})
			return sp, s, err
		}()
		if err != nil {
			t.Fatal(err)
		}
		if req.MaxMoves > 0 && len(sp.Moves) > req.MaxMoves {
			t.Fatalf("%d moves with MaxMoves %d", len(sp.Moves), req.MaxMoves)
		}
		next, err := s.Next(sp)
		if err != nil {
			t.Fatal(err)
		}
		for id, byT := range req.Limits.Clusters {
			for tpl, b := range byT {
				if n := next.ReplicaSet(id)[tpl]; b.Max > 0 && n > b.Max && n > s.ReplicaSet(id)[tpl] {
					t.Fatalf("%s/%s grew to %d above its max %d", id, tpl, n, b.Max)
				}
			}
		}
		aliveFree := func(s vcluster.State, tpl string) int {
			n := 0
			for _, id := range s.Primary.Buckets[tpl][vcluster.Undivided] {
				if s.Nodes.Node(id).Alive {
					n++
				}
			}
			return n
		}
		for _, tpl := range w.Templates {
			if after, before := aliveFree(next, tpl), aliveFree(s, tpl); after < min(before, req.Limits.MinFree[tpl]) {
				t.Fatalf("primary %s dipped into its reserve: %d → %d, MinFree %d", tpl, before, after, req.Limits.MinFree[tpl])
			}
		}
		if sp.Truncated {
			return
		}
		again, err := vcluster.PlanScale(vcluster.ScaleInput{State: next, Request: req, Revision: 1001})
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Moves) != 0 {
			t.Fatalf("second scale still moves:\n%s\nfirst:\n%s", again, sp)
		}
	})
}
