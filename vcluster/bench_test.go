package vcluster_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/plancore/plancore/vcluster"
)

// bigState builds the benchmark hierarchy: 10,000 nodes of 10 templates; 20
// indivisible clusters of 150 nodes; 20 divisible clusters of 200 nodes, each
// with 3 job clusters of 50 (100 virtual clusters in all); 3,000 nodes left
// in the primary; then dead random nodes among the clusters' members.
func bigState(tb testing.TB, dead int) vcluster.State {
	tb.Helper()
	const templates = 10
	var nodes []vcluster.Node
	for i := range 10000 {
		id := fmt.Sprintf("%056x", uint64(i)*0x9e3779b97f4a7c15) // 56 hex characters, as in the anchor
		nodes = append(nodes, vcluster.Node{ID: id, Hostname: fmt.Sprintf("host-%05d", i), Template: fmt.Sprintf("t%d", i%templates), Alive: true})
	}
	s := mustState(tb, nodes)
	per := func(n int) vcluster.ReplicaSet {
		rs := vcluster.ReplicaSet{}
		for t := range templates {
			rs[fmt.Sprintf("t%d", t)] = n / templates
		}
		return rs
	}
	rev := uint64(0)
	for i := range 20 {
		rev++
		p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: fmt.Sprintf("ind-%02d", i), ReplicaSets: per(150)}, Revision: rev})
		s = step(tb, s, p, err)
		rev++
		id := fmt.Sprintf("div-%02d", i)
		p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: id, Divisible: true, ReplicaSets: per(200)}, Revision: rev})
		s = step(tb, s, p, err)
		for j := range 3 {
			rev++
			p, err := vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: vcluster.JobRequest{Parent: id, Job: fmt.Sprintf("job-%d", j), ReplicaSets: per(50)}, Revision: rev})
			s = step(tb, s, p, err)
		}
	}
	var members []string
	for _, id := range sortedNodes(s) {
		if !contains(s.Primary.Buckets[s.Nodes.Node(id).Template][vcluster.Undivided], id) {
			members = append(members, id)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	for _, id := range members[:dead] {
		var err error
		if s, err = s.SetNode(id, false, false); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

func contains(sorted []string, id string) bool {
	for _, x := range sorted {
		if x == id {
			return true
		}
	}
	return false
}

// BenchmarkReplenish10k plans the replenishment of 1,000 dead nodes among
// 100 virtual clusters of a 10,000-node hierarchy (target ≤ 5 ms/op, as
// before the one-contract rework, with allocations in the low thousands) and
// reports how many rounds heal them all (target 1; the anchor needs one
// 30 s round per dead node of a template per cluster).
func BenchmarkReplenish10k(b *testing.B) {
	s := bigState(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	var p vcluster.Plan
	for b.Loop() {
		var err error
		if p, err = vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	rounds, cur := 0, s
	for {
		p, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: cur}, vcluster.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Moves) == 0 {
			break
		}
		rounds++
		if cur, err = cur.Next(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Moves)/2), "swaps")
	b.ReportMetric(float64(rounds), "rounds")
}

// BenchmarkCreate plans carving a 500-node logical cluster out of a
// 10,000-node primary.
func BenchmarkCreate(b *testing.B) {
	var nodes []vcluster.Node
	for i := range 10000 {
		nodes = append(nodes, vcluster.Node{ID: fmt.Sprintf("%056x", uint64(i)*0x9e3779b97f4a7c15), Template: fmt.Sprintf("t%d", i%10), Alive: true})
	}
	s := mustState(b, nodes)
	rs := vcluster.ReplicaSet{}
	for t := range 10 {
		rs[fmt.Sprintf("t%d", t)] = 50
	}
	req := vcluster.Request{ID: "carve", ReplicaSets: rs}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: req, Revision: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyReplenish10k applies the replenish plan of
// BenchmarkReplenish10k: copying only the touched clusters.
func BenchmarkApplyReplenish10k(b *testing.B) {
	s := bigState(b, 1000)
	p, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Next(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecover10k rebuilds the benchmark hierarchy from its records.
func BenchmarkRecover10k(b *testing.B) {
	s := bigState(b, 1000)
	table := tableOf(s)
	records := recordList(storedRecords(s))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_, _ = vcluster.PlanRecover(vcluster.RecoverInput{Nodes: table, Records: records})
	}
}

// BenchmarkGC10k plans GC on the benchmark hierarchy with every job dead.
func BenchmarkGC10k(b *testing.B) {
	s := bigState(b, 1000)
	for id := range s.Jobs {
		s, _ = s.SetJobDead(id, true)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := vcluster.PlanGC(vcluster.GCInput{State: s}); err != nil {
			b.Fatal(err)
		}
	}
}
