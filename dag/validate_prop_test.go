package dag_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/dag"
)

// graphWorkflow builds a workflow whose flow i depends on every j with adj[i][j].
func graphWorkflow(adj [][]bool) dag.Workflow {
	flows := make([]dag.Flow, len(adj))
	for i := range adj {
		flows[i].Name = fmt.Sprintf("f%d", i)
		var ts []string
		for j, e := range adj[i] {
			if e {
				ts = append(ts, fmt.Sprintf("f%d", j))
			}
		}
		if ts != nil {
			flows[i].DependsOn = &dag.DependsOn{Targets: ts}
		}
	}
	return wf(flows...)
}

// closure is the naive reference: Floyd–Warshall transitive closure.
func closure(adj [][]bool) [][]bool {
	n := len(adj)
	r := make([][]bool, n)
	for i := range adj {
		r[i] = slices.Clone(adj[i])
	}
	for k := range n {
		for i := range n {
			for j := range n {
				r[i][j] = r[i][j] || r[i][k] && r[k][j]
			}
		}
	}
	return r
}

// checkAgainstReference compares Validate's verdict and cycle reports with
// the closure.
func checkAgainstReference(t interface {
	Helper()
	Fatalf(string, ...any)
}, adj [][]bool) {
	t.Helper()
	n := len(adj)
	reach := closure(adj)
	acyclic := true
	for i := range n {
		acyclic = acyclic && !reach[i][i]
	}
	issues := dag.Lint(graphWorkflow(adj), dag.Options{})
	if acyclic != (len(issues) == 0) {
		t.Fatalf("adj %v: acyclic=%v but issues %v", adj, acyclic, issues)
	}
	// Reference cyclic components: i~j iff each reaches the other; cyclic iff i reaches itself.
	var want []string
	for i := range n {
		if !reach[i][i] {
			continue
		}
		first := true
		var mem []string
		for j := range n {
			if reach[i][j] && reach[j][i] {
				if j < i {
					first = false
				}
				mem = append(mem, fmt.Sprintf("f%d", j))
			}
		}
		if first {
			want = append(want, strings.Join(mem, ","))
		}
	}
	var got []string
	for _, is := range issues {
		if is.Kind != dag.IssueCycle {
			t.Fatalf("unexpected issue %v", is)
		}
		got = append(got, strings.Join(is.Members, ","))
		// The witness is a real cycle: consecutive names are edges.
		path := strings.Split(strings.TrimPrefix(is.Message, "cycle: "), " -> ")
		if path[0] != path[len(path)-1] || len(path) < 2 {
			t.Fatalf("witness %q is not closed", is.Message)
		}
		for k := 0; k+1 < len(path); k++ {
			var a, b int
			fmt.Sscanf(path[k], "f%d", &a)
			fmt.Sscanf(path[k+1], "f%d", &b)
			if !adj[a][b] {
				t.Fatalf("witness %q uses a missing edge %s -> %s", is.Message, path[k], path[k+1])
			}
		}
	}
	if !slices.Equal(want, got) {
		t.Fatalf("adj %v: cyclic components %v, reported %v", adj, want, got)
	}
}

// TestValidateExhaustiveSmallGraphs runs every directed graph on at most 4
// nodes, self-loops included (65,536 graphs on 4 nodes).
func TestValidateExhaustiveSmallGraphs(t *testing.T) {
	total := 0
	for n := 0; n <= 4; n++ {
		for mask := 0; mask < 1<<(n*n); mask++ {
			adj := make([][]bool, n)
			for i := range n {
				adj[i] = make([]bool, n)
				for j := range n {
					adj[i][j] = mask&(1<<(i*n+j)) != 0
				}
			}
			checkAgainstReference(t, adj)
			total++
		}
	}
	if total != 1+2+16+512+65536 {
		t.Fatalf("checked %d graphs", total)
	}
}

func TestValidateRandomGraphs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 10).Draw(t, "n")
		p := rapid.IntRange(0, 100).Draw(t, "density")
		adj := make([][]bool, n)
		for i := range n {
			adj[i] = make([]bool, n)
			for j := range n {
				adj[i][j] = rapid.IntRange(0, 99).Draw(t, "e") < p/3
			}
		}
		checkAgainstReference(t, adj)
	})
}

// TestValidateNamesAgainstReference compares duplicate and unknown-target
// reports with a naive set-based reference.
func TestValidateNamesAgainstReference(t *testing.T) {
	pool := []string{"a", "b", "c", "d", "e"}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 8).Draw(t, "n")
		flows := make([]dag.Flow, n)
		names := map[string]bool{}
		for i := range flows {
			flows[i].Name = rapid.SampledFrom(pool[:4]).Draw(t, "name")
			names[flows[i].Name] = true
		}
		var wantDup, wantUnknown []string
		seen := map[string]bool{}
		for i := range flows {
			if seen[flows[i].Name] {
				wantDup = append(wantDup, fmt.Sprintf("%d", i))
			}
			seen[flows[i].Name] = true
			// Targets only point backwards to stay acyclic; "e" is never a flow.
			k := rapid.IntRange(0, 3).Draw(t, "k")
			var ts []string
			used := map[string]bool{}
			for range k {
				tg := rapid.SampledFrom(pool).Draw(t, "target")
				if used[tg] {
					continue
				}
				ok := tg == "e"
				for j := 0; j < i; j++ {
					ok = ok || flows[j].Name == tg && tg != flows[i].Name
				}
				if !ok {
					continue
				}
				used[tg] = true
				ts = append(ts, tg)
				if !names[tg] {
					wantUnknown = append(wantUnknown, fmt.Sprintf("%d:%d", i, len(ts)-1))
				}
			}
			if ts != nil {
				flows[i].DependsOn = &dag.DependsOn{Targets: ts}
			}
		}
		var gotDup, gotUnknown []string
		for _, is := range dag.Lint(wf(flows...), dag.Options{}) {
			switch is.Kind {
			case dag.IssueDuplicateFlow:
				gotDup = append(gotDup, fmt.Sprintf("%d", is.Flow))
			case dag.IssueUnknownTarget:
				gotUnknown = append(gotUnknown, fmt.Sprintf("%d:%d", is.Flow, is.Target))
			case dag.IssueCycle:
				// A later duplicate's edges are ignored, but the first
				// definition may target a name defined later by a duplicate.
			default:
				t.Fatalf("unexpected issue %v", is)
			}
		}
		if !slices.Equal(wantDup, gotDup) || !slices.Equal(wantUnknown, gotUnknown) {
			t.Fatalf("dup %v/%v unknown %v/%v", wantDup, gotDup, wantUnknown, gotUnknown)
		}
	})
}
